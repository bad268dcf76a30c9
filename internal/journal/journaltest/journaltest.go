// Package journaltest holds what the tests of the journal engine and of the packages whose plans
// it applies share: snapshots of a store, scenarios, and checks that nothing was lost.
package journaltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Now is the pinned clock; far after any file a test writes, so liveness checks pass unless a
// test sets a file's time on purpose.
var Now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// dir and repairsDir are journal.Dir and journal.RepairsDir, written out: journal's own tests
// import this package, so it cannot import journal.
const (
	dir        = "_ckpt"
	repairsDir = dir + "/repairs"
)

// Snapshot is every file of a store (path → bytes), except ckpt's own _ckpt/ directory, which a
// repair adds on purpose (journal and backups are kept after undo).
func Snapshot(t testing.TB, s storage.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	es, err := s.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		if strings.HasPrefix(e.Path, dir+"/") {
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

// DiffSnapshots describes how two snapshots differ, "" when they are identical.
func DiffSnapshots(want, got map[string]string) string {
	var lines []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			lines = append(lines, "missing "+p)
		case g != w:
			lines = append(lines, fmt.Sprintf("changed %s: %q -> %q", p, clip(w), clip(g)))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, "extra "+p)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// CloneMem copies every file of s (including _ckpt/) into a new Mem.
func CloneMem(t testing.TB, s storage.Store) *storage.Mem {
	t.Helper()
	ctx := context.Background()
	m := storage.NewMem()
	es, err := s.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := s.ReadFile(ctx, e.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.WriteFile(ctx, e.Path, b); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// BuildScenario writes a scenario into s.
func BuildScenario(t testing.TB, name string, s storage.Store) scenario.Scenario {
	t.Helper()
	sc, ok := scenario.Get(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	if err := sc.WriteTo(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return sc
}

// RepairDirs lists the repair directories under _ckpt/repairs.
func RepairDirs(t testing.TB, s storage.Store) []string {
	t.Helper()
	es, err := s.List(context.Background(), repairsDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.IsDir {
			out = append(out, e.Path)
		}
	}
	return out
}

// SameRestart reports whether two planner results are the same restart.
func SameRestart(a, b *recovery.Result) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, _ := json.Marshal(a.Kafka)
	jb, _ := json.Marshal(b.Kafka)
	return a.Outcome == b.Outcome && a.NextBatch == b.NextBatch && equalPtr(a.RerunBatch, b.RerunBatch) &&
		a.Verdict() == b.Verdict() && string(ja) == string(jb)
}

func ReplayNow(t testing.TB, s storage.Store, o recovery.Options) *recovery.Result {
	t.Helper()
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := recovery.Plan(ctx, cp, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NothingLost checks that every file of orig is either in s with its bytes or in a backup.
func NothingLost(t testing.TB, s storage.Store, orig map[string]string) {
	t.Helper()
	ctx := context.Background()
	for p, want := range orig {
		got, err := s.ReadFile(ctx, p)
		if err == nil && bytes.Equal(got, []byte(want)) {
			continue
		}
		found := false
		for _, d := range RepairDirs(t, s) {
			b, err := s.ReadFile(ctx, path.Join(d, "files", p))
			if err == nil && bytes.Equal(b, []byte(want)) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is lost: not in the checkpoint with its bytes, and not in any backup", p)
		}
	}
}

// DeadPID is the pid of a process of this host that has exited: a lock holder that is gone.
func DeadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a process to get a dead pid: %v", err)
	}
	return cmd.ProcessState.Pid()
}

// CopyStore copies every file of from (including _ckpt/) into a new store.
func CopyStore(t *testing.T, from storage.Store, newStore func(t *testing.T) storage.Store) storage.Store {
	t.Helper()
	ctx := context.Background()
	to := newStore(t)
	es, err := from.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := from.ReadFile(ctx, e.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := to.WriteFile(ctx, e.Path, b); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// CountingStore counts the bytes read from it, by ReadFile and through Open.
type CountingStore struct {
	storage.Store
	N atomic.Int64
}

func (c *CountingStore) ReadFile(ctx context.Context, p string) ([]byte, error) {
	b, err := c.Store.ReadFile(ctx, p)
	c.N.Add(int64(len(b)))
	return b, err
}

func (c *CountingStore) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	rc, err := c.Store.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(rc, writerFunc(func(b []byte) { c.N.Add(int64(len(b))) })), rc}, nil
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

// WithMaxFileBytes sets logformat.MaxFileBytes (CKPT_MAX_FILE_BYTES) for one test.
func WithMaxFileBytes(t *testing.T, n int64) {
	old := logformat.MaxFileBytes
	logformat.MaxFileBytes = n
	t.Cleanup(func() { logformat.MaxFileBytes = old })
}

func equalPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
