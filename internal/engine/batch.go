// The trigger loop and one micro-batch: construct the next batch, execute it, finish an async switch-off.

package engine

import (
	"context"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
)

func (e *Engine) readLimit() ReadLimit {
	if e.q.Trigger.Kind == query.TriggerOnce {
		return ReadLimit{AllAvailable: true} // Trigger.Once forces ReadAllAvailable
	}
	return e.src.DefaultReadLimit()
}

// loop is the trigger executor: ProcessingTimeExecutor for default and processingTime,
// SingleBatchExecutor for once, MultiBatchExecutor for availableNow.
func (e *Engine) loop(ctx context.Context) error {
	kind := e.q.Trigger.Kind
	interval := e.q.Trigger.Interval
	if kind == query.TriggerAvailableNow {
		// prepareForTriggerAvailableNow: the end of this run is what is available at its first
		// trigger.
		e.src.PrepareForTriggerAvailableNow()
	}
	for {
		if ctx.Err() != nil {
			e.stats.Stopped = "signal"
			return nil
		}
		if e.opts.MaxBatches > 0 && e.stats.Batches >= e.opts.MaxBatches {
			e.stats.Stopped = "max-batches"
			return nil
		}
		if e.async != nil {
			// errorNotifier.throwErrorIfExists: an asynchronous write error fails the query
			// at the next batch.
			if err := e.async.check(); err != nil {
				return err
			}
		}
		triggerTime := e.clock.Now()
		next := triggerTime
		if interval > 0 {
			ms := triggerTime.UnixMilli()
			iv := interval.Milliseconds()
			next = time.UnixMilli(ms/iv*iv + iv)
		}
		b, err := e.construct(ctx, triggerTime)
		if err != nil {
			if ctx.Err() != nil {
				e.stats.Stopped = "signal"
				return nil
			}
			return err
		}
		if b != nil {
			stop, err := e.execute(ctx, b)
			if err != nil || stop {
				return err
			}
			if e.opts.MaxBatches > 0 && e.stats.Batches >= e.opts.MaxBatches {
				e.stats.Stopped = "max-batches"
				return nil
			}
		}
		switch kind {
		case query.TriggerOnce:
			e.stats.Stopped = "once"
			return nil
		case query.TriggerAvailableNow:
			if b == nil {
				e.stats.Stopped = "availableNow"
				return nil
			}
			continue
		}
		if interval > 0 {
			if elapsed := e.clock.Now().Sub(triggerTime); elapsed > interval {
				e.logf("WARN ProcessingTimeExecutor: Current batch is falling behind. The trigger interval is %d milliseconds, but spent %d milliseconds", interval.Milliseconds(), elapsed.Milliseconds())
			}
			if wait := next.Sub(e.clock.Now()); wait > 0 {
				if e.clock.Sleep(ctx, wait) != nil {
					e.stats.Stopped = "signal"
					return nil
				}
			}
		} else if b == nil {
			if e.clock.Sleep(ctx, e.opts.PollingDelay) != nil {
				e.stats.Stopped = "signal"
				return nil
			}
		}
	}
}

func (e *Engine) startOffsets(ctx context.Context) (logformat.KafkaOffsets, error) {
	if e.committed != nil {
		return *e.committed, nil
	}
	return e.initialOffsets(ctx)
}

// construct is constructNextBatch: plan the end offsets; nil when there is no new data.
func (e *Engine) construct(ctx context.Context, triggerTime time.Time) (*pendingBatch, error) {
	start, err := e.startOffsets(ctx)
	if err != nil {
		return nil, err
	}
	t0 := e.clock.Now()
	end, latest, warnings, err := e.src.Latest(ctx, start, e.readLimit())
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		e.logf("WARN %s", w)
	}
	end, latest = e.ordered(end), e.ordered(latest)
	if len(end.Topics) == 0 || equalOffsets(start, end) {
		if !e.noDataBatchDue() {
			return nil, nil
		}
		// A no-data batch: the same offsets, the advanced watermark.
		end = e.ordered(start)
	}
	s := start
	b := &pendingBatch{id: e.nextBatch, start: &s, end: end, latest: latest, timestampMs: triggerTime.UnixMilli(),
		latestOffsetMs: e.clock.Now().Sub(t0).Milliseconds()}
	if e.wm != nil {
		b.watermarkMs, b.lateMs = e.wm.current, e.wm.last
	}
	return b, nil
}

