package engine

import (
	"context"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
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
