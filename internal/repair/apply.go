package repair

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// ExecOptions configures Execute, Resume and Undo.
type ExecOptions struct {
	// BackupRoot is the directory under which the repair directory <id>/ (journal and backups) is
	// created. nil: _ckpt/repairs in the checkpoint's own store.
	BackupRoot *Location
	// Now is the clock (journal times, the lock, the liveness window). nil: time.Now.
	Now func() time.Time
	// Tool names the ckpt build in the journal and the lock ("ckpt 1.2.0").
	Tool string
	// ActiveWindow refuses to run when a log file is younger than this; 0 disables the check.
	ActiveWindow time.Duration
	// Force runs despite a live-looking query or another repair's lock, with a warning.
	Force bool
	// Progress, when set, is told each step as it happens (the CLI prints them on stderr).
	Progress func(format string, args ...any)
	// Rand is the source of the random bits of repair ids. nil: crypto/rand; tests that pin the
	// clock pin it too, for byte-stable pages.
	Rand io.Reader
}

func (o *ExecOptions) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *ExecOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// ErrChanged is returned when the checkpoint no longer has the bytes a plan or journal expects:
// something else wrote to it in the meantime, and acting now could destroy that write.
var ErrChanged = errors.New("the checkpoint changed since the plan was made")

// ErrNothingToDo is returned by Execute for a plan without actions.
var ErrNothingToDo = errors.New("the plan changes no file")

// HalfwayError is returned when a repair, resume or undo stopped after changing the checkpoint.
// The journal says what was done; the lock stays until the repair is resumed or undone.
type HalfwayError struct {
	Journal string
	Op      string
	Err     error
}

// Error says what stopped the run and how to resume or undo it.
func (e *HalfwayError) Error() string {
	return fmt.Sprintf("%s stopped half-way: %v\nThe journal %s records every change; nothing is lost. "+
		"Finish it with `ckpt repair resume %s`, or restore the checkpoint byte for byte with `ckpt repair undo %s`",
		e.Op, e.Err, e.Journal, e.Journal, e.Journal)
}

// Unwrap returns the error that stopped the run.
func (e *HalfwayError) Unwrap() error { return e.Err }

// NewID names a repair: the UTC time and a hash of what it changes and of random bits, so that ids
// sort by time, a person can tell them apart, and two runs of the same plan in the same second
// (two processes, or one process twice) never share an id, a journal directory or a lock.
func NewID(now time.Time, checkpointURI string, actions []Action) string {
	return newID(now, checkpointURI, actions, nil)
}

// newID is NewID with the random bits read from r (nil: crypto/rand).
func newID(now time.Time, checkpointURI string, actions []Action, r io.Reader) string {
	h := sha256.New()
	var nonce [16]byte
	if r == nil {
		r = rand.Reader
	}
	_, _ = io.ReadFull(r, nonce[:])
	h.Write(nonce[:])
	h.Write([]byte(checkpointURI))
	for _, a := range actions {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%s", a.Op, a.Path, a.From, a.Before)
		if a.Op == OpWrite {
			fmt.Fprintf(h, "\x00%s", a.After)
		}
	}
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(h.Sum(nil))[:8]
}

// absoluteURI returns the checkpoint location to record in a journal: absolute for local paths,
// so `ckpt repair undo` works from any directory.
func absoluteURI(s storage.Store) string {
	if root, ok := localRoot(s); ok && !strings.Contains(s.URI(), "://") {
		return root
	}
	return s.URI()
}

