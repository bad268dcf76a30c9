package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// SparkVersion is the Spark release whose checkpoints the engine writes and whose restart rules
// it follows.
const SparkVersion = "3.5"

// initialOffsetsPath is the Kafka source's initial offsets file (source 0).
const initialOffsetsPath = checkpoint.DirSources + "/0/0"

// RefusedError is a start Spark would refuse: Spark's error plus the commands that help.
type RefusedError struct {
	Plan       *recovery.Result
	Checkpoint string
	// AsyncGaps is set when the cause is async progress tracking switched off without Spark's
	// procedure: the error then names the ways out.
	AsyncGaps *AsyncGapsError
}

func (e *RefusedError) Error() string {
	if e.AsyncGaps != nil {
		return e.AsyncGaps.Error()
	}
	msg := e.Plan.ErrorText()
	if e.Plan.Exception != "" {
		msg = e.Plan.Exception + ": " + msg
	}
	return fmt.Sprintf("Spark would refuse to restart this checkpoint, so ckpt does too:\n  %s\n"+
		"Diagnose with:  ckpt doctor %s\nRepair with:    ckpt repair %s", strings.ReplaceAll(msg, "\n", "\n  "), e.Checkpoint, e.Checkpoint)
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

	queryID, runID string
	newMetadata    bool
	conf           []logformat.KV

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
	e := &Engine{opts: opts, q: opts.Query, clock: opts.Clock, runID: opts.RunID}
	if e.runID == "" {
		e.runID = uuid.NewString()
	}
	e.parallelism = e.q.Parallelism
	if e.parallelism == 0 {
		e.parallelism = 4 * runtime.GOMAXPROCS(0)
	}
	e.conf = SparkConf35(e.q.ShufflePartitions)
	prog := e.q.Program
	e.evalPool.New = func() any { return prog.NewEvaluator() }
	// The query id: read it (or pick the one start will write) before building the sink, whose
	// exactly-once transactional id derives from it. Nothing is written here.
	data, err := opts.Store.ReadFile(ctx, checkpoint.FileMetadata)
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
	defer e.src.Close()
	defer e.sink.Close()
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
			e.async.switchOff = asyncSwitchOffBatches
			e.logf("Async switch-off: running with asyncProgressTrackingEnabled=true and asyncProgressTrackingCheckpointIntervalMs=0 until %d batches have persisted their offsets and commits, then without async progress tracking", asyncSwitchOffBatches)
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

// start: metadata, the recovery planner, and the position to continue from.
func (e *Engine) start(ctx context.Context) error {
	store := e.opts.Store
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return err
	}
	if cp.HasMetadata() {
		m, err := cp.ReadMetadata(ctx)
		if err != nil {
			return fmt.Errorf("Error reading stream metadata from %s: %w", cp.SparkPath(checkpoint.FileMetadata), err)
		}
		if m.ID != e.queryID {
			//lint:ignore ST1005 Spark's exact text
			return fmt.Errorf("Multiple streaming queries are concurrently using metadata")
		}
	}
	e.seedOffsets, e.seedCommits = slices.Clone(cp.Offsets.IDs), slices.Clone(cp.Commits.IDs)

	mode := recovery.ModeSync
	if e.asyncMode() {
		mode = recovery.ModeAsync
	}
	// The engine runs one Kafka source; telling the planner lets it apply Spark's source-count
	// assertion against the real query instead of its model of one.
	ropts := recovery.Options{Mode: mode, SparkVersion: SparkVersion, QuerySources: 1}
	if fs, ok := e.sink.(interface {
		LatestBatch(context.Context) (int64, bool, error)
	}); ok {
		if id, ok, err := fs.LatestBatch(ctx); err != nil {
			return err
		} else if ok {
			ropts.SinkLatest = &id
		}
	}
	plan, err := recovery.Plan(ctx, cp, ropts)
	if err != nil {
		return err
	}
	if plan.LatestCommit != nil {
		e.stats.LastDurableCommit = *plan.LatestCommit
	}
	for _, l := range plan.DriverLog {
		e.logf("%s", l)
	}
	for _, w := range plan.Warnings {
		e.logf("WARN %s", w)
	}
	if plan.Failed() {
		if mode == recovery.ModeSync && e.q.Sink != query.SinkFile {
			// The switch-off trap: gaps only the async engine tolerates. Stop before touching
			// anything and name the ways out.
			gaps, err := asyncGaps(ctx, cp, plan, store.URI(), ropts, e.q.Trigger.Kind)
			if err != nil {
				return err
			}
			if gaps != nil {
				return &RefusedError{Plan: plan, Checkpoint: store.URI(), AsyncGaps: gaps}
			}
		}
		return &RefusedError{Plan: plan, Checkpoint: store.URI()}
	}

	if !cp.HasMetadata() {
		// StreamingQueryCheckpointMetadata: a missing metadata file is written with a new id.
		m := &logformat.StreamMetadata{ID: e.queryID}
		if err := store.WriteFile(ctx, checkpoint.FileMetadata, m.Marshal()); err != nil {
			if errors.Is(err, fs.ErrExist) {
				//lint:ignore ST1005 Spark's exact text
				return errors.New("Multiple streaming queries are concurrently using metadata")
			}
			return err
		}
		e.logf("Created %s with query id %s", cp.SparkPath(checkpoint.FileMetadata), m.ID)
	}
	e.stats.QueryID, e.stats.RunID = e.queryID, e.runID

	// Leftovers of interrupted atomic writes (a crash between the temporary file and the
	// rename: ".<name>.<uuid>.tmp") are never read. Spark leaves them; so does the engine, and
	// says so: nothing is destroyed without a plan and a backup (ckpt repair removes them).
	if err := e.noteTemps(ctx, cp); err != nil {
		return err
	}

	latest, hasOffsets := cp.Offsets.Latest()
	if !hasOffsets {
		e.stats.FreshStart = true
		e.nextBatch = plan.NextBatch
		return nil
	}
	seq, err := cp.ReadOffsets(ctx, latest)
	if err != nil {
		return err
	}
	// Spark's setSessionConf: the latest offsets file's conf is what later batches record.
	e.conf = restoredConf(e.conf, seq.Metadata)
	end, err := sourceOffsets(cp, latest, seq)
	if err != nil {
		return err
	}
	if plan.RerunBatch != nil {
		l := *plan.RerunBatch
		b := &pendingBatch{id: l, rerun: true, timestampMs: plan.BatchTimestampMs}
		if l != latest {
			return fmt.Errorf("engine: the planner re-runs batch %d but the latest offsets are %d", l, latest)
		}
		if end == nil {
			return fmt.Errorf("engine: offsets/%d has no offset for the Kafka source", l)
		}
		b.end, b.latest = *end, *end
		if plan.RerunRange != nil && len(plan.RerunRange.Start) > 0 && !isNull(plan.RerunRange.Start[0]) {
			s, err := logformat.ParseKafkaOffsets(cp.SparkPath(fmt.Sprintf("offsets/%d", l-1)), string(plan.RerunRange.Start[0]))
			if err != nil {
				return err
			}
			b.start = &s
		}
		e.rerun = b
		e.nextBatch = l + 1
		e.committed = end
		e.logf("Resuming query %s: re-running batch %d with the offsets in offsets/%d, then continuing at batch %d", e.queryID, l, l, l+1)
		return nil
	}
	e.nextBatch = plan.NextBatch
	e.committed = end
	e.logf("Resuming query %s at batch %d", e.queryID, e.nextBatch)
	return nil
}

