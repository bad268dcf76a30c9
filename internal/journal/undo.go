// Undo of a repair, and the error when a backup it needs is lost.

package journal

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Undo restores every file the repair at loc changed to the bytes it had before, newest change
// first. It refuses (ErrChanged) when a file has bytes that neither the repair nor the original
// explain, since something else wrote it afterwards. Like Resume, it decides from the hashes and
// can be run again after any failure.
func Undo(ctx context.Context, s storage.Store, loc Location, opts Options) (j *Record, err error) {
	j, err = openJournal(ctx, s, loc, opts.Sink)
	if err != nil {
		return nil, err
	}
	prev, err := guard(ctx, s, j, &opts, "undo")
	if err != nil {
		return j, err
	}
	defer running.Delete(j.lock.Owner)
	return j, undoLocked(ctx, stores{cp: s, sink: opts.Sink}, loc, j, &opts, prev)
}

// undoLocked is Undo once the lock is held: by the undo itself, or by a run that rolls back what
// it applied because the result was not as predicted. prev is the lock to put back when it
// refuses before touching anything.
func undoLocked(ctx context.Context, st stores, loc Location, j *Record, opts *Options, prev *Lock) (err error) {
	s := st.cp
	changed := false // whether this undo has started restoring files
	defer func() {
		if err == nil {
			return
		}
		if !changed {
			// Refused before touching the checkpoint: the lock goes back to what it was (none,
			// or the lock of the repair that stopped half-way), and the error stands as is.
			restoreLock(context.WithoutCancel(ctx), s, j.lock, prev)
			return
		}
		err = stopped(ctx, st, loc, j, opts, "undo", err)
	}()

	type restore struct {
		i    int
		data []byte
	}
	var work []restore
	var conflicts []string
	var lost []LostFile
	ph := newPhase(ctx, "checking the files and backups", len(j.Actions))
	// Every file and every backup it may need, read workersOf(st) at a time (one on local disk).
	cur, err := readAll(ctx, st, j.Actions, nil)
	if err != nil {
		return err
	}
	backups := make([]fileRead, len(j.Actions))
	err = forEach(ctx, len(j.Actions), workersOf(st), func(i int) error {
		defer ph.add(1)
		a := j.Actions[i]
		if a.Before.Absent() || undoState(a.Action, cur[i].digest) != fileApplied {
			return nil
		}
		b, bd, err := readDigest(ctx, loc.Store, storage.Join(loc.Dir, a.Backup))
		if err != nil {
			return fmt.Errorf("read the backup of %s: %w", a.Path, err)
		}
		backups[i] = fileRead{b, bd}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(j.Actions) - 1; i >= 0; i-- {
		a := j.Actions[i]
		d := cur[i].digest
		state := undoState(a.Action, d)
		switch state {
		case fileOriginal:
			j.Actions[i].State = ActionUndone
			continue
		case fileOther:
			conflicts = append(conflicts, fmt.Sprintf("%s is %s, neither the original %s nor the repaired %s", a.Path, d.Short(), a.Before.Short(), a.After.Short()))
			continue
		}
		var data []byte
		if !a.Before.Absent() {
			b, bd := backups[i].data, backups[i].digest
			if bd != a.Before {
				lost = append(lost, LostFile{Path: a.Path, Digest: a.Before, Backup: storage.Join(loc.URI(), a.Backup), BackupDigest: bd})
				continue
			}
			data = b
		}
		work = append(work, restore{i: i, data: data})
	}
	ph.end()
	if len(conflicts) > 0 {
		return fmt.Errorf("%w after the repair; undo would destroy that change:\n  %s", ErrChanged, strings.Join(conflicts, "\n  "))
	}
	if len(lost) > 0 {
		return &BackupLostError{Repair: j.ID, Lost: lost}
	}
	j.State = StateUndoing
	if err := j.write(ctx, loc, opts.now()); err != nil {
		return err
	}
	opts.hook("undoing")
	mv := newMover(st, loc)
	ph = newPhase(ctx, "restoring", len(work))
	defer ph.end()
	// A purge on an object store is restored several files at once; everything else newest
	// change first, one at a time.
	workers := 1
	if unordered(j) && len(mv.roots) == 0 {
		workers = workersOf(st)
	}
	changed = len(work) > 0
	var mu sync.Mutex // the callbacks, from the workers
	err = forEach(ctx, len(work), workers, func(k int) error {
		w := work[k]
		a := &j.Actions[w.i]
		as := st.of(a.Action)
		var err error
		linked := false
		switch {
		case a.Before.Absent():
			err = del(ctx, as, a.Path)
		case a.Op == OpReplace:
			// The replacement goes first; the store then takes the original back.
			if err = del(ctx, as, a.Path); err == nil {
				err = put(ctx, as, a.Path, w.data)
			}
		case mv.can(a.Action):
			// A hard link from the backup: no copy of the bytes, the backup stays, and the
			// link never replaces a file.
			linked, err = mv.linkBack(ctx, a, w.data)
		default:
			// The repaired file is gone (repair only deletes or creates), so this write cannot
			// clobber anything: the store refuses to replace a file.
			err = put(ctx, as, a.Path, w.data)
		}
		if err != nil {
			return fmt.Errorf("restore %s: %w", a.Path, err)
		}
		a.State = ActionUndone
		a.Written = nil
		if !a.Before.Absent() && !linked {
			// A linked file is the original's inode, with the original's modification time:
			// nothing ckpt wrote, so nothing for a liveness check to excuse.
			a.Written = writtenTime(ctx, as, a.Path)
		}
		mu.Lock()
		defer mu.Unlock()
		opts.progress("restored %s", a.Path)
		opts.hook("restored")
		ph.add(1)
		return nil
	})
	if err != nil {
		return err
	}
	if err := mv.sync(); err != nil {
		return err
	}
	j.State = StateUndone
	j.Error = ""
	if err := j.write(ctx, loc, opts.now()); err != nil {
		return err
	}
	dropStaged(ctx, st, j)
	unlock(ctx, s, j)
	return nil
}

// undoState is classify for undo: a replace stopped between its delete and its write is applied.
func undoState(a Action, d Digest) fileState {
	if a.Op == OpReplace && d.Absent() {
		return fileApplied
	}
	return classify(a, d)
}

// LostFile is an original that undo cannot restore: its backup is gone or holds other bytes.
type LostFile struct {
	// Path is the checkpoint file and Digest the original bytes' hash.
	Path   string
	Digest Digest
	// Backup is where the backup should be, and BackupDigest what it holds (absent: gone).
	Backup       string
	BackupDigest Digest
}

// BackupLostError is returned by Undo when a backup it needs is gone or damaged. Undo then
// changes nothing (a partial undo would leave a checkpoint that neither the repair nor the
// original explains) and releases its lock.
type BackupLostError struct {
	Repair string
	Lost   []LostFile
}

// Error says, in one sentence, which originals are lost and why, and that nothing changed.
func (e *BackupLostError) Error() string {
	parts := make([]string, len(e.Lost))
	for i, l := range e.Lost {
		why := "is gone"
		if !l.BackupDigest.Absent() {
			why = "holds other bytes (" + l.BackupDigest.Short() + ")"
		}
		parts[i] = fmt.Sprintf("%s (%s; its backup %s %s)", l.Path, l.Digest.Short(), l.Backup, why)
	}
	return fmt.Sprintf("cannot undo repair %s: the original bytes of %s are lost, so nothing was changed and the checkpoint stays as the repair left it",
		e.Repair, joinAnd(parts))
}

func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