// Execute applies p to the checkpoint in s: lock, journal, backups, actions, verification. See
// the package documentation for the protocol. On success the returned journal is in StateDone and
// holds the planner's verified result. A failure before the first change leaves the checkpoint
// untouched and the lock released; a failure after it returns a *HalfwayError and keeps the lock.
func Execute(ctx context.Context, s storage.Store, p *Plan, opts ExecOptions) (*Journal, error) {
	if len(p.Actions) == 0 {
		return nil, ErrNothingToDo
	}
	for _, a := range p.Actions {
		if err := checkAction(s, a); err != nil {
			return nil, err
		}
	}
	if err := checkBackupRoot(s, opts.BackupRoot); err != nil {
		return nil, err
	}
	now := opts.now()
	id := newID(now, s.URI(), p.Actions, opts.Rand)
	root := Location{Store: s, Dir: RepairsDir}
	if opts.BackupRoot != nil {
		root = *opts.BackupRoot
	}
	loc := Location{Store: root.Store, Dir: storage.Join(root.Dir, id)}

	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	var warnings []string
	if err := checkIdleOwn(ctx, s, cp, now, opts.ActiveWindow, opts.BackupRoot); err != nil {
		if !opts.Force {
			return nil, err
		}
		warnings = append(warnings, "--force: "+firstLine(err.Error()))
	}
	j := &Journal{
		Version:    JournalVersion,
		ID:         id,
		Tool:       opts.Tool,
		Checkpoint: absoluteURI(s),
		Location:   loc.URI(),
		Strategy:   p.Strategy,
		State:      StatePlanned,
		Created:    now.UTC(),
		Predicted:  p.After,
		Options:    journalOptions(p.Options),
		Warnings:   warnings,
	}
	if m, err := cp.ReadMetadata(ctx); err == nil && m != nil {
		j.QueryID = m.ID
	}
	for _, a := range p.Actions {
		ja := JournalAction{Action: a, State: ActionPending}
		if !a.Before.Absent() {
			ja.Backup = storage.Join("files", a.Path)
		}
		j.Actions = append(j.Actions, ja)
	}

	// A new repair never takes a lock over, not even one with its own id.
	j.lock = lockFor(j, "repair", now)
	warn, _, err := acquireLock(ctx, s, j.lock, opts.Force, false)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		j.Warnings = append(j.Warnings, warn)
	}
	// The plan was computed from a reading of the checkpoint that may be minutes old (the user read
	// it and answered a prompt): every file must still have the bytes the plan saw.
	for _, a := range p.Actions {
		_, d, err := readDigest(ctx, s, a.Path)
		if err == nil && d != a.Before {
			err = fmt.Errorf("%w: %s is now %s, the plan saw %s; plan again", ErrChanged, a.Path, d.Short(), a.Before.Short())
		}
		if err != nil {
			_ = releaseLock(context.WithoutCancel(ctx), s, j.lock)
			return nil, err
		}
	}
	opts.progress("journal: %s", loc.URI())
	if err := j.write(ctx, loc, now); err != nil {
		_ = releaseLock(context.WithoutCancel(ctx), s, j.lock)
		return nil, err
	}
	return j, apply(ctx, s, loc, j, &opts, "repair")
}

// Resume finishes the repair whose journal is at loc: it backs up what is not backed up yet,
// applies the actions not applied yet (the file hashes tell), and verifies. It is safe to run
// again after any failure, including its own.
func Resume(ctx context.Context, s storage.Store, loc Location, opts ExecOptions) (*Journal, error) {
	j, err := openJournal(ctx, s, loc)
	if err != nil {
		return nil, err
	}
	switch j.State {
	case StateUndone, StateUndoing:
		return j, fmt.Errorf("repair %s was undone (or is being undone); plan a new repair with `ckpt repair %s`", j.ID, j.Checkpoint)
	}
	if _, err := guard(ctx, s, j, &opts, "resume"); err != nil {
		return j, err
	}
	return j, apply(ctx, s, loc, j, &opts, "resume")
}