func equalOffsets(a, b logformat.KafkaOffsets) bool {
	am, bm := a.Map(), b.Map()
	if len(am) != len(bm) {
		return false
	}
	for k, v := range am {
		if w, ok := bm[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (e *Engine) failAt(id int64, phase string) {
	if f := e.opts.FailAt; f != nil && f.Batch == id && f.Phase == phase {
		e.logf("--fail-at batch=%d,phase=%s: exiting abruptly", id, phase)
		e.opts.Exit(FailExitCode)
	}
}

// batchContext is ctx without its cancellation, cancelled StopTimeout after ctx is.
func (e *Engine) batchContext(ctx context.Context) (context.Context, func()) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		timer = time.AfterFunc(e.opts.StopTimeout, cancel)
		mu.Unlock()
	})
	return bctx, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// execute runs a planned batch: WAL (unless a re-run), read+transform+sink, commit, progress.
// stop is true when the run must end (a stop abandoned the batch).
func (e *Engine) execute(ctx context.Context, b *pendingBatch) (stop bool, err error) {
	bctx, done := e.batchContext(ctx)
	defer done()
	abandoned := func(err error) (bool, error) {
		if ctx.Err() != nil && bctx.Err() != nil {
			id := b.id
			e.stats.AbandonedRun = &id
			e.stats.Stopped = "abandoned"
			e.logf("Stop timeout (%s) expired: abandoned batch %d after offsets/%d; the restart re-runs it", e.opts.StopTimeout, b.id, b.id)
			return true, nil
		}
		return true, err
	}
	start := e.clock.Now()
	dur := map[string]int64{"latestOffset": b.latestOffsetMs, "getBatch": 0, "queryPlanning": 0, "walCommit": 0, "addBatch": 0, "commitOffsets": 0}
	var from logformat.KafkaOffsets
	if b.start != nil {
		from = *b.start
	} else {
		from, err = e.initialOffsets(bctx)
		if err != nil {
			return abandoned(err)
		}
	}

	if err := e.donePurges(); err != nil {
		return abandoned(err)
	}
	if !b.rerun {
		t := e.clock.Now()
		seq := &logformat.OffsetSeq{Version: 1,
			Metadata: &logformat.OffsetMetadata{BatchWatermarkMs: b.watermarkMs, BatchTimestampMs: b.timestampMs, Conf: e.conf},
			Sources:  []logformat.SourceOffset{{JSON: b.end.JSON()}}}
		if e.async != nil {
			// AsyncOffsetSeqLog.addAsync: issued (or kept in memory) without waiting; the
			// write blocks only when the writer's queue is full.
			e.async.addOffsets(b.id, seq, t.UnixMilli())
		} else if err := e.lw.AddOffsets(bctx, b.id, seq).Wait(); err != nil {
			return abandoned(err)
		}
		e.failAt(b.id, PhaseAfterOffsets)
		// markMicroBatchStart → purge(N - minBatchesToRetain) once N > minBatchesToRetain.
		// The sync engine queues it after commits/N instead (below): the same files go, off
		// the batch's path.
		if min := int64(e.q.MinBatchesToRetain); min < b.id && e.async != nil {
			e.async.purge()
		}
		dur["walCommit"] = e.clock.Now().Sub(t).Milliseconds()
	}
	var stream StreamingSink
	if s, ok := e.sink.(StreamingSink); ok && s.Streams() && e.stateful == nil {
		stream = s
	}
	offsetsDurable := func(context.Context) error { return nil }
	// beforeWrite runs before each of a streaming sink's writes of the batch.
	var beforeWrite func(context.Context) error
	if !b.rerun && e.async == nil {
		late := false
		if s, ok := e.sink.(LateOffsetsSink); ok {
			late = s.LateOffsets()
		}
		var synced Future
		if !late && stream != nil {
			// The fsync runs alongside the source's planning and first fetch, on a
			// goroutine of its own (the sync writer applies it on the caller's); the
			// sink's first write waits for it: reading has no effect that outlives the
			// process, writing does.
			f := make(chan error, 1)
			go func() { f <- e.lw.Sync(bctx).Wait() }()
			synced = f
		}
		var once sync.Once
		var derr error
		offsetsDurable = func(ctx context.Context) error {
			once.Do(func() {
				if synced == nil {
					synced = e.lw.Sync(ctx)
				}
				derr = synced.Wait()
			})
			return derr
		}
		switch {
		case late:
		case stream != nil:
			beforeWrite = offsetsDurable
		default:
			if err := offsetsDurable(bctx); err != nil {
				return abandoned(err)
			}
		}
	}

	t := e.clock.Now()
	var midSink func()
	if f := e.opts.FailAt; f != nil && f.Batch == b.id && f.Phase == PhaseMidSink {
		midSink = func() { e.failAt(b.id, PhaseMidSink) }
	}
	readMid := midSink
	if m, ok := stream.(interface{ SetMidSink(func()) }); ok && midSink != nil {
		m.SetMidSink(midSink) // the sink knows when part of the batch is durable
		readMid = nil
	}
	var batch *Batch
	if e.stateful != nil {
		if v := e.events(); v != nil {
			v.begin(b.lateMs, b.watermarkMs)
		}
		batch, err = e.runStateful(bctx, e.stateful, b.id, from, b.end)
	} else {
		batch, err = e.read(bctx, b.id, from, b.end, stream, readMid, beforeWrite)
	}
	if err == nil && beforeWrite != nil {
		// A batch that wrote nothing still has offsets/N durable before its commit.
		err = beforeWrite(bctx)
	}
	if stream != nil {
		if ferr := stream.FinishBatch(bctx, b.id); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return abandoned(err)
	}
	if stream == nil {
		batch.MidSink = midSink
		batch.OffsetsDurable = offsetsDurable
		if err := e.sink.AddBatch(bctx, batch); err != nil {
			return abandoned(err)
		}
	}
	if midSink != nil {
		midSink() // a sink that never called it (nothing to write): crash here
	}
	dur["addBatch"] = e.clock.Now().Sub(t).Milliseconds()
	e.failAt(b.id, PhaseBeforeCommit)

	t = e.clock.Now()
	if e.wm != nil {
		// WatermarkTracker.updateWatermark, then the commit records the watermark.
		v := e.events()
		e.wm.observe(v.events, v.maxMs)
		e.wm.last, e.wm.lastEviction, e.wm.executed = b.watermarkMs, b.watermarkMs, true
	}
	c := &logformat.Commit{Version: 1, NextBatchWatermarkMs: e.wmCurrent(), HasNextBatchWatermark: true}
	if e.async != nil {
		e.async.addCommit(b.id, c)
	} else if err := e.lw.AddCommit(bctx, b.id, c).Wait(); err != nil {
		return abandoned(err)
	} else {
		e.stats.LastDurableCommit = b.id
	}
	if min := int64(e.q.MinBatchesToRetain); min < b.id && !b.rerun && e.async == nil {
		// Beside the next batch's writes; its deletes need not be durable; its answer is read by
		// a later batch or at the end of the run. Not bctx: that ends with this batch.
		e.purges = append(e.purges, e.lw.Purge(context.WithoutCancel(ctx), b.id-min))
	}
	end := e.clock.Now()
	dur["commitOffsets"] = end.Sub(t).Milliseconds()
	dur["triggerExecution"] = end.Sub(start).Milliseconds()

	endCopy := b.end
	e.committed = &endCopy
	e.nextBatch = b.id + 1
	e.stats.Batches++
	e.stats.Rows += batch.InputRows
	e.stats.LastBatch = b.id
	if b.rerun {
		id := b.id
		e.stats.Reran = &id
	}
	e.report(b, from, batch, dur, start, end)
	if a := e.async; a != nil && a.switchOff > 0 && !b.rerun {
		if a.switchOff--; a.switchOff == 0 {
			return false, e.finishSwitchOff(b.id)
		}
	}
	return false, nil
}

// donePurges drops the purges that have finished, oldest first (they run one after the
// other), and returns the first error among them; those still running stay.
func (e *Engine) donePurges() error {
	for len(e.purges) > 0 {
		select {
		case err := <-e.purges[0]:
			e.purges = e.purges[1:]
			if err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// finishSwitchOff ends --async-switch-off: every queued write is waited for (the last batches'
// offsets and commits are on disk, consecutive), then the engine continues as the normal
// engine.
func (e *Engine) finishSwitchOff(last int64) error {
	e.lw.Close()
	if err := e.async.check(); err != nil {
		return err
	}
	e.stats.LastDurableCommit = max(e.stats.LastDurableCommit, e.async.lastDurable())
	e.async = nil
	e.lw = NewSyncLogWriter(e.opts.Store)
	e.logf("Async switch-off: offsets and commits of batches %d and %d are persisted; continuing without async progress tracking (restart without it from now on)", last-1, last)
	return nil
}
