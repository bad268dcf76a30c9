package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// asyncTracker is asynchronous progress tracking (Spark's AsyncProgressTrackingMicroBatchExecution
// with AsyncOffsetSeqLog and AsyncCommitLog, §6): the engine issues offsets and commit writes to
// the ordered writer and goes on without waiting; only some batches are persisted.
type asyncTracker struct {
	w          *syncLogWriter
	ctx        context.Context // writes outlive the batch that issued them
	intervalMs int64
	// lastIssuedMs is lastCommitIssuedTimestampMs: -1 until the first offsets write of the run.
	lastIssuedMs int64
	// firstBatch: the first batch executed in this run always persists its commit.
	firstBatch bool
	// issued holds the batches whose offsets write was issued in this run and whose commit is
	// not issued yet (AsyncOffsetSeqLog.pendingOffsetWrites).
	issued map[int64]bool
	// switchOff counts the batches still to persist before the engine continues without async
	// progress tracking (--async-switch-off); 0: not switching off.
	switchOff int

	mu  sync.Mutex
	err error // errorNotifier: the first write error, raised at the next batch
	// durable is the newest batch whose commit write completed in this run; -1: none.
	durable int64
}

// asyncSwitchOffBatches is how many batches --async-switch-off persists (offsets and commit)
// with interval 0 before it continues as the normal engine: Spark's "at least two micro-batches".
const asyncSwitchOffBatches = 2

func newAsyncTracker(ctx context.Context, w *syncLogWriter, intervalMs int64) *asyncTracker {
	return &asyncTracker{w: w, ctx: context.WithoutCancel(ctx), intervalMs: intervalMs, lastIssuedMs: -1, firstBatch: true, issued: map[int64]bool{}, durable: -1}
}

func (a *asyncTracker) markError(err error) {
	if err == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

// check is errorNotifier.throwErrorIfExists.
func (a *asyncTracker) check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// addOffsets is AsyncOffsetSeqLog.addAsync: the first batch of the run is persisted, then a
// batch once nowMs ≥ lastIssued + interval (every batch with interval 0). It reports whether
// the write was issued.
func (a *asyncTracker) addOffsets(id int64, seq *logformat.OffsetSeq, nowMs int64) bool {
	if a.intervalMs > 0 && a.lastIssuedMs != -1 && a.lastIssuedMs+a.intervalMs > nowMs {
		return false // kept in memory only (the batch cache)
	}
	a.lastIssuedMs = nowMs
	a.issued[id] = true
	a.w.addAsync(a.ctx, checkpoint.DirOffsets, id, seq.Marshal(), a.markError)
	return true
}

// purge queues Spark's async-mode purge (keep the newest minBatchesToRetain persisted files).
func (a *asyncTracker) purge() {
	a.w.purgeAsyncOp(a.ctx, a.markError)
}

// addCommit is markMicroBatchEnd: the commit is persisted when the batch's offsets write was
// issued in this run, or when it is the run's first batch; otherwise it is kept in memory.
func (a *asyncTracker) addCommit(id int64, c *logformat.Commit) bool {
	persist := a.issued[id] || a.firstBatch
	a.firstBatch = false
	delete(a.issued, id)
	if persist {
		a.w.addAsync(a.ctx, checkpoint.DirCommits, id, c.Marshal(), func(err error) {
			if err != nil {
				a.markError(err)
				return
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			a.durable = max(a.durable, id)
		})
	}
	return persist
}

// lastDurable is the newest batch whose commit is on disk from this run's writes; -1: none.
func (a *asyncTracker) lastDurable() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.durable
}

// AsyncGapsError refuses a restart without async progress tracking of a checkpoint whose gaps
// only the async engine tolerates (the switch-off trap, §6.6). Nothing has been written.
type AsyncGapsError struct {
	Checkpoint string
	Sync       *recovery.Result // the normal engine's restart: fails
	Async      *recovery.Result // the async engine's restart: resumes
	Offsets    []int64
	Commits    []int64
	// NoSwitchOff says why --async-switch-off cannot be used with this query ("" when it can).
	NoSwitchOff string
}

func (e *AsyncGapsError) Error() string {
	missing := *e.Sync.LatestOffsets - 1
	var b strings.Builder
	fmt.Fprintf(&b, "Spark would refuse to restart this checkpoint, so ckpt does too:\n  %s: %s\n", e.Sync.Exception, strings.ReplaceAll(e.Sync.ErrorText(), "\n", "\n  "))
	fmt.Fprintf(&b, "Cause: the checkpoint was written with async progress tracking (offsets %s, commits %s), which persists only some batches; "+
		"the normal engine needs offsets/%d to restart from batch %d. With async progress tracking the restart %s. Nothing was written.\n",
		idList(e.Offsets), idList(e.Commits), missing, missing+1, strings.TrimPrefix(strings.TrimSuffix(e.Async.Verdict(), "."), "Restart "))
	fmt.Fprintf(&b, "Ways out:\n")
	if e.NoSwitchOff == "" {
		fmt.Fprintf(&b, "  - run the same command with --async-switch-off: ckpt runs the query with async progress tracking and an interval of 0 until %d batches have persisted their offsets and commits (Spark's documented procedure), then continues without it\n", asyncSwitchOffBatches)
	} else {
		fmt.Fprintf(&b, "  - --async-switch-off (Spark's documented procedure, done by ckpt) needs a query that may use async progress tracking, and %s\n", e.NoSwitchOff)
	}
	// The strategy is repair's to recommend: it plans every one and says which it would apply.
	fmt.Fprintf(&b, "  - or repair the checkpoint, then run again: ckpt repair %s (it shows the plan it recommends and the replay it causes; add --execute to apply it)\n", e.Checkpoint)
	fmt.Fprintf(&b, "  - or keep async progress tracking: --sink-option %s=true\n", "asyncProgressTrackingEnabled")
	fmt.Fprintf(&b, "Diagnose with:  ckpt doctor %s", e.Checkpoint)
	return b.String()
}

func idList(ids []int64) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

// asyncGaps decides whether a failed sync restart is the async switch-off trap: the sync engine
// misses offsets/L-1 and the async engine would resume.
func asyncGaps(ctx context.Context, cp *checkpoint.Checkpoint, syncPlan *recovery.Result, uri string, ropts recovery.Options, trigger query.TriggerKind) (*AsyncGapsError, error) {
	noSwitchOff := ""
	if s := query.AsyncTriggerRefusal(trigger); s != "" {
		noSwitchOff = s + ": run it once with a processing-time trigger"
	}
	L, ok := cp.Offsets.Latest()
	if !ok || L == 0 || syncPlan.Reason != recovery.ReasonMissingPreviousOffsets {
		return nil, nil
	}
	ropts.Mode = recovery.ModeAsync
	ap, err := recovery.Plan(ctx, cp, ropts)
	if err != nil {
		return nil, err
	}
	if ap.Failed() {
		return nil, nil
	}
	return &AsyncGapsError{Checkpoint: uri, Sync: syncPlan, Async: ap, Offsets: cp.Offsets.IDs(), Commits: cp.Commits.IDs(), NoSwitchOff: noSwitchOff}, nil
}
