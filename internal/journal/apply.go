package journal

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
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options configures Apply, Resume and Undo.
type Options struct {
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
	// Sink is the file sink output directory the actions with Store "sink" change (a plan's
	// --sink half; the journal's Sink for undo and resume). nil: none.
	Sink storage.Store
	// Hook, when set, is called at the named points of a run ("locked", "journaled",
	// "backed-up", "applying", "changed", "applied", "verified"): the kill matrices of the
	// tests stop the process there.
	Hook func(point string)
}

func (o *Options) hook(point string) {
	if o.Hook != nil {
		o.Hook(point)
	}
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// ErrChanged is returned when the checkpoint no longer has the bytes a plan or journal expects:
// something else wrote to it in the meantime, and acting now could destroy that write.
var ErrChanged = errors.New("the checkpoint changed since the plan was made")

// ErrNothingToDo is returned by Apply for a plan without actions.
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

// Apply applies p to the checkpoint in s: lock, a check of the whole plan under the lock,
// journal, backups, actions, verification. See the package documentation for the protocol. On
// success the returned journal is in StateDone and holds the planner's verified result, which is
// the prediction: a verified restart that differs is rolled back and returned as a
// *MismatchError. A failure before the first change leaves the checkpoint untouched and the lock
// released; a failure after it returns a *HalfwayError and keeps the lock.
func Apply(ctx context.Context, s storage.Store, p *Plan, opts Options) (*Record, error) {
	if len(p.Actions) == 0 {
		return nil, ErrNothingToDo
	}
	st := stores{cp: s, sink: opts.Sink, dirs: newConfinedDirs()}
	hasSink := false
	for _, a := range p.Actions {
		if a.Store == StoreSink {
			hasSink = true
		}
		if err := checkAction(st, a); err != nil {
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
	j := &Record{
		Version:    Version,
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
	if hasSink {
		j.Sink = absoluteURI(opts.Sink)
	}
	if m, err := cp.ReadMetadata(ctx); err == nil && m != nil {
		j.QueryID = m.ID
	}
	for _, a := range p.Actions {
		ja := Entry{Action: a, State: ActionPending}
		if !a.Before.Absent() {
			ja.Backup = storage.Join("files", a.Store, a.Path)
		}
		j.Actions = append(j.Actions, ja)
	}

	// A new repair never takes a lock over, not even one with its own id; only a stale one (its
	// holder gone from this host, no journal written) or with --force.
	j.lock = lockFor(j, "repair", now)
	warn, _, err := acquireLock(ctx, s, j.lock, lockPolicy{force: opts.Force, journalAt: journalFinder(s, opts.BackupRoot)})
	if err != nil {
		return nil, err
	}
	defer running.Delete(j.lock.Owner)
	if warn != "" {
		j.Warnings = append(j.Warnings, warn)
		opts.progress("%s", warn)
	}
	opts.hook("locked")
	// The plan was computed from a reading of the checkpoint that may be minutes old (the user read
	// it and answered a prompt), and another ckpt may have changed it since and released the lock:
	// every file must still have the bytes the plan saw, and the plan's whole prediction must
	// still hold for the checkpoint as it is now.
	work, err := underLock(ctx, st, p, j)
	if err != nil {
		_ = releaseLock(context.WithoutCancel(ctx), s, j.lock)
		return nil, err
	}
	opts.progress("journal: %s", loc.URI())
	if err := j.write(ctx, loc, now); err != nil {
		_ = releaseLock(context.WithoutCancel(ctx), s, j.lock)
		return nil, err
	}
	opts.hook("journaled")
	return j, forward(ctx, st, loc, j, &opts, "repair", work)
}

// underLock reads every file the plan changes (once: the bytes are what the backups get) and
// checks them against the plan, then asks the planner what the checkpoint as it is now gives with
// the actions applied: the plan's prediction, or the plan is refused.
func underLock(ctx context.Context, st stores, p *Plan, j *Record) ([]todo, error) {
	meter := newPhase(ctx, "checking the files under the lock", len(j.Actions))
	defer meter.end()
	work := make([]todo, 0, len(j.Actions))
	ov := newStoreOverlay(st.cp)
	reads, err := readAll(ctx, st, j.Actions, meter)
	if err != nil {
		return nil, err
	}
	for i, ja := range j.Actions {
		a := ja.Action
		data, d := reads[i].data, reads[i].digest
		if d != a.Before {
			return nil, fmt.Errorf("%w: %s is now %s, the plan saw %s; plan again", ErrChanged, a.Path, d.Short(), a.Before.Short())
		}
		w := todo{i: i, data: data}
		switch a.Op {
		case OpCopy:
			if isStagedCopy(a) {
				// The staged file is placed as a stream (placeStaged); the planner's overlay
				// lists state files, never reads them, so it gets no bytes.
				sd, err := streamDigest(ctx, st.of(a), a.From)
				if err != nil {
					return nil, err
				}
				if sd != a.After {
					return nil, fmt.Errorf("%w: %s (the staged file) is now %s, the plan saw %s; plan again", ErrChanged, a.From, sd.Short(), a.After.Short())
				}
				break
			}
			src, sd, err := readDigest(ctx, st.of(a), a.From)
			if err != nil {
				return nil, err
			}
			if sd != a.After {
				return nil, fmt.Errorf("%w: %s (the source of the copy) is now %s, the plan saw %s; plan again", ErrChanged, a.From, sd.Short(), a.After.Short())
			}
			w.data = src
		case OpWrite:
			w.data = a.Data
		}
		if a.Store == "" {
			ov.apply(a, w.data)
		}
		work = append(work, w)
	}
	if !predicts(j) {
		return work, nil
	}
	res, err := ov.Predict(ctx, p.Options)
	if err != nil {
		return nil, err
	}
	if !restartsAsPredicted(p.After, res) {
		return nil, fmt.Errorf("%w: the plan predicted %q, but applied to the checkpoint as it is now it gives %q (another command changed it meanwhile); plan again",
			ErrChanged, p.After.Verdict(), res.Verdict())
	}
	return work, nil
}

// predicts reports whether the journal's prediction is the planner's answer for the changed
// checkpoint, to be checked before and after: every plan but Spark's manual procedure (whose
// prediction is the restart once a person has run it) and a plan without a restart (the sink
// half of a purge, in the sink's own store).
func predicts(j *Record) bool {
	return j.Predicted != nil && j.Strategy != StrategySparkProcedure
}

// Resume finishes the repair whose journal is at loc: it backs up what is not backed up yet,
// applies the actions not applied yet (the file hashes tell), and verifies. It is safe to run
// again after any failure, including its own.
func Resume(ctx context.Context, s storage.Store, loc Location, opts Options) (*Record, error) {
	j, err := openJournal(ctx, s, loc, opts.Sink)
	if err != nil {
		return nil, err
	}
	switch j.State {
	case StateUndone, StateUndoing:
		return j, fmt.Errorf("repair %s was undone (or is being undone); plan a new repair with `ckpt repair %s`", j.ID, j.Checkpoint)
	}
	st := stores{cp: s, sink: opts.Sink}
	if _, err := guard(ctx, s, j, &opts, "resume"); err != nil {
		return j, err
	}
	defer running.Delete(j.lock.Owner)
	return j, forward(ctx, st, loc, j, &opts, "resume", nil)
}

func openJournal(ctx context.Context, s storage.Store, loc Location, sink storage.Store) (*Record, error) {
	j, err := Read(ctx, loc)
	if err != nil {
		return nil, err
	}
	if j.Sink != "" && sink == nil {
		return nil, fmt.Errorf("journal %s also changed the file sink %s, which was not opened", loc.URI(), j.Sink)
	}
	st := stores{cp: s, sink: sink, dirs: newConfinedDirs()}
	for _, a := range j.Actions {
		if err := checkAction(st, a.Action); err != nil {
			return nil, fmt.Errorf("journal %s: %w", loc.URI(), err)
		}
	}
	if j.QueryID != "" {
		data, err := readFile(ctx, s, checkpoint.FileMetadata)
		if err == nil && !strings.Contains(string(data), j.QueryID) {
			return nil, fmt.Errorf("journal %s belongs to query %s, but %s/metadata names another query; refusing to apply it here",
				loc.URI(), j.QueryID, s.URI())
		}
	}
	return j, nil
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