// noteTemps reports, without touching them, the temporary files of interrupted writes in the
// root, offsets/, commits/ and sources/0/.
func (e *Engine) noteTemps(ctx context.Context, cp *checkpoint.Checkpoint) error {
	var temps []string
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		for _, t := range l.Temps {
			temps = append(temps, t.Path)
		}
	}
	src, err := e.opts.Store.List(ctx, checkpoint.DirSources+"/0")
	if err != nil {
		return err
	}
	for _, en := range append(slices.Clone(cp.Root), src...) {
		name := path.Base(en.Path)
		if !en.IsDir && strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			temps = append(temps, en.Path)
		}
	}
	if len(temps) == 0 {
		return nil
	}
	shown := temps[:min(len(temps), 5)]
	more := ""
	if len(temps) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(temps)-len(shown))
	}
	e.logf("Left %d temporary file(s) of interrupted writes in place, as Spark does (never read): %s%s; `ckpt repair` removes them with a backup",
		len(temps), strings.Join(shown, ", "), more)
	return nil
}

func isNull(m json.RawMessage) bool {
	s := strings.TrimSpace(string(m))
	return s == "" || s == "null"
}

func sourceOffsets(cp *checkpoint.Checkpoint, id int64, seq *logformat.OffsetSeq) (*logformat.KafkaOffsets, error) {
	s := seq.Sources[0]
	if s.Void {
		return nil, nil
	}
	k, err := logformat.ParseKafkaOffsets(cp.SparkPath(fmt.Sprintf("offsets/%d", id)), s.JSON)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// initialOffsets reads sources/0/0, or resolves startingOffsets and writes it (Spark's
// getOrCreateInitialPartitionOffsets).
func (e *Engine) initialOffsets(ctx context.Context) (logformat.KafkaOffsets, error) {
	if e.initial != nil {
		return *e.initial, nil
	}
	store := e.opts.Store
	data, err := store.ReadFile(ctx, initialOffsetsPath)
	switch {
	case err == nil:
		k, err := logformat.ParseKafkaInitialOffsets(initialOffsetsPath, data)
		if err != nil {
			//lint:ignore ST1005 Spark's exact text
			return logformat.KafkaOffsets{}, fmt.Errorf("Failed to read log file %s. %w", initialOffsetsPath, err)
		}
		e.initial = &k.Offsets
		return k.Offsets, nil
	case !errors.Is(err, fs.ErrNotExist):
		return logformat.KafkaOffsets{}, err
	}
	o, err := e.src.InitialOffsets(ctx)
	if err != nil {
		return logformat.KafkaOffsets{}, err
	}
	if err := store.WriteFile(ctx, initialOffsetsPath, logformat.MarshalKafkaInitialOffsets(o)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			//lint:ignore ST1005 Spark's exact text
			return logformat.KafkaOffsets{}, fmt.Errorf("Multiple streaming queries are concurrently using %s", checkpoint.DirSources+"/0")
		}
		return logformat.KafkaOffsets{}, err
	}
	e.logf("Wrote the Kafka initial offsets to %s: %s", initialOffsetsPath, o.JSON())
	e.initial = &o
	return o, nil
}

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
	if len(end.Topics) == 0 || equalOffsets(start, end) {
		return nil, nil
	}
	s := start
	b := &pendingBatch{id: e.nextBatch, start: &s, end: end, latest: latest, timestampMs: triggerTime.UnixMilli(),
		latestOffsetMs: e.clock.Now().Sub(t0).Milliseconds()}
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

	if !b.rerun {
		t := e.clock.Now()
		seq := &logformat.OffsetSeq{Version: 1,
			Metadata: &logformat.OffsetMetadata{BatchWatermarkMs: 0, BatchTimestampMs: b.timestampMs, Conf: e.conf},
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
		if min := int64(e.q.MinBatchesToRetain); min < b.id {
			if e.async != nil {
				e.async.purge()
			} else if err := e.lw.Purge(bctx, b.id-min).Wait(); err != nil {
				return abandoned(err)
			}
		}
		dur["walCommit"] = e.clock.Now().Sub(t).Milliseconds()
	}

	t := e.clock.Now()
	var midSink func()
	if f := e.opts.FailAt; f != nil && f.Batch == b.id && f.Phase == PhaseMidSink {
		midSink = func() { e.failAt(b.id, PhaseMidSink) }
	}
	var stream StreamingSink
	if s, ok := e.sink.(StreamingSink); ok && s.Streams() {
		stream = s
	}
	readMid := midSink
	if m, ok := stream.(interface{ SetMidSink(func()) }); ok && midSink != nil {
		m.SetMidSink(midSink) // the sink knows when part of the batch is durable
		readMid = nil
	}
	batch, err := e.read(bctx, b.id, from, b.end, stream, readMid)
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
	c := &logformat.Commit{Version: 1, NextBatchWatermarkMs: 0, HasNextBatchWatermark: true}
	if e.async != nil {
		e.async.addCommit(b.id, c)
	} else if err := e.lw.AddCommit(bctx, b.id, c).Wait(); err != nil {
		return abandoned(err)
	} else {
		e.stats.LastDurableCommit = b.id
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

func (e *Engine) report(b *pendingBatch, from logformat.KafkaOffsets, batch *Batch, dur map[string]int64, start, end time.Time) {
	var name *string
	if e.q.Name != "" {
		n := e.q.Name
		name = &n
	}
	exec := end.Sub(start)
	var inRate float64
	if !e.lastTrigger.IsZero() {
		inRate = rate(batch.InputRows, start.Sub(e.lastTrigger))
	}
	e.lastTrigger = start
	latest := b.latest
	if len(latest.Topics) == 0 {
		latest = b.end
	}
	p := &Progress{
		ID: e.queryID, RunID: e.runID, Name: name, Timestamp: sparkTimestamp(start),
		BatchID: b.id, BatchDuration: exec.Milliseconds(), NumInputRows: batch.InputRows,
		InputRowsPerSecond: inRate, ProcessedRowsPerSecond: rate(batch.InputRows, exec),
		DurationMs: dur, StateOperators: []any{},
		Sources: []SourceProgress{{
			Description:  e.src.Description(),
			StartOffset:  json.RawMessage(from.JSON()),
			EndOffset:    json.RawMessage(b.end.JSON()),
			LatestOffset: json.RawMessage(latest.JSON()),
			NumInputRows: batch.InputRows, InputRowsPerSecond: inRate, ProcessedRowsPerSecond: rate(batch.InputRows, exec),
			Metrics: lagMetrics(b.end, latest),
		}},
		Sink:  SinkProgress{Description: e.sink.Description(), NumOutputRows: outputRows(e.sink, batch)},
		Rerun: b.rerun,
	}
	e.opts.Metrics.Observe(p)
	if e.opts.OnProgress != nil {
		e.opts.OnProgress(p)
	}
}

func outputRows(s Sink, b *Batch) int64 {
	if c, ok := s.(interface{ OutputRows(*Batch) int64 }); ok {
		return c.OutputRows(b)
	}
	return -1
}

// lagMetrics are the Kafka source's metrics in progress events (avg/max/minOffsetsBehindLatest).
func lagMetrics(end, latest logformat.KafkaOffsets) map[string]string {
	em := end.Map()
	var sum, mx, n int64
	mn := int64(-1)
	for tp, l := range latest.Map() {
		lag := l - em[tp]
		if lag < 0 {
			lag = 0
		}
		sum += lag
		n++
		mx = max(mx, lag)
		if mn < 0 || lag < mn {
			mn = lag
		}
	}
	if n == 0 {
		return nil
	}
	return map[string]string{
		"avgOffsetsBehindLatest": fmt.Sprintf("%.1f", float64(sum)/float64(n)),
		"maxOffsetsBehindLatest": fmt.Sprint(mx),
		"minOffsetsBehindLatest": fmt.Sprint(mn),
	}
}

// read reads (from, end] of every partition in parallel and applies the transform. With a
// streaming sink (stream != nil) each transformed chunk goes to it at once and the returned
// batch holds only the counts.
func (e *Engine) read(ctx context.Context, id int64, from, end logformat.KafkaOffsets, stream StreamingSink, midSink func()) (*Batch, error) {
	prog := e.q.Program
	identity := prog.Identity()
	project := prog.Projects()
	sel, plainSel := prog.KafkaSelection()
	if plainSel {
		project = false // keep the rows unboxed; Part.Select picks the columns
		identity = !prog.HasFilter()
	}
	var mu sync.Mutex
	var inputRows, outputRows atomic.Int64
	var midOnce sync.Once
	parts := map[logformat.TopicPartition]*Part{}
	err := e.src.Read(ctx, from, end, e.parallelism, func(tp logformat.TopicPartition, rows []transform.Row) error {
		inputRows.Add(int64(len(rows)))
		var kept []transform.Row
		var values [][]any
		if identity {
			kept = rows
		} else {
			ev := e.evalPool.Get().(*transform.Evaluator)
			defer e.evalPool.Put(ev)
			for i := range rows {
				ok, err := ev.Keep(&rows[i])
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if project {
					v, err := ev.Project(&rows[i], nil)
					if err != nil {
						return err
					}
					values = append(values, v)
				} else {
					kept = append(kept, rows[i])
				}
			}
		}
		if stream != nil {
			chunk := &Part{Topic: tp.Topic, Partition: tp.Partition, Rows: kept, Values: values, Select: sel}
			if project && values == nil {
				chunk.Values = [][]any{}
			}
			if err := stream.WritePart(ctx, id, prog.Columns(), chunk); err != nil {
				return err
			}
			outputRows.Add(int64(chunk.Len()))
			if midSink != nil && chunk.Len() > 0 {
				midOnce.Do(midSink)
			}
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		p := parts[tp]
		if p == nil {
			p = &Part{Topic: tp.Topic, Partition: tp.Partition, Select: sel}
			parts[tp] = p
		}
		if project {
			if p.Values == nil {
				p.Values = values
			} else {
				p.Values = append(p.Values, values...)
			}
			if p.Values == nil {
				p.Values = [][]any{}
			}
		} else {
			if p.Rows == nil {
				p.Rows = kept
			} else {
				p.Rows = append(p.Rows, kept...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b := &Batch{ID: id, Columns: prog.Columns(), InputRows: inputRows.Load(), NumRows: outputRows.Load()}
	for _, p := range parts {
		if p.Len() == 0 {
			continue
		}
		b.Parts = append(b.Parts, *p)
		b.NumRows += int64(p.Len())
	}
	slices.SortFunc(b.Parts, func(x, y Part) int {
		if c := strings.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return int(x.Partition) - int(y.Partition)
	})
	return b, nil
}