func openJournal(ctx context.Context, s storage.Store, loc Location) (*Journal, error) {
	j, err := ReadJournal(ctx, loc)
	if err != nil {
		return nil, err
	}
	for _, a := range j.Actions {
		if err := checkAction(s, a.Action); err != nil {
			return nil, fmt.Errorf("journal %s: %w", loc.URI(), err)
		}
	}
	if j.QueryID != "" {
		data, err := s.ReadFile(ctx, checkpoint.FileMetadata)
		if err == nil && !strings.Contains(string(data), j.QueryID) {
			return nil, fmt.Errorf("journal %s belongs to query %s, but %s/metadata names another query; refusing to apply it here",
				loc.URI(), j.QueryID, s.URI())
		}
	}
	return j, nil
}

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
		data []byte // bytes to back up (deletes) or to write (copies)
	}
	var work []todo
	var conflicts []string
	for i := range j.Actions {
		a := j.Actions[i].Action
		data, d, err := readDigest(ctx, s, a.Path)
		if err != nil {
			return err
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

	for _, w := range work {
		ja := &j.Actions[w.i]
		ja.State = ActionApplying
		j.State = StateApplying
		if err := j.write(ctx, loc, opts.now()); err != nil {
			return err
		}
		switch ja.Op {
		case OpDelete:
			err = del(ctx, s, ja.Path)
		case OpCopy, OpWrite:
			err = put(ctx, s, ja.Path, w.data)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", ja.Op, ja.Path, err)
		}
		ja.State = ActionDone
		if ja.Op == OpCopy {
			ja.Written = writtenTime(ctx, s, ja.Path)
		}
		opts.progress("%s %s", ja.Op, ja.Path)
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

// Undo restores every file the repair at loc changed to the bytes it had before, newest change
// first. It refuses (ErrChanged) when a file has bytes that neither the repair nor the original
// explain, since something else wrote it afterwards. Like Resume, it decides from the hashes and
// can be run again after any failure.
func Undo(ctx context.Context, s storage.Store, loc Location, opts ExecOptions) (j *Journal, err error) {
	j, err = openJournal(ctx, s, loc)
	if err != nil {
		return nil, err
	}
	prev, err := guard(ctx, s, j, &opts, "undo")
	if err != nil {
		return j, err
	}
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
		err = stopped(ctx, s, loc, j, &opts, "undo", err)
	}()

	type restore struct {
		i    int
		data []byte
	}
	var work []restore
	var conflicts []string
	var lost []LostFile
	for i := len(j.Actions) - 1; i >= 0; i-- {
		a := j.Actions[i]
		_, d, err := readDigest(ctx, s, a.Path)
		if err != nil {
			return j, err
		}
		switch classify(a.Action, d) {
		case fileOriginal:
			j.Actions[i].State = ActionUndone
			continue
		case fileOther:
			conflicts = append(conflicts, fmt.Sprintf("%s is %s, neither the original %s nor the repaired %s", a.Path, d.Short(), a.Before.Short(), a.After.Short()))
			continue
		}
		var data []byte
		if !a.Before.Absent() {
			backup := storage.Join(loc.Dir, a.Backup)
			b, bd, err := readDigest(ctx, loc.Store, backup)
			if err != nil {
				return j, fmt.Errorf("read the backup of %s: %w", a.Path, err)
			}
			if bd != a.Before {
				lost = append(lost, LostFile{Path: a.Path, Digest: a.Before, Backup: storage.Join(loc.URI(), a.Backup), BackupDigest: bd})
				continue
			}
			data = b
		}
		work = append(work, restore{i: i, data: data})
	}
	if len(conflicts) > 0 {
		return j, fmt.Errorf("%w after the repair; undo would destroy that change:\n  %s", ErrChanged, strings.Join(conflicts, "\n  "))
	}
	if len(lost) > 0 {
		return j, &BackupLostError{Repair: j.ID, Lost: lost}
	}
	j.State = StateUndoing
	if err := j.write(ctx, loc, opts.now()); err != nil {
		return j, err
	}
	for _, w := range work {
		a := &j.Actions[w.i]
		changed = true
		var err error
		if a.Before.Absent() {
			err = del(ctx, s, a.Path)
		} else {
			// The repaired file is gone (repair only deletes or creates), so this write cannot
			// clobber anything: the store refuses to replace a file.
			err = put(ctx, s, a.Path, w.data)
		}
		if err != nil {
			return j, fmt.Errorf("restore %s: %w", a.Path, err)
		}
		a.State = ActionUndone
		a.Written = nil
		if !a.Before.Absent() {
			a.Written = writtenTime(ctx, s, a.Path)
		}
		opts.progress("restored %s", a.Path)
	}
	j.State = StateUndone
	j.Error = ""
	if err := j.write(ctx, loc, opts.now()); err != nil {
		return j, err
	}
	unlock(ctx, s, j)
	return j, nil
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

// writtenTime is the modification time the store gives p now (nil when it cannot tell), recorded
// right after ckpt wrote p.
func writtenTime(ctx context.Context, s storage.Store, p string) *time.Time {
	e, err := s.Stat(ctx, p)
	if err != nil || e.ModTime.IsZero() {
		return nil
	}
	t := e.ModTime
	return &t
}

func isExist(err error) bool { return errors.Is(err, os.ErrExist) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
