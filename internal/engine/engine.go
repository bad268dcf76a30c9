package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// SparkVersion is the Spark release whose checkpoints the engine writes and whose restart rules
// it follows.
const SparkVersion = "3.5"

// initialOffsetsPath is the Kafka source's initial offsets file (source 0).
var initialOffsetsPath = checkpoint.InitialOffsetsPath(0)

// RefusedError is a start Spark would refuse, as data: the plan with Spark's error and, for the
// switch-off trap, both engines' restarts. Nothing has been written. The command renders the
// advice (internal/cmd/run); Error is Spark's error alone.
type RefusedError struct {
	Plan       *recovery.Result
	Checkpoint string
	// Trap is set when the checkpoint only restarts with async progress tracking on (the sync
	// engine's restart is blocked, the async one's is not: recovery.Assessment.Trap), as after
	// it was switched off without Spark's procedure.
	Trap *recovery.Trap
	// Offsets and Commits are the ids of the two logs when Trap is set.
	Offsets, Commits []int64
	// NoSwitchOff is Spark's refusal of async progress tracking for this query's trigger, ""
	// when --async-switch-off can be used.
	NoSwitchOff string
}

func (e *RefusedError) Error() string {
	msg := e.Plan.ErrorText()
	if e.Plan.Exception != "" {
		msg = e.Plan.Exception + ": " + msg
	}
	return "Spark would refuse to restart this checkpoint, so ckpt does too: " + msg
}

// Stats summarises a run.
type Stats struct {
	QueryID   string
	RunID     string
	Batches   int   // batches run (commits written), re-runs included
	Rows      int64 // input rows
	LastBatch int64 // -1: none
	// LastDurableCommit is the newest batch whose commit file is on disk when Run returns,
	// from this run or an earlier one; -1: none. It equals LastBatch except with async progress
	// tracking, which persists only some commits: a restart resumes after this batch.
	LastDurableCommit int64
	Reran             *int64
	Stopped           string // why Run returned: "once", "availableNow", "max-batches", "signal", "abandoned"
	FreshStart        bool
	Checkpoint        string
	AbandonedRun      *int64 // batch left after offsets/N when the stop timeout expired
}

// Engine runs one query. Create it with New, run it with Run; an Engine runs once.
type Engine struct {
	opts  Options
	q     *query.Resolved
	clock Clock
	src   Source
	sink  Sink
	lw    LogWriter
	// purges are the answers of the sync engine's purges not yet read (each started after its
	// batch's commit, beside the writes).
	purges []Future

	queryID, runID string
	// scala213: write Kafka offsets in Scala 2.13's key order (Options.SparkVersion).
	scala213    bool
	newMetadata bool
	conf        []logformat.KV

	// position: the next batch and its start offsets (nil: the source's initial offsets).
	nextBatch int64
	committed *logformat.KafkaOffsets
	initial   *logformat.KafkaOffsets
	rerun     *pendingBatch

	lastTrigger time.Time
	stats       Stats
	// async is asynchronous progress tracking; nil for the normal engine.
	async *asyncTracker
	// seedOffsets and seedCommits are the log ids on disk at start (writtenToDurableStorage).
	seedOffsets, seedCommits []int64
	evalPool                 sync.Pool
	parallelism              int
	// stateful is the stateful operator (streaming aggregation, deduplication) with its
	// state; nil for a stateless query.
	stateful statefulOp
	// wm is the event-time watermark; nil without --watermark.
	wm *watermark
}

type pendingBatch struct {
	id          int64
	start       *logformat.KafkaOffsets // nil: initial offsets
	end         logformat.KafkaOffsets
	latest      logformat.KafkaOffsets
	timestampMs int64
	rerun       bool
	// latestOffsetMs is the time planning took (progress durationMs.latestOffset).
	latestOffsetMs int64
	// watermarkMs is the batch's batchWatermarkMs (the eviction watermark); lateMs the
	// previous batch's (the late-rows watermark).
	watermarkMs, lateMs int64
}

