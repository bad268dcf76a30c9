// The forward half of Execute and Resume: lock guard, backups, applying actions, verification.

package repair

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// guard runs the liveness check and takes the lock for resume and undo. The files the repair itself
// created do not count as signs of life. It returns the lock it took over (the same repair's,
// left by a run that stopped half-way), nil when there was none.
func guard(ctx context.Context, s storage.Store, j *Journal, opts *ExecOptions, op string) (*Lock, error) {
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	ignore := map[string]bool{}
	for _, a := range j.Actions {
		ignore[a.Path] = true
	}
	now := opts.now()
	if err := CheckLive(ctx, s, cp, now, opts.ActiveWindow, ignore); err != nil {
		if !opts.Force {
			return nil, err
		}
		j.Warnings = append(j.Warnings, "--force: "+firstLine(err.Error()))
	}
	j.lock = lockFor(j, op, now)
	warn, prev, err := acquireLock(ctx, s, j.lock, opts.Force, true)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		j.Warnings = append(j.Warnings, warn)
	}
	return prev, nil
}

func lockFor(j *Journal, op string, now time.Time) Lock {
	return Lock{ID: j.ID, Journal: j.Location, Op: op, Host: hostname(), PID: os.Getpid(), Acquired: now.UTC(), Tool: j.Tool, Owner: newOwner()}
}

// checkAction confines both files an action names.
func checkAction(s storage.Store, a Action) error {
	if a.Op == OpDelete && IsStateFile(a.Path) {
		return confineState(s, a.Path) // `ckpt rewind` moves state versions into the backup
	}
	if a.Op == OpDelete && IsSinkLogFile(a.Path) {
		return confineSinkLog(s, a.Path) // `ckpt rewind --sink`, in the sink's own journal
	}
	if (a.Op == OpWrite || a.Op == OpReplace) && IsSinkLogFile(a.Path) && strings.HasSuffix(a.Path, ".compact") {
		return confineSinkLog(s, a.Path) // `ckpt sink repair` writes a rebuilt compaction file
	}
	if a.Op == OpWrite && IsSinkLogFile(a.Path) && !strings.HasSuffix(a.Path, ".crc") {
		return confineSinkLog(s, a.Path) // `ckpt offsets reset --sink` writes the skipped batch's entry
	}
	if err := Confine(s, a.Path); err != nil {
		return err
	}
	switch a.Op {
	case OpDelete:
	case OpCopy:
		if err := Confine(s, a.From); err != nil {
			return err
		}
	case OpWrite:
		if IsStateFile(a.Path) {
			return fmt.Errorf("%w: %q: state files are only ever moved into the backup, never written", ErrOutside, a.Path)
		}
	default:
		return fmt.Errorf("unknown repair action %q on %s", a.Op, a.Path)
	}
	return nil
}

// fileState is what an action's path holds now, relative to the action.
type fileState int

const (
	fileOriginal fileState = iota // as before the action
	fileApplied                   // as after the action
	fileOther                     // neither: someone else changed it
)

func classify(a Action, d Digest) fileState {
	switch d {
	case a.Before:
		return fileOriginal
	case a.After:
		return fileApplied
	}
	return fileOther
}

