package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

func seed(t *testing.T, s storage.Store, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := s.WriteFile(context.Background(), p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFaultyFailMutation(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	f := storage.NewFaulty(mem)
	boom := errors.New("disk on fire")
	f.FailMutation(2, boom).FailMutation(4, nil)

	if err := f.WriteFile(ctx, "a", []byte("1")); err != nil { // 1
		t.Fatal(err)
	}
	err := f.WriteFile(ctx, "b", []byte("2")) // 2: fails, nothing written
	if !errors.Is(err, boom) {
		t.Fatalf("2nd mutation = %v, want %v", err, boom)
	}
	var pe *storage.PathError
	if !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "b" || pe.URI != mem.URI() {
		t.Fatalf("2nd mutation error %#v is not a PathError for write b", err)
	}
	if _, err := mem.Stat(ctx, "b"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("failed write reached the store: %v", err)
	}
	if err := f.WriteFile(ctx, "b", []byte("2")); err != nil { // 3
		t.Fatal(err)
	}
	if err := f.Delete(ctx, "a"); !errors.Is(err, storage.ErrInjected) { // 4: Delete counts too
		t.Fatalf("4th mutation = %v, want ErrInjected", err)
	}
	if _, err := mem.Stat(ctx, "a"); err != nil {
		t.Fatalf("failed delete reached the store: %v", err)
	}
	if err := f.Delete(ctx, "a"); err != nil { // 5
		t.Fatal(err)
	}
	if got := f.Mutations(); got != 5 {
		t.Fatalf("Mutations() = %d, want 5", got)
	}
	// Reads are not mutations.
	_, _ = f.ReadFile(ctx, "b")
	if got := f.Mutations(); got != 5 {
		t.Fatalf("Mutations() after a read = %d", got)
	}
}

func TestFaultyFailMutationAfter(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	f := storage.NewFaulty(mem).FailMutationAfter(1, nil)
	err := f.WriteFile(ctx, "offsets/3", []byte("v1"))
	if !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("WriteFile = %v, want ErrInjected", err)
	}
	if b, err := mem.ReadFile(ctx, "offsets/3"); err != nil || string(b) != "v1" {
		t.Fatalf("lost-ack write did not land: %q, %v", b, err)
	}
	// The retry now sees the file.
	if err := f.WriteFile(ctx, "offsets/3", []byte("v1")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("retry = %v, want fs.ErrExist", err)
	}
}

func TestFaultyResetCountsRenumbers(t *testing.T) {
	ctx := context.Background()
	f := storage.NewFaulty(storage.NewMem())
	seed(t, f, "a", "b")
	f.ResetCounts()
	f.FailMutation(1, nil)
	if err := f.WriteFile(ctx, "c", nil); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("first mutation after ResetCounts = %v", err)
	}
	if f.Count(storage.OpWrite) != 1 {
		t.Fatalf("Count(write) = %d, want 1", f.Count(storage.OpWrite))
	}
}

func TestFaultyLatency(t *testing.T) {
	ctx := context.Background()
	f := storage.NewFaulty(storage.NewMem())
	var mu sync.Mutex
	var slept []string
	var total time.Duration
	f.SetSleep(func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		slept = append(slept, d.String())
		total += d
		return nil
	})
	f.SetLatency(storage.OpWrite, 250*time.Millisecond).SetLatency(storage.OpRead, time.Second)
	seed(t, f, "a", "b")
	_, _ = f.ReadFile(ctx, "a")
	_, _ = f.List(ctx, "") // no latency configured: no sleep
	if got := fmt.Sprint(slept); got != "[250ms 250ms 1s]" {
		t.Fatalf("sleeps = %s", got)
	}
	if total != 1500*time.Millisecond {
		t.Fatalf("total %v", total)
	}
	// The default sleep honours cancellation: a canceled ctx returns at once.
	f.SetSleep(nil).SetLatency(storage.OpStat, time.Hour)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Stat(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stat during canceled latency = %v", err)
	}
	// A sleep error fails the op before the inner store runs.
	f.Clear().SetLatency(storage.OpWrite, time.Millisecond).SetSleep(func(context.Context, time.Duration) error {
		return context.DeadlineExceeded
	})
	if err := f.WriteFile(ctx, "c", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteFile = %v", err)
	}
	if _, err := f.Inner().Stat(ctx, "c"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("write happened despite the failed latency")
	}
}

func TestFaultyTruncateList(t *testing.T) {
	ctx := context.Background()
	f := storage.NewFaulty(storage.NewMem())
	seed(t, f, "offsets/0", "offsets/1", "offsets/2", "offsets/sub/x")
	f.TruncateList(2)
	es, err := f.List(ctx, "offsets")
	if err != nil || len(es) != 2 || es[0].Path != "offsets/0" || es[1].Path != "offsets/1" {
		t.Fatalf("truncated List = %+v, %v", es, err)
	}
	es, _ = f.Walk(ctx, "")
	if len(es) != 2 {
		t.Fatalf("truncated Walk = %+v", es)
	}
	f.TruncateList(0)
	if es, _ := f.List(ctx, "offsets"); len(es) != 0 {
		t.Fatalf("TruncateList(0): %+v", es)
	}
	f.TruncateList(-1).SetListFilter(func(op storage.Op, dir string, es []storage.Entry) []storage.Entry {
		var out []storage.Entry
		for _, e := range es {
			if e.Path != "offsets/1" {
				out = append(out, e)
			}
		}
		return out
	})
	if es, _ := f.List(ctx, "offsets"); len(es) != 3 {
		t.Fatalf("filtered List = %+v", es)
	}
	// The file is still there; only listings hide it.
	if _, err := f.ReadFile(ctx, "offsets/1"); err != nil {
		t.Fatal(err)
	}
	f.Clear()
	if es, _ := f.List(ctx, "offsets"); len(es) != 4 {
		t.Fatalf("after Clear: %+v", es)
	}
}

