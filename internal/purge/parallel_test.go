package purge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// files is every file of s outside _ckpt/ (path → bytes).
func files(t *testing.T, s storage.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	es, err := s.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		if strings.HasPrefix(e.Path, journal.Dir+"/") {
			continue
		}
		b, err := s.ReadFile(ctx, e.Path)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Path] = string(b)
	}
	return out
}

func diff(want, got map[string]string) string {
	var lines []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			lines = append(lines, "missing "+p)
		} else if g != w {
			lines = append(lines, "changed "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, "extra "+p)
		}
	}
	sort.Strings(lines)
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("… %d more", len(lines)-10))
	}
	return strings.Join(lines, "\n")
}

// copyTo writes every file of from into to.
func copyTo(t *testing.T, from, to storage.Store) {
	t.Helper()
	ctx := context.Background()
	for p, data := range files(t, from) {
		if err := to.WriteFile(ctx, p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}

// concurrency counts the store calls of one kind in flight at once: each waits a little in the
// store's hook, as a round trip to an object store does.
type concurrency struct {
	op        storage.Op
	now, peak atomic.Int64
}

func (c *concurrency) hook(ctx context.Context, op storage.Op, p string) error {
	if op != c.op {
		return nil
	}
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for {
		old := c.peak.Load()
		if n <= old || c.peak.CompareAndSwap(old, n) {
			break
		}
	}
	time.Sleep(200 * time.Microsecond)
	return nil
}

// On an object store a purge deletes several files at once, and its undo restores several at
// once (each is a round trip), with the same journal: undo gives back every byte. Before, both
// went one file at a time (peak 1).
func TestPurgeObjectStoreParallel(t *testing.T) {
	runParallel(t, func(t *testing.T) storage.Store { return storage.NewMem() })
}

// The same against the S3 emulator: conditional PUTs and listings of a real S3 API.
func TestPurgeS3Parallel(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	runParallel(t, func(t *testing.T) storage.Store {
		return storage.NewS3FromClient(client, bucket, storetest.RandomName("p-"))
	})
}

func runParallel(t *testing.T, newStore func(t *testing.T) storage.Store) {
	ctx := context.Background()
	inner := newStore(t)
	copyTo(t, build(t, 170, 170), inner)
	orig := files(t, inner)
	f := storage.NewFaulty(inner)
	p, err := NewPlan(ctx, f, Options{Keep: 100})
	if err != nil || len(p.Actions) < 100 {
		t.Fatalf("plan: %v, %d actions", err, len(p.Actions))
	}
	dels := &concurrency{op: storage.OpDelete}
	f.SetHook(dels.hook)
	j, err := journal.Apply(ctx, f, p.JournalPlan(), journal.Options{Tool: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, inner); len(got) != len(orig)-len(p.Actions) {
		t.Fatalf("after the purge %d files, want %d", len(got), len(orig)-len(p.Actions))
	}
	if dels.peak.Load() < 2 {
		t.Errorf("execute deleted at most %d file at once", dels.peak.Load())
	}
	writes := &concurrency{op: storage.OpWrite}
	f.SetHook(writes.hook)
	if _, err := journal.Undo(ctx, f, journal.Location{Store: f, Dir: journal.RepairsDir + "/" + j.ID}, journal.Options{Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	if writes.peak.Load() < 2 {
		t.Errorf("undo restored at most %d file at once", writes.peak.Load())
	}
	if d := diff(orig, files(t, inner)); d != "" {
		t.Fatalf("undo is not byte for byte:\n%s", d)
	}
}

// A parallel purge that fails at its k-th store mutation (before it lands, or after: a lost
// acknowledgement) loses nothing: undo restores every byte, and resume ends where an unfailed
// purge ends. Workers in flight when one fails finish or stop; the journal announced their chunk
// before any of them ran, and undo and resume decide from the files' hashes.
func TestPurgeParallelFaults(t *testing.T) {
	ctx := context.Background()
	clean := build(t, 400, 400)
	orig := files(t, clean)
	p0, err := NewPlan(ctx, clean, Options{Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k, v := range orig {
		want[k] = v
	}
	for _, a := range p0.Actions {
		delete(want, a.Path)
	}
	halfway := 0
	for _, k := range []int{1, 3, 700, 806, 950, 1063, 1400, 1620} {
		for _, after := range []bool{false, true} {
			for _, then := range []string{"undo", "resume"} {
				t.Run(fmt.Sprintf("k=%d/after=%v/%s", k, after, then), func(t *testing.T) {
					m := storage.NewMem()
					copyTo(t, clean, m)
					f := storage.NewFaulty(m)
					p, err := NewPlan(ctx, f, Options{Keep: 100})
					if err != nil {
						t.Fatal(err)
					}
					if after {
						f.FailMutationAfter(k, nil)
					} else {
						f.FailMutation(k, nil)
					}
					j, err := journal.Apply(ctx, f, p.JournalPlan(), journal.Options{Tool: "test"})
					f.Clear()
					if err == nil {
						if d := diff(want, files(t, m)); d != "" {
							t.Fatalf("a purge that succeeded despite the fault left:\n%s", d)
						}
						return
					}
					if !errors.Is(err, storage.ErrInjected) {
						t.Fatalf("execute: %v", err)
					}
					var he *journal.HalfwayError
					if !errors.As(err, &he) {
						if d := diff(orig, files(t, m)); d != "" {
							t.Fatalf("stopped before changing the checkpoint (%v), but:\n%s", err, d)
						}
						return
					}
					halfway++
					loc := journal.Location{Store: m, Dir: journal.DirOf(strings.TrimPrefix(he.Journal, m.URI()+"/"))}
					if j != nil {
						loc.Dir = journal.RepairsDir + "/" + j.ID
					}
					if then == "undo" {
						if _, err := journal.Undo(ctx, m, loc, journal.Options{Tool: "test"}); err != nil {
							t.Fatal(err)
						}
						if d := diff(orig, files(t, m)); d != "" {
							t.Fatalf("undo after the fault:\n%s", d)
						}
						return
					}
					if _, err := journal.Resume(ctx, m, loc, journal.Options{Tool: "test"}); err != nil {
						t.Fatal(err)
					}
					if d := diff(want, files(t, m)); d != "" {
						t.Fatalf("resume after the fault:\n%s", d)
					}
				})
			}
		}
	}
	if halfway < 8 {
		t.Errorf("only %d runs stopped half-way: the faults missed the changes", halfway)
	}
}