// apply is the forward half of Execute and Resume: back up, change, verify. Each step is decided
// from the file hashes, so it continues where any earlier run stopped.
func apply(ctx context.Context, s storage.Store, loc Location, j *Journal, opts *ExecOptions, op string) (err error) {
	defer func() {
		if err != nil {
			err = stopped(ctx, s, loc, j, opts, op, err)
		}
	}()

	type todo struct {
		i    int
		data []byte // bytes to back up (deletes, replaces) or to write (copies, writes)
		mid  bool   // a replace stopped between its delete and its write: the backup exists
	}
	var work []todo
	var conflicts []string
	for i := range j.Actions {
		a := j.Actions[i].Action
		data, d, err := readDigest(ctx, s, a.Path)
		if err != nil {
			return err
		}
		if a.Op == OpReplace && d.Absent() {
			work = append(work, todo{i: i, mid: true})
			continue
		}
		switch classify(a, d) {
		case fileApplied:
			j.Actions[i].State = ActionDone
			continue
		case fileOther:
			conflicts = append(conflicts, fmt.Sprintf("%s is %s, expected %s (before) or %s (after)", a.Path, d.Short(), a.Before.Short(), a.After.Short()))
			continue
		}
		if a.Op == OpCopy {
			src, sd, err := readDigest(ctx, s, a.From)
			if err != nil {
				return err
			}
			if sd != a.After {
				conflicts = append(conflicts, fmt.Sprintf("%s (the source of the copy) is %s, expected %s", a.From, sd.Short(), a.After.Short()))
				continue
			}
			data = src
		}
		if a.Op == OpWrite {
			if DigestOf(a.Data) != a.After {
				return fmt.Errorf("journal: the bytes to write to %s are %s, expected %s", a.Path, DigestOf(a.Data).Short(), a.After.Short())
			}
			data = a.Data
		}
		work = append(work, todo{i: i, data: data})
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrChanged, strings.Join(conflicts, "\n  "))
	}

	// Backups first, all of them, so that no change happens before every original is safe.
	for _, w := range work {
		ja := j.Actions[w.i]
		if ja.Before.Absent() {
			continue
		}
		if w.mid {
			if _, d, err := readDigest(ctx, loc.Store, storage.Join(loc.Dir, ja.Backup)); err != nil || d != ja.Before {
				return fmt.Errorf("%s is gone half-way through its replacement and its backup %s/%s is not the original (%v); refusing to continue", ja.Path, loc.URI(), ja.Backup, err)
			}
			continue
		}
		if err := ensureBackup(ctx, loc, ja, w.data); err != nil {
			return err
		}
	}
	if j.State == StatePlanned {
		j.State = StateBackedUp
		if err := j.write(ctx, loc, opts.now()); err != nil {
			return err
		}
		if n := countBackups(j); n > 0 {
			what := "1 file"
			if n > 1 {
				what = fmt.Sprintf("%d files", n)
			}
			opts.progress("backed up %s to %s", what, loc.URI())
		}
	}

	meter := progress.From(ctx)
	meter.Stage("applying")
	meter.Expect(progress.Done, len(work))
	for k, w := range work {
		ja := &j.Actions[w.i]
		// The journal records each change as under way before it happens. A plan of thousands of
		// deletions (ckpt purge) records them journalChunk at a time: a snapshot per file would
		// write the whole journal once per file. Resume and undo decide from the files' hashes,
		// not from these states, so a chunk marked applying is as safe as one action.
		if k%chunkOf(len(work)) == 0 {
			for _, w2 := range work[k:min(k+chunkOf(len(work)), len(work))] {
				j.Actions[w2.i].State = ActionApplying
			}
			j.State = StateApplying
			if err := j.write(ctx, loc, opts.now()); err != nil {
				return err
			}
		}
		switch ja.Op {
		case OpDelete:
			err = del(ctx, s, ja.Path)
		case OpCopy, OpWrite:
			err = put(ctx, s, ja.Path, w.data)
		case OpReplace:
			if !w.mid {
				err = del(ctx, s, ja.Path)
			}
			if err == nil {
				err = put(ctx, s, ja.Path, ja.Data)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", ja.Op, ja.Path, err)
		}
		ja.State = ActionDone
		if ja.Op == OpCopy {
			ja.Written = writtenTime(ctx, s, ja.Path)
		}
		opts.progress("%s %s", ja.Op, ja.Path)
		meter.Add(progress.Done, 1)
	}
	if j.State != StateApplied && j.State != StateDone {
		j.State = StateApplied
		if err := j.write(ctx, loc, opts.now()); err != nil {
			return err
		}
	}

	res, err := verify(ctx, s, j.Options.planner())
	if err != nil {
		return fmt.Errorf("verify the repaired checkpoint: %w", err)
	}
	j.Verified = res
	j.State = StateDone
	j.Error = ""
	if msg := mismatch(j.Predicted, res); msg != "" {
		j.Warnings = append(j.Warnings, msg)
	}
	if err := j.write(ctx, loc, opts.now()); err != nil {
		return err
	}
	unlock(ctx, s, j)
	return nil
}