// New checks the options and builds the source and sink (validating their options) without
// touching the checkpoint.
func New(ctx context.Context, opts Options) (*Engine, error) {
	opts.defaults()
	if opts.Query == nil || opts.Store == nil {
		return nil, errors.New("engine: Query and Store are required")
	}
	if opts.AsyncSwitchOff && (opts.Query.AsyncProgressTracking || opts.Query.Sink == query.SinkFile ||
		opts.Query.Trigger.Kind == query.TriggerOnce || opts.Query.Trigger.Kind == query.TriggerAvailableNow) {
		return nil, errors.New("engine: AsyncSwitchOff needs a query without async progress tracking, a processing-time trigger and a sink other than the file sink")
	}
	if err := checkOrderVersion(opts.SparkVersion); err != nil {
		return nil, err
	}
	var err error
	e := &Engine{opts: opts, q: opts.Query, clock: opts.Clock, runID: opts.RunID, scala213: scala213(opts.SparkVersion)}
	if e.runID == "" {
		e.runID = uuid.NewString()
	}
	e.parallelism = e.q.Parallelism
	if e.parallelism == 0 {
		// One reader per CPU, as Spark runs one task per core: more readers than CPUs cost
		// CPU in the clients (BenchmarkKafkaToKafka: 0.90-0.95x the plain loop's CPU with
		// 4 readers on 2 CPUs, 1.02-1.12x with 2; docs/benchmarks.md).
		e.parallelism = runtime.GOMAXPROCS(0)
	}
	e.conf = withProvider(SparkConf35(e.q.ShufflePartitions), e.q.StateProvider)
	switch {
	case e.q.Grouping != nil:
		if e.stateful, err = newAggregator(e.q, opts.SparkVersion); err != nil {
			return nil, err
		}
	case e.q.Dedup != nil:
		if e.stateful, err = newDeduplicator(e.q, opts.SparkVersion); err != nil {
			return nil, err
		}
	}
	e.wm = newWatermark(e.q)
	prog := e.q.Program
	e.evalPool.New = func() any { return prog.NewEvaluator() }
	// The query id: read it (or pick the one start will write) before building the sink, whose
	// exactly-once transactional id derives from it. Nothing is written here.
	data, err := checkpoint.ReadCapped(ctx, opts.Store, checkpoint.FileMetadata)
	switch {
	case err == nil:
		m, err := logformat.ParseStreamMetadata(checkpoint.FileMetadata, data)
		if err != nil {
			return nil, fmt.Errorf("Error reading stream metadata from %s: %w", checkpoint.SparkPath(opts.Store.URI(), checkpoint.FileMetadata), err)
		}
		e.queryID = m.ID
	case errors.Is(err, fs.ErrNotExist):
		e.queryID = uuid.NewString()
		e.newMetadata = true
	default:
		return nil, err
	}
	e.src = opts.Source
	if e.src == nil {
		if e.src, err = newKafkaSource(ctx, e.q, e.clock, e.logf); err != nil {
			return nil, err
		}
	}
	e.sink = opts.Sink
	if e.sink == nil {
		if e.sink, err = newSink(ctx, e.q, e.queryID, opts.Console, opts.OpenStore, e.logf); err != nil {
			e.src.Close()
			return nil, err
		}
	}
	return e, nil
}

func (e *Engine) logf(format string, a ...any) {
	fmt.Fprintf(e.opts.Log, format+"\n", a...)
}

// Run runs the query until the trigger ends it (once, availableNow), MaxBatches is reached, or ctx
// is cancelled (a graceful stop: the running batch finishes within StopTimeout or is abandoned).
func (e *Engine) Run(ctx context.Context) (Stats, error) {
	e.stats = Stats{LastBatch: -1, LastDurableCommit: -1, Checkpoint: e.opts.Store.URI()}
	defer func() {
		// Side by side: each closes Kafka clients, whose Close waits for round trips.
		var wg sync.WaitGroup
		wg.Go(e.src.Close)
		e.sink.Close()
		wg.Wait()
	}()
	if err := e.start(ctx); err != nil {
		return e.stats, err
	}
	if e.asyncMode() {
		interval := e.q.AsyncCheckpointIntervalMs
		if e.opts.AsyncSwitchOff {
			interval = 0
		}
		w := newAsyncLogWriter(e.opts.Store, e.q.MinBatchesToRetain, e.seedOffsets, e.seedCommits)
		e.lw = w
		e.async = newAsyncTracker(ctx, w, interval)
		if e.opts.AsyncSwitchOff {
			e.async.switchOff = recovery.AsyncSwitchOffBatches
			e.logf("Async switch-off: running with asyncProgressTrackingEnabled=true and asyncProgressTrackingCheckpointIntervalMs=0 until %d batches have persisted their offsets and commits, then without async progress tracking", recovery.AsyncSwitchOffBatches)
		} else {
			e.logf("Async progress tracking: offsets and commits are persisted every %d ms (the first batch of the run always)", interval)
		}
	} else {
		e.lw = NewSyncLogWriter(e.opts.Store)
	}
	err := e.run(ctx)
	// Queued writes finish before Run returns (a graceful stop); a write error not yet raised
	// at a batch is raised now.
	e.lw.Close()
	for _, f := range e.purges {
		if perr := f.Wait(); err == nil {
			err = perr
		}
	}
	if e.async != nil {
		if err == nil {
			err = e.async.check()
		}
		e.stats.LastDurableCommit = max(e.stats.LastDurableCommit, e.async.lastDurable())
	}
	return e.stats, err
}

func (e *Engine) asyncMode() bool { return e.q.AsyncProgressTracking || e.opts.AsyncSwitchOff }

func (e *Engine) run(ctx context.Context) error {
	if e.rerun != nil {
		b := e.rerun
		e.rerun = nil
		if stop, err := e.execute(ctx, b); err != nil || stop {
			return err
		}
	}
	return e.loop(ctx)
}