func TestFaultyFailReadsAndHook(t *testing.T) {
	ctx := context.Background()
	f := storage.NewFaulty(storage.NewMem())
	seed(t, f, "commits/0", "commits/1")
	f.FailReads("commits/./1", nil)
	if _, err := f.ReadFile(ctx, "commits/1"); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("ReadFile = %v", err)
	}
	if _, err := f.Open(ctx, "commits/1"); !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("Open = %v", err)
	}
	if _, err := f.ReadFile(ctx, "commits/0"); err != nil {
		t.Fatalf("other path: %v", err)
	}
	if _, err := f.Stat(ctx, "commits/1"); err != nil {
		t.Fatalf("Stat is not a read: %v", err)
	}
	var seen []string
	f.SetHook(func(_ context.Context, op storage.Op, p string) error {
		seen = append(seen, string(op)+" "+p)
		if op == storage.OpDelete {
			return fs.ErrPermission
		}
		return nil
	})
	_, _ = f.List(ctx, "commits")
	if err := f.Delete(ctx, "commits/0"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Delete = %v", err)
	}
	if fmt.Sprint(seen) != "[list commits delete commits/0]" {
		t.Fatalf("hook saw %v", seen)
	}
	want := map[storage.Op]int64{storage.OpWrite: 2, storage.OpRead: 2, storage.OpOpen: 1, storage.OpStat: 1, storage.OpList: 1, storage.OpDelete: 1}
	got := f.Counts()
	for _, op := range storage.Ops {
		if got[op] != want[op] {
			t.Errorf("Count(%s) = %d, want %d", op, got[op], want[op])
		}
	}
}

func TestReadMany(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	var paths []string
	for i := range 50 {
		paths = append(paths, fmt.Sprintf("offsets/%d", i))
	}
	seed(t, mem, paths...)

	// Results come back in order, and no more than parallelism run at once.
	f := storage.NewFaulty(mem)
	var inflight, peak atomic.Int64
	gate := make(chan struct{})
	var open sync.Once
	f.SetHook(func(context.Context, storage.Op, string) error {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 4 {
			open.Do(func() { close(gate) }) // all four slots busy at once
		}
		<-gate
		inflight.Add(-1)
		return nil
	})
	got, err := storage.ReadMany(ctx, f, paths, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if string(b) != paths[i] {
			t.Fatalf("ReadMany[%d] = %q", i, b)
		}
	}
	if peak.Load() != 4 {
		t.Fatalf("peak concurrency %d, want 4", peak.Load())
	}

	// An error stops the batch and names the failing path.
	f = storage.NewFaulty(mem).FailReads("offsets/17", nil)
	_, err = storage.ReadMany(ctx, f, paths, 0)
	var pe *storage.PathError
	if !errors.Is(err, storage.ErrInjected) || !errors.As(err, &pe) || pe.Path != "offsets/17" {
		t.Fatalf("ReadMany with a failing path = %v", err)
	}
	if _, err := storage.ReadMany(ctx, mem, []string{"offsets/1", "missing"}, 2); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadMany with a missing file = %v", err)
	}
	if got, err := storage.ReadMany(ctx, mem, nil, 3); err != nil || len(got) != 0 {
		t.Fatalf("ReadMany(nil) = %v, %v", got, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := storage.ReadMany(cctx, mem, paths, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadMany with a canceled context = %v", err)
	}
}

func TestMemClockAndSetModTime(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	m.SetClock(func() time.Time { return t0 })
	seed(t, m, "offsets/0")
	if e, _ := m.Stat(ctx, "offsets/0"); !e.ModTime.Equal(t0) {
		t.Fatalf("ModTime %v, want %v", e.ModTime, t0)
	}
	t1 := t0.Add(-48 * time.Hour)
	if err := m.SetModTime("offsets/0", t1); err != nil {
		t.Fatal(err)
	}
	if es, _ := m.List(ctx, "offsets"); !es[0].ModTime.Equal(t1) {
		t.Fatalf("List ModTime %v, want %v", es[0].ModTime, t1)
	}
	if err := m.SetModTime("nope", t1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SetModTime(missing) = %v", err)
	}
	// ReadFile returns a copy.
	b, _ := m.ReadFile(ctx, "offsets/0")
	b[0] = 'X'
	if b2, _ := m.ReadFile(ctx, "offsets/0"); b2[0] == 'X' {
		t.Fatal("ReadFile aliases the stored bytes")
	}
}
