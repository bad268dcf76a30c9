package journal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// executed runs the plan of the commits-ahead scenario (it deletes commits/6 and commits/7, both
// backed up) on a Mem whose clock is journaltest.Now and whose files are an hour old.
func executed(t *testing.T) (*storage.Mem, *Record, Location) {
	t.Helper()
	ctx := context.Background()
	m := storage.NewMem()
	m.SetClock(func() time.Time { return journaltest.Now })
	journaltest.BuildScenario(t, "commits-ahead", m)
	for p := range journaltest.Snapshot(t, m) {
		if err := m.SetModTime(p, journaltest.Now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := newPlan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	o := execOpts()
	o.ActiveWindow = DefaultActiveWindow
	j, err := Apply(ctx, m, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return m, j, Location{Store: m, Dir: RepairsDir + "/" + j.ID}
}

// An undo whose backup is gone changes nothing, says in one sentence which original is lost
// without proposing the undo that just failed, and leaves no lock.
func TestUndoBackupGone(t *testing.T) {
	ctx := context.Background()
	m, j, loc := executed(t)
	repaired := journaltest.Snapshot(t, m)
	var gone string
	for _, a := range j.Actions {
		if a.Backup != "" {
			gone = a.Path
			if err := m.Delete(ctx, storage.Join(loc.Dir, a.Backup)); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_, err := Undo(ctx, m, loc, execOpts())
	var lost *BackupLostError
	if !errors.As(err, &lost) || len(lost.Lost) != 1 || lost.Lost[0].Path != gone {
		t.Fatalf("undo = %v, want a BackupLostError for %s", err, gone)
	}
	msg := err.Error()
	for _, want := range []string{"cannot undo repair " + j.ID, "the original bytes of " + gone, "is gone", "lost", "nothing was changed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, "repair undo") || strings.Contains(msg, "byte for byte") {
		t.Errorf("not one sentence, or proposes undo again: %s", msg)
	}
	if l, _ := ReadLock(ctx, m); l != nil {
		t.Errorf("a refused undo left its lock: %+v", l)
	}
	if d := journaltest.DiffSnapshots(repaired, journaltest.Snapshot(t, m)); d != "" {
		t.Errorf("a refused undo changed the checkpoint:\n%s", d)
	}
}

// A refused undo of a repair that stopped half-way gives that repair's lock back: the checkpoint
// is still in a state only its journal explains.
func TestUndoRefusedKeepsHalfwayLock(t *testing.T) {
	ctx := context.Background()
	m, j, loc := executed(t)
	halfway := Lock{ID: j.ID, Journal: loc.URI(), Op: "repair", Host: hostname(), PID: journaltest.DeadPID(t), Owner: "crashed"}
	if _, _, err := acquireLock(ctx, m, halfway, lockPolicy{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range j.Actions {
		if a.Backup != "" {
			if err := m.Delete(ctx, storage.Join(loc.Dir, a.Backup)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var lost *BackupLostError
	if _, err := Undo(ctx, m, loc, execOpts()); !errors.As(err, &lost) {
		t.Fatalf("undo = %v, want a BackupLostError", err)
	}
	if l, _ := ReadLock(ctx, m); l == nil || l.Owner != "crashed" {
		t.Errorf("lock after the refused undo = %+v, want the half-way repair's", l)
	}
}

// Undo restores files with new modification times; the next repair must not take them for a
// running query. A file written afterwards (another time) still counts.
func TestRepairAfterUndoNotAlive(t *testing.T) {
	ctx := context.Background()
	o := execOpts()
	o.ActiveWindow = DefaultActiveWindow
	for _, fresh := range []bool{false, true} {
		m, _, loc := executed(t)
		if _, err := Undo(ctx, m, loc, execOpts()); err != nil {
			t.Fatal(err)
		}
		if e, _ := m.Stat(ctx, "commits/7"); !e.ModTime.Equal(journaltest.Now) {
			t.Fatalf("the restore's time is %v, want %v (the test needs a fresh restore)", e.ModTime, journaltest.Now)
		}
		if fresh {
			// The query wrote commits/7 again since (it is running).
			if err := m.SetModTime("commits/7", journaltest.Now.Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		p, err := newPlan(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Apply(ctx, m, p, o)
		var live *LiveError
		switch {
		case !fresh && err != nil:
			t.Fatalf("repair after undo: %v", err)
		case fresh && (!errors.As(err, &live) || live.Path != "commits/7"):
			t.Fatalf("repair with a fresh commits/7 = %v, want a LiveError naming it", err)
		}
	}
}
