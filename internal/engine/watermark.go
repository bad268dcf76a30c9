// The event-time watermark of an aggregation with --watermark: Spark's WatermarkTracker (one
// EventTimeWatermark, policy min), the watermarks a batch runs with (offsets/N's
// batchWatermarkMs for eviction, offsets/N-1's for late rows: PropagateWatermarkSimulator), and
// the no-data batch Spark runs when the watermark advances (noDataMicroBatches.enabled).

package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
)

// watermark is the tracker of a query with a watermark.
type watermark struct {
	delayMs int64
	// current is the global watermark (WatermarkTracker.currentWatermark): what the next
	// offsets file records and the last commit recorded.
	current int64
	// last is batchWatermarkMs of the newest batch in the offsets log: the late-rows
	// watermark of the batch after it.
	last int64
	// executed: a batch ran in this run (Spark's lastExecution), the condition of a no-data
	// batch: a restart runs none until new data comes.
	executed bool
	// lastEviction is the eviction watermark of the last batch run.
	lastEviction int64
}

func newWatermark(q *query.Resolved) *watermark {
	if q.WatermarkColumn == "" || (q.Grouping == nil && q.Dedup == nil) {
		return nil
	}
	return &watermark{delayMs: q.WatermarkDelayMs}
}

// observe is WatermarkTracker.updateWatermark after a batch whose rows had event times up to
// maxMs (n rows; none: no change): the watermark only moves forward, and never below 0.
func (w *watermark) observe(n, maxMs int64) {
	if n == 0 {
		return
	}
	if v := maxMs - w.delayMs; v > w.current {
		w.current = v
	}
}

// noDataBatchDue is IncrementalExecution.shouldRunAnotherBatch for StateStoreSaveExec: in
// append or update mode, after a batch of this run, when the watermark moved past the one
// that batch evicted with.
func (e *Engine) noDataBatchDue() bool {
	w := e.wm
	return w != nil && w.executed && e.q.OutputMode != query.OutputComplete && w.current > w.lastEviction
}

// batchWatermarkAt reads batchWatermarkMs of offsets/id (0 when the file is gone or id < 0, as
// Spark's prevOffsetSeqMetadata defaults to 0).
func batchWatermarkAt(ctx context.Context, cp *checkpoint.Checkpoint, id int64) (int64, error) {
	if id < 0 {
		return 0, nil
	}
	seq, err := cp.ReadOffsets(ctx, id)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if seq.Metadata == nil {
		return 0, nil
	}
	return seq.Metadata.BatchWatermarkMs, nil
}

// wmCurrent is the watermark a commit records: 0 without --watermark.
func (e *Engine) wmCurrent() int64 {
	if e.wm == nil {
		return 0
	}
	return e.wm.current
}

// restoreWatermark is populateStartOffsets' watermark: offsets/latest's batchWatermarkMs, and
// when batch latest is committed the larger of it and the commit's nextBatchWatermarkMs.
func (e *Engine) restoreWatermark(ctx context.Context, cp *checkpoint.Checkpoint, latest int64, seq *logformat.OffsetSeq, committed bool) error {
	w := e.wm
	if seq.Metadata == nil {
		return nil
	}
	if w == nil {
		if e.stateful != nil && seq.Metadata.BatchWatermarkMs > 0 {
			// The batches would record watermark 0 and never evict what the state holds.
			return fmt.Errorf("offsets/%d records batchWatermarkMs %d: the checkpoint's query has a watermark; give the query's --watermark", latest, seq.Metadata.BatchWatermarkMs)
		}
		return nil
	}
	w.current, w.last = seq.Metadata.BatchWatermarkMs, seq.Metadata.BatchWatermarkMs
	if !committed {
		return nil
	}
	c, err := cp.ReadCommit(ctx, latest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	w.current = max(w.current, c.NextBatchWatermarkMs)
	return nil
}

// events is the running operator's event-time side: its watermarks and statistics.
func (e *Engine) events() *eviction {
	switch op := e.stateful.(type) {
	case *aggregator:
		return &op.ev
	case *deduplicator:
		return &op.ev
	}
	return nil
}
