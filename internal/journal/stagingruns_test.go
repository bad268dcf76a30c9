package journal

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// TestStagingRuns: runs under _ckpt/staging are judged stale only when no process that may be
// alive stages into them and nothing may place them: a run claimed by this process, or by a
// process on another host, stays; a journal stopped half-way keeps every run while it holds
// the lock and, once the lock is gone, its own while it is neither done nor undone; a run whose marker's
// pid is gone, or that has no marker, is stale, and RemoveStagingRun removes it and nothing
// else, after judging again.
func TestStagingRuns(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	journaltest.BuildScenario(t, "leftovers", s)
	orig := journaltest.Snapshot(t, s)
	stage := func(run string) {
		if err := s.WriteFile(ctx, StagedPath(run, "state/0/3/7.snapshot"), []byte("staged "+run)); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(run string, o StageOwner) {
		data, _ := json.Marshal(o)
		if err := s.WriteFile(ctx, stageOwnerPath(run), data); err != nil {
			t.Fatal(err)
		}
	}
	release, err := ClaimStaging(ctx, s, "live", "state repartition", "ckpt test")
	if err != nil {
		t.Fatal(err)
	}
	stage("live")
	stage("other")
	marker("other", StageOwner{Command: "state repartition", Host: "elsewhere.example", PID: 1})
	stage("dead")
	marker("dead", StageOwner{Command: "state repartition", Host: hostname(), PID: 1 << 30}) // above any pid_max
	stage("bare")

	// A journal that places a staged file, stopped right after it was written (the kill
	// matrix's "journaled" point): it holds the lock.
	stage("journaled")
	data := []byte("staged journaled")
	p := &Plan{Actions: []Action{{Op: OpCopy, Path: "state/0/3/7.snapshot", From: StagedPath("journaled", "state/0/3/7.snapshot"), After: DigestOf(data), Size: int64(len(data))}}}
	o := execOpts()
	o.Hook = func(point string) {
		if point == "journaled" {
			panic("killed")
		}
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = Apply(ctx, s, p, o)
	}()

	judge := func() map[string]string {
		runs, err := StagingRuns(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range runs {
			out[r.Run] = r.Keep
			if r.Run != "journaled" && len(r.Files) != 1 {
				t.Errorf("run %s: files %v", r.Run, r.Files)
			}
		}
		return out
	}
	got := judge()
	for run, want := range map[string]string{
		"live":      "may still be staging into it",
		"other":     "on host elsewhere.example, which ckpt cannot check from here",
		"journaled": "the checkpoint is locked by ckpt",
		"dead":      "the checkpoint is locked by ckpt", // while a journal holds the lock, every run stays
		"bare":      "the checkpoint is locked by ckpt",
	} {
		if keep, ok := got[run]; !ok || (want == "" && keep != "") || !strings.Contains(keep, want) {
			t.Errorf("run %s: keep %q, want %q", run, keep, want)
		}
	}
	if _, err := RemoveStagingRun(ctx, s, "live"); err == nil || !strings.Contains(err.Error(), "stays") {
		t.Errorf("removing a live run: %v", err)
	}
	// The lock gone (--force elsewhere): the journal, planned and not done, still keeps it.
	if err := s.Delete(ctx, LockPath); err != nil {
		t.Fatal(err)
	}
	got = judge()
	if keep := got["journaled"]; !strings.Contains(keep, "places these files and is not done or undone") {
		t.Errorf("a journal not done, without its lock: keep %q", keep)
	}
	if got["dead"] != "" || got["bare"] != "" || got["live"] == "" {
		t.Errorf("without the lock: %q", got)
	}
	for _, run := range []string{"dead", "bare"} {
		if _, err := RemoveStagingRun(ctx, s, run); err != nil {
			t.Fatalf("remove %s: %v", run, err)
		}
		if _, err := s.Stat(ctx, StagedPath(run, "state/0/3/7.snapshot")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("run %s: its file stays", run)
		}
	}
	if _, err := s.Stat(ctx, stageOwnerPath("dead")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead run's marker stays")
	}
	// The process ends its run: its marker goes, and the run (files left) is stale.
	release()
	if keep := judge()["live"]; keep != "" {
		t.Errorf("a released run: keep %q", keep)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); strings.Contains(d, "state/") || strings.Contains(d, "offsets/") || strings.Contains(d, "commits/") {
		t.Errorf("the checkpoint changed:\n%s", d)
	}
}
