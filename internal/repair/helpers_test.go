package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// testNow is the pinned clock; far after any file a test writes, so liveness checks pass unless a
// test sets a file's time on purpose.
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func execOpts() ExecOptions {
	return ExecOptions{Now: func() time.Time { return testNow }, Tool: "ckpt test"}
}

// snapshot is every file of a store (path → bytes), except ckpt's own _ckpt/ directory, which a
// repair adds on purpose (journal and backups are kept after undo).
func snapshot(t testing.TB, s storage.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	es, err := s.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		if strings.HasPrefix(e.Path, Dir+"/") {
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

// diffSnapshots describes how two snapshots differ, "" when they are identical.
func diffSnapshots(want, got map[string]string) string {
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

// cloneMem copies every file of s (including _ckpt/) into a new Mem.
func cloneMem(t testing.TB, s storage.Store) *storage.Mem {
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

// build writes a scenario into s.
func buildScenario(t testing.TB, name string, s storage.Store) scenario.Scenario {
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

// repairDirs lists the repair directories under _ckpt/repairs.
func repairDirs(t testing.TB, s storage.Store) []string {
	t.Helper()
	es, err := s.List(context.Background(), RepairsDir)
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

// plannerJSON is the planner's verdict in a form two runs can be compared by.
func sameRestart(a, b *recovery.Result) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, _ := json.Marshal(a.Kafka)
	jb, _ := json.Marshal(b.Kafka)
	return a.Outcome == b.Outcome && a.NextBatch == b.NextBatch && equalPtr(a.RerunBatch, b.RerunBatch) &&
		a.Verdict() == b.Verdict() && string(ja) == string(jb)
}

func replayNow(t testing.TB, s storage.Store, o recovery.Options) *recovery.Result {
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

// nothingLost checks that every file of orig is either in s with its bytes or in a backup.
func nothingLost(t testing.TB, s storage.Store, orig map[string]string) {
	t.Helper()
	ctx := context.Background()
	for p, want := range orig {
		got, err := s.ReadFile(ctx, p)
		if err == nil && bytes.Equal(got, []byte(want)) {
			continue
		}
		found := false
		for _, d := range repairDirs(t, s) {
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

// deadPID is the pid of a process of this host that has exited: a lock holder that is gone.
func deadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a process to get a dead pid: %v", err)
	}
	return cmd.ProcessState.Pid()
}