// unlock releases the lock at the end of a successful run. Failing to is not a failure of the
// run: the checkpoint is as it should be, and the next resume or undo of this journal takes the
// lock over anyway.
func unlock(ctx context.Context, s storage.Store, j *Journal) {
	if err := releaseLock(ctx, s, j.lock); err != nil {
		j.Warnings = append(j.Warnings, fmt.Sprintf("the repair is complete but its lock %s could not be removed (%v): remove it by hand, or run resume or undo of this journal, which take it over", LockPath, err))
	}
}

// stopped records why a run stopped and decides what the caller is told. The file hashes, not
// this run's bookkeeping, say whether the checkpoint was changed: if it was, the lock stays (the
// journal is the only explanation of the checkpoint's state) and the error says how to resume or
// undo; if not, the lock goes and the error says nothing changed.
func stopped(ctx context.Context, s storage.Store, loc Location, j *Journal, opts *ExecOptions, op string, err error) error {
	bg := context.WithoutCancel(ctx)
	j.Error = err.Error()
	_ = j.write(bg, loc, opts.now()) // best effort: the hashes are the truth anyway
	if anyApplied(bg, s, j) {
		return &HalfwayError{Journal: loc.URI(), Op: op, Err: err}
	}
	_ = releaseLock(bg, s, j.lock)
	if op == "undo" {
		return fmt.Errorf("undo: every file the repair touched has its original bytes, but the undo did not finish cleanly (journal %s): %w", loc.URI(), err)
	}
	return fmt.Errorf("%s stopped before changing the checkpoint (nothing changed; journal %s): %w", op, loc.URI(), err)
}

// ensureBackup copies data (the original of ja.Path) to the backup, or checks the copy an earlier
// run made.
func ensureBackup(ctx context.Context, loc Location, ja JournalAction, data []byte) error {
	p := storage.Join(loc.Dir, ja.Backup)
	err := put(ctx, loc.Store, p, data)
	if err == nil {
		return nil
	}
	if !isExist(err) {
		return fmt.Errorf("back up %s: %w", ja.Path, err)
	}
	_, d, rerr := readDigest(ctx, loc.Store, p)
	if rerr != nil {
		return fmt.Errorf("check the backup of %s: %w", ja.Path, rerr)
	}
	if d != ja.Before {
		return fmt.Errorf("the backup %s/%s is %s, not the original %s; refusing to continue", loc.URI(), ja.Backup, d.Short(), ja.Before.Short())
	}
	return nil
}

func countBackups(j *Journal) int {
	n := 0
	for _, a := range j.Actions {
		if a.Backup != "" {
			n++
		}
	}
	return n
}

// anyApplied reports whether some action's file is no longer as it was; errors count as yes, the
// safe answer (it keeps the lock).
func anyApplied(ctx context.Context, s storage.Store, j *Journal) bool {
	for _, a := range j.Actions {
		_, d, err := readDigest(context.WithoutCancel(ctx), s, a.Path)
		if err != nil || d != a.Before {
			return true
		}
	}
	return false
}

// verify runs the planner on the checkpoint as it is now: the same code path that predicted the
// plan's outcome on the overlay.
func verify(ctx context.Context, s storage.Store, o recovery.Options) (*recovery.Result, error) {
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	return recovery.Plan(ctx, cp, o)
}

// mismatch describes how the verified restart differs from the prediction, "" when it does not.
func mismatch(pred, got *recovery.Result) string {
	if pred == nil || got == nil {
		return ""
	}
	if pred.Outcome == got.Outcome && pred.NextBatch == got.NextBatch && equalPtr(pred.RerunBatch, got.RerunBatch) {
		return ""
	}
	return fmt.Sprintf("the verified restart differs from the prediction: predicted %q, verified %q (the checkpoint changed during the repair?)",
		pred.Verdict(), got.Verdict())
}

func equalPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// journalChunk is how many changes of a large plan one journal snapshot announces.
const journalChunk = 256

// chunkOf is 1 (a snapshot before every change, as small repairs always did) for plans of up to
// journalChunk changes, else journalChunk.
func chunkOf(n int) int {
	if n <= journalChunk {
		return 1
	}
	return journalChunk
}
