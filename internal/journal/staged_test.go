package journal

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// TestStagedCopy: a state file staged under _ckpt/staging is placed by the journal's copy on a
// local disk (a hard link) and on a store without one (a streamed copy), with the bytes its
// digest names; undo deletes it; the journal removes the staged file once done or undone; a
// staged file changed after the plan, a copy from outside the staging directory, or from
// another path than the target's, is refused before anything changes.
func TestStagedCopy(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("state bytes "), 100_000) // past readFile's 64 KiB first buffer
	for _, name := range []string{"local", "mem"} {
		t.Run(name, func(t *testing.T) {
			var s storage.Store = storage.NewMem()
			if name == "local" {
				l, err := storage.NewLocal(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				s = l
			}
			journaltest.BuildScenario(t, "leftovers", s)
			orig := journaltest.Snapshot(t, s)
			target := "state/0/3/7.snapshot"
			staged := StagedPath("run1", target)
			if err := s.WriteFile(ctx, staged, data); err != nil {
				t.Fatal(err)
			}
			a := Action{Op: OpCopy, Path: target, From: staged, After: DigestOf(data), Size: int64(len(data))}
			for _, bad := range []Action{
				{Op: OpCopy, Path: target, From: "offsets/0", After: a.After},
				{Op: OpCopy, Path: target, From: StagedPath("run1", "state/0/2/7.snapshot"), After: a.After},
				{Op: OpCopy, Path: "offsets/99", From: StagedPath("run1", "offsets/99"), After: a.After},
			} {
				if _, err := Apply(ctx, s, &Plan{Actions: []Action{bad}}, execOpts()); err == nil {
					t.Errorf("copy %s to %s applied", bad.From, bad.Path)
				}
			}
			// A plan whose staged file no longer has its digest.
			wrong := a
			wrong.After = DigestOf([]byte("other"))
			if _, err := Apply(ctx, s, &Plan{Actions: []Action{wrong}}, execOpts()); !errors.Is(err, ErrChanged) {
				t.Errorf("a staged file with other bytes: %v, want ErrChanged", err)
			}
			if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
				t.Fatalf("refused plans changed the checkpoint:\n%s", d)
			}
			j, err := Apply(ctx, s, &Plan{Actions: []Action{a}}, execOpts())
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ReadFile(ctx, target)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("placed %d bytes (%v), want %d", len(got), err, len(data))
			}
			if _, err := s.Stat(ctx, staged); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the staged file stays after the journal is done: %v", err)
			}
			loc := Location{Store: s, Dir: RepairsDir + "/" + j.ID}
			if _, err := Undo(ctx, s, loc, execOpts()); err != nil {
				t.Fatal(err)
			}
			if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
				t.Fatalf("after undo:\n%s", d)
			}
		})
	}
}
