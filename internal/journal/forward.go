// The forward half of Apply and Resume: lock guard, backups, applying actions, verification.

package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// stores are the stores a journal's actions change: the checkpoint, and the file sink output
// directory for actions with Store "sink".
type stores struct {
	cp, sink storage.Store
	// dirs are the local directories checkAction confirmed (nil: check every path in full).
	dirs *confinedDirs
}

func (st stores) of(a Action) storage.Store {
	if a.Store == StoreSink {
		return st.sink
	}
	return st.cp
}

// guard runs the liveness check and takes the lock for resume and undo. The files the repair itself
// created do not count as signs of life. It returns the lock it took over (the same repair's,
// left by a run that stopped half-way and is gone), nil when there was none. A lock of the same
// repair whose holder still runs (a resume and an undo of one journal at once) is refused.
func guard(ctx context.Context, s storage.Store, j *Record, opts *Options, op string) (*Lock, error) {
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	ignore := map[string]bool{}
	for _, a := range j.Actions {
		if a.Store == "" {
			ignore[a.Path] = true
		}
	}
	now := opts.now()
	if err := CheckLive(ctx, s, cp, now, opts.ActiveWindow, ignore); err != nil {
		if !opts.Force {
			return nil, err
		}
		j.Warnings = append(j.Warnings, "--force: "+firstLine(err.Error()))
	}
	j.lock = lockFor(j, op, now)
	warn, prev, err := acquireLock(ctx, s, j.lock, lockPolicy{force: opts.Force, takeover: true, journalAt: journalFinder(s, opts.BackupRoot)})
	if err != nil {
		return nil, err
	}
	if warn != "" {
		j.Warnings = append(j.Warnings, warn)
		opts.progress("%s", warn)
	}
	return prev, nil
}

func lockFor(j *Record, op string, now time.Time) Lock {
	return Lock{ID: j.ID, Journal: j.Location, Op: op, Host: hostname(), PID: os.Getpid(), Acquired: now.UTC(), Tool: j.Tool, Owner: newOwner()}
}

// checkAction confines both files an action names.
func checkAction(st stores, a Action) error {
	s := st.of(a)
	if a.Store != "" {
		if a.Store != StoreSink || s == nil {
			return fmt.Errorf("%w: %q is in the store %q, which this run does not have", ErrOutside, a.Path, a.Store)
		}
		if a.Op != OpDelete && a.Op != OpWrite {
			return fmt.Errorf("%w: %q: a file sink's log is only written or moved into the backup", ErrOutside, a.Path)
		}
		return confineSinkLog(s, a.Path, st.dirs)
	}
	if isStagedCopy(a) {
		return confineStaged(s, a, st.dirs) // a new state file placed from its staged copy
	}
	if (a.Op == OpDelete || a.Op == OpWrite) && IsStateFile(a.Path) {
		// `ckpt rewind` moves state versions into the backup; `ckpt state repartition` creates
		// new ones (a write never replaces a file: fill and the store refuse an existing one).
		return confineState(s, a.Path, st.dirs)
	}
	if a.Op == OpWrite && IsSSTFile(a.Path) {
		return confineSST(s, a.Path, st.dirs) // a RocksDB version's new SST file (repartition)
	}
	if a.Op == OpDelete && IsSinkLogFile(a.Path) {
		return confineSinkLog(s, a.Path, st.dirs) // the sink half of a purge, in the sink's own journal
	}
	if (a.Op == OpWrite || a.Op == OpReplace) && IsSinkLogFile(a.Path) && strings.HasSuffix(a.Path, ".compact") {
		return confineSinkLog(s, a.Path, st.dirs) // `ckpt sink repair` writes a rebuilt compaction file
	}
	if a.Op == OpWrite && IsSinkLogFile(a.Path) && !strings.HasSuffix(a.Path, ".crc") {
		return confineSinkLog(s, a.Path, st.dirs) // a journal of the sink alone
	}
	if err := confine(s, a.Path, st.dirs); err != nil {
		return err
	}
	switch a.Op {
	case OpDelete:
	case OpCopy:
		if err := confine(s, a.From, st.dirs); err != nil {
			return err
		}
	case OpWrite:
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

// todo is one action left to apply.
type todo struct {
	i    int
	data []byte // bytes to back up (deletes, replaces) or to write (copies, writes)
	mid  bool   // a replace stopped between its delete and its write: the backup exists
}

// forward is the forward half of Apply and Resume: back up, change, verify. Each step is decided
// from the file hashes, so it continues where any earlier run stopped. pre is the work Apply
// already read under the lock (nil: read it now).
func forward(ctx context.Context, st stores, loc Location, j *Record, opts *Options, op string, pre []todo) (err error) {
	s := st.cp
	var mm *MismatchError
	defer func() {
		if err != nil && !errors.As(err, &mm) {
			err = stopped(ctx, st, loc, j, opts, op, err)
		}
	}()

	work := pre
	if work == nil {
		if work, err = pending(ctx, st, j); err != nil {
			return err
		}
	}

	// Backups first, all of them, so that no change happens before every original is safe. A
	// delete on a local file system needs none: the file is renamed into the backup, which is
	// the change and its backup at once (moveInto), so it is never without a copy either.
	mv := newMover(st, loc)
	var copies []todo
	moved := map[int]bool{} // deletes whose backup is the rename itself (moveInto)
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
		if ja.Op == OpDelete && mv.can(ja.Action) {
			moved[w.i] = true
			continue
		}
		copies = append(copies, w)
	}
	if err := backUp(ctx, loc, j, copies, opts); err != nil {
		return err
	}
	if j.State == StatePlanned {
		j.State = StateBackedUp
		// Nothing copied (every original moves by rename): the next snapshot says it.
		if len(copies) > 0 {
			if err := j.write(ctx, loc, opts.now()); err != nil {
				return err
			}
		}
		if n := len(copies); n > 0 {
			opts.progress("backed up %s to %s", plural(n, "file"), loc.URI())
		}
	}
	opts.hook("backed-up")

	ph := newPhase(ctx, "applying", len(work))
	defer ph.end()
	chunk := chunkOf(len(work), mv.local, unordered(j))
	// A purge on an object store changes several files at once (each is a round trip); every
	// other plan changes them one at a time, in the order that keeps each intermediate state
	// restartable. Either way a chunk is recorded as under way before any of its changes.
	workers := 1
	if unordered(j) && len(mv.roots) == 0 {
		workers = workersOf(st)
	}
	var mu sync.Mutex // the callbacks, from the workers
	change := func(w todo) error {
		// A local rename is no store call that would notice a signal: without this check a
		// purge of 600,000 files went on for seconds after SIGTERM.
		if err := ctx.Err(); err != nil {
			return err
		}
		ja := &j.Actions[w.i]
		as := st.of(ja.Action)
		var err error
		switch ja.Op {
		case OpDelete:
			// Decided before the backups: a file without a copy in the backup is always moved
			// (moveInto copies first when a rename turns out to cross devices).
			if moved[w.i] {
				err = mv.moveInto(ctx, ja)
			} else {
				err = del(ctx, as, ja.Path)
			}
		case OpCopy, OpWrite:
			if isStagedCopy(ja.Action) {
				err = placeStaged(ctx, as, ja.Action)
			} else {
				err = put(ctx, as, ja.Path, w.data)
			}
		case OpReplace:
			if !w.mid {
				err = del(ctx, as, ja.Path)
			}
			if err == nil {
				err = put(ctx, as, ja.Path, ja.Data)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", ja.Op, ja.Path, err)
		}
		ja.State = ActionDone
		if ja.Op == OpCopy {
			ja.Written = writtenTime(ctx, as, ja.Path)
		}
		mu.Lock()
		defer mu.Unlock()
		opts.progress("%s %s", ja.Op, ja.Path)
		opts.hook("changed")
		ph.add(1)
		return nil
	}
	for k := 0; k < len(work); k += chunk {
		part := work[k:min(k+chunk, len(work))]
		// The journal records each change as under way before it happens. A plan of thousands of
		// deletions (ckpt purge) records them a chunk at a time. Resume and undo decide from the
		// files' hashes, not from these states, so a chunk marked applying is as safe as one
		// action.
		for _, w2 := range part {
			j.Actions[w2.i].State = ActionApplying
		}
		j.State = StateApplying
		if err := j.write(ctx, loc, opts.now()); err != nil {
			return err
		}
		opts.hook("applying")
		if err := forEach(ctx, len(part), workers, func(i int) error { return change(part[i]) }); err != nil {
			return err
		}
	}
	// One sync per directory for every rename, before the journal says applied.
	if err := mv.sync(); err != nil {
		return err
	}
	ph.end()
	if j.State != StateApplied && j.State != StateDone {
		j.State = StateApplied
		if err := j.write(ctx, loc, opts.now()); err != nil {
			return err
		}
	}
	opts.hook("applied")

	vph := newPhase(ctx, "verifying", 0)
	res, err := verify(ctx, s, j.Options.planner())
	vph.end()
	if err != nil {
		return fmt.Errorf("verify the repaired checkpoint: %w", err)
	}
	j.Verified = res
	problem := ""
	if predicts(j) {
		problem = mismatch(j.Predicted, res)
	}
	if problem == "" {
		if problem, err = verifySink(ctx, st, j); err != nil {
			return fmt.Errorf("verify the file sink's log: %w", err)
		}
	}
	if problem != "" {
		// Not what was predicted: never a success. Roll the change back while this run still
		// holds the lock, so nothing else sees the checkpoint in between.
		j.Warnings = append(j.Warnings, problem)
		if err := j.write(ctx, loc, opts.now()); err != nil {
			return err
		}
		uerr := undoLocked(ctx, st, loc, j, opts, nil)
		return &MismatchError{Journal: loc.URI(), Problem: problem, RolledBack: uerr == nil, Err: uerr}
	}
	j.State = StateDone
	j.Error = ""
	if err := j.write(ctx, loc, opts.now()); err != nil {
		return err
	}
	opts.hook("verified")
	dropStaged(ctx, st, j)
	unlock(ctx, s, j)
	return nil
}

// pending reads every action's file and returns what is left to do; a file that is neither as
// before nor as after the action stops it with ErrChanged before anything changes.
func pending(ctx context.Context, st stores, j *Record) ([]todo, error) {
	var work []todo
	var conflicts []string
	ph := newPhase(ctx, "checking the files", len(j.Actions))
	defer ph.end()
	reads, err := readAll(ctx, st, j.Actions, ph)
	if err != nil {
		return nil, err
	}
	for i := range j.Actions {
		a := j.Actions[i].Action
		as := st.of(a)
		data, d := reads[i].data, reads[i].digest
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
		if isStagedCopy(a) {
			// Placed as a stream: only the staged file's digest is checked here.
			sd, err := streamDigest(ctx, as, a.From)
			if err != nil {
				return nil, err
			}
			if sd != a.After {
				conflicts = append(conflicts, fmt.Sprintf("%s (the staged file) is %s, expected %s", a.From, sd.Short(), a.After.Short()))
				continue
			}
		} else if a.Op == OpCopy {
			src, sd, err := readDigest(ctx, as, a.From)
			if err != nil {
				return nil, err
			}
			if sd != a.After {
				conflicts = append(conflicts, fmt.Sprintf("%s (the source of the copy) is %s, expected %s", a.From, sd.Short(), a.After.Short()))
				continue
			}
			data = src
		}
		if a.Op == OpWrite {
			if DigestOf(a.Data) != a.After {
				return nil, fmt.Errorf("journal: the bytes to write to %s are %s, expected %s", a.Path, DigestOf(a.Data).Short(), a.After.Short())
			}
			data = a.Data
		}
		work = append(work, todo{i: i, data: data})
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("%w:\n  %s", ErrChanged, strings.Join(conflicts, "\n  "))
	}
	if work == nil {
		work = []todo{}
	}
	return work, nil
}

// MismatchError is returned when the checkpoint, once changed, does not restart as predicted (or
// its file sink's log does not agree with it). The change was rolled back (RolledBack), or the
// rollback failed and Err says why.
type MismatchError struct {
	Journal    string
	Problem    string
	RolledBack bool
	Err        error
}

func (e *MismatchError) Error() string {
	if e.RolledBack {
		return fmt.Sprintf("not as predicted, so rolled back: %s. Every file is as before (journal %s); plan again", e.Problem, e.Journal)
	}
	return fmt.Sprintf("not as predicted: %s; rolling it back failed: %v", e.Problem, e.Err)
}

// Unwrap returns the rollback's error, if any.
func (e *MismatchError) Unwrap() error { return e.Err }

// unlock releases the lock at the end of a successful run. Failing to is not a failure of the
// run: the checkpoint is as it should be, and the next resume or undo of this journal takes the
// lock over anyway.
func unlock(ctx context.Context, s storage.Store, j *Record) {
	if err := releaseLock(ctx, s, j.lock); err != nil {
		j.Warnings = append(j.Warnings, fmt.Sprintf("the repair is complete but its lock %s could not be removed (%v): remove it by hand, or run resume or undo of this journal, which take it over", LockPath, err))
	}
}

// stopped records why a run stopped and decides what the caller is told. The file hashes, not
// this run's bookkeeping, say whether the checkpoint was changed: if it was, the lock stays (the
// journal is the only explanation of the checkpoint's state) and the error says how to resume or
// undo; if not, the lock goes and the error says nothing changed.
func stopped(ctx context.Context, st stores, loc Location, j *Record, opts *Options, op string, err error) error {
	bg := context.WithoutCancel(ctx)
	j.Error = err.Error()
	_ = j.write(bg, loc, opts.now()) // best effort: the hashes are the truth anyway
	if anyApplied(bg, st, j) {
		return &HalfwayError{Journal: loc.URI(), Op: op, Err: err}
	}
	_ = releaseLock(bg, st.cp, j.lock)
	if op == "undo" {
		return fmt.Errorf("undo: every file the repair touched has its original bytes, but the undo did not finish cleanly (journal %s): %w", loc.URI(), err)
	}
	return fmt.Errorf("%s stopped before changing the checkpoint (nothing changed; journal %s): %w", op, loc.URI(), err)
}

// backUp copies the originals of ws into the backup (or checks the copies an earlier run made),
// several at once on stores where each copy is a round trip.
func backUp(ctx context.Context, loc Location, j *Record, ws []todo, opts *Options) error {
	if len(ws) == 0 {
		return nil
	}
	ph := newPhase(ctx, "backing up", len(ws))
	defer ph.end()
	workers := 1
	if _, local := localRoot(loc.Store); !local {
		workers = backupWorkers
	}
	return forEach(ctx, len(ws), workers, func(k int) error {
		w := ws[k]
		if err := ensureBackup(ctx, loc, j.Actions[w.i], w.data); err != nil {
			return err
		}
		ph.add(1)
		return nil
	})
}

// backupWorkers is how many backups run at once on an object store.
const backupWorkers = 16

// forEach runs f(0..n-1) on up to workers goroutines and returns the first error.
func forEach(ctx context.Context, n, workers int, f func(int) error) error {
	if workers <= 1 || n <= 1 {
		for k := range n {
			if err := f(k); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	for range min(workers, n) {
		go func() {
			for k := range next {
				if err := f(k); err != nil {
					errs <- err
					cancel()
					for range next {
					}
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		defer close(next)
		for k := range n {
			select {
			case next <- k:
			case <-ctx.Done():
				return
			}
		}
	}()
	var first error
	for range min(workers, n) {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = ctx.Err()
		if errors.Is(first, context.Canceled) {
			first = nil
		}
	}
	return first
}

// ensureBackup copies data (the original of ja.Path) to the backup, or checks the copy an earlier
// run made.
func ensureBackup(ctx context.Context, loc Location, ja Entry, data []byte) error {
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

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// anyApplied reports whether some action's file is no longer as it was; errors count as yes, the
// safe answer (it keeps the lock).
func anyApplied(ctx context.Context, st stores, j *Record) bool {
	errApplied := errors.New("applied")
	err := forEach(context.WithoutCancel(ctx), len(j.Actions), workersOf(st), func(i int) error {
		a := j.Actions[i]
		_, d, err := readDigest(context.WithoutCancel(ctx), st.of(a.Action), a.Path)
		if err != nil || d != a.Before {
			return errApplied
		}
		return nil
	})
	return err != nil
}

// workersOf is how many files of st one step reads or changes at once: one on local disk, where
// each is a system call, backupWorkers where one is a round trip to an object store.
func workersOf(st stores) int {
	for _, s := range []storage.Store{st.cp, st.sink} {
		if s == nil {
			continue
		}
		if _, local := localRoot(s); !local {
			return backupWorkers
		}
	}
	return 1
}

// unordered reports whether the order of a journal's changes does not matter: a purge deletes
// batches far below the ones the restart reads, in any order, as Spark's own purge does. Every
// other plan is ordered so that each intermediate state restarts (order), and undone in reverse.
func unordered(j *Record) bool { return j.Strategy == StrategyPurge }

// fileRead is one file's bytes and digest (absent: no file).
type fileRead struct {
	data   []byte
	digest Digest
}

// readAll reads the file of every action, workersOf(st) at a time, counting each on ph.
func readAll(ctx context.Context, st stores, as []Entry, ph *phase) ([]fileRead, error) {
	out := make([]fileRead, len(as))
	err := forEach(ctx, len(as), workersOf(st), func(i int) error {
		var data []byte
		var d Digest
		var err error
		if isStagedCopy(as[i].Action) {
			// A file the action creates is only ever compared, and a state file can be large.
			d, err = streamDigest(ctx, st.of(as[i].Action), as[i].Path)
		} else {
			data, d, err = readDigest(ctx, st.of(as[i].Action), as[i].Path)
		}
		if err != nil {
			return err
		}
		out[i] = fileRead{data, d}
		ph.add(1)
		return nil
	})
	return out, err
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

// journalChunk is how many changes of a large plan one journal snapshot announces at least.
const journalChunk = 256

// chunkOf is 1 (a snapshot before every change, as small repairs always did) for plans of up to
// journalChunk changes. Larger plans announce at least journalChunk changes, and at most eight
// snapshots in all; renames on a local file system (local), which are made durable together at
// the end, are announced in one snapshot; a purge on an object store (unordered) journalChunk at
// a time, the changes of one chunk running in parallel.
func chunkOf(n int, local, unordered bool) int {
	switch {
	case local:
		if n <= journalChunk {
			return 1
		}
		return n
	case unordered:
		// A purge on an object store: changes run several at a time within a chunk, so even a
		// small one is announced a chunk at a time (a progress snapshot is small).
		return min(n, journalChunk)
	case n <= journalChunk:
		return 1
	}
	return max(journalChunk, (n+7)/8)
}

// restartsAsPredicted reports whether got is the restart pred predicted.
func restartsAsPredicted(pred, got *recovery.Result) bool { return mismatch(pred, got) == "" }
