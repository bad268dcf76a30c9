// Package run implements `ckpt run`: the Spark-compatible micro-batch engine (internal/engine).
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/demo"
	"github.com/ckpt-dev/ckpt/internal/engine"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/liveness"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt run`, separate from cobra so tests can call run.
type Options struct {
	IO *iostreams.IOStreams
	// OpenStore opens the checkpoint location (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)

	File        string
	Name        string
	Source      string
	SourceOpts  []string
	Sink        string
	SinkOpts    []string
	Checkpoint  string
	Trigger     string
	Filter      string
	Select      []string
	GroupBy     []string
	Agg         []string
	DropDups    []string
	DropDupsWM  []string
	OutputMode  string
	Watermark   string
	Conf        []string
	Parallelism int

	Output      string
	ProgressLog string
	MetricsAddr string
	StopTimeout time.Duration
	FailAt      string
	MaxBatches  int
	Duration    time.Duration
	// AsyncSwitchOff performs Spark's procedure for switching async progress tracking off.
	AsyncSwitchOff bool
	// SparkVersion is --spark-version: the Spark release that will read the checkpoint, for the
	// key order of the Kafka offsets written (engine.Options.SparkVersion). Default "": the
	// checkpoint's own order, else Spark 3.5's.
	SparkVersion string

	// Demo is --demo: run on an embedded broker with a generated topic (internal/demo).
	Demo          bool
	DemoRate      int
	DemoPartition int
	// Keep is --keep: with --demo, leave the checkpoint folder and broker data it created.
	// Default false: they are removed when the run ends.
	Keep bool
	// Version is ckpt's version, recorded in the liveness record (cli.Env.Version).
	Version string
}

// NewCmd builds `ckpt run`. runF replaces run in tests of the flag wiring.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	o := &Options{IO: env.IO, OpenStore: env.OpenStore, Version: env.Version}
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run a Spark-compatible micro-batch query (Kafka in; Kafka, files or console out)",
		Long: `Run a Structured Streaming query with ckpt's micro-batch engine: it reads Kafka, writes
Spark 3.5-compatible offsets/ and commits/ to the checkpoint, and restarts by Spark's rules
(the same planner as ckpt replay). Option names are Spark's DataStreamReader/Writer options.

Try it with no setup:  ckpt run --demo

Triggers: default (next batch at once), an interval ("10s": processingTime), once, availableNow.
Sinks: kafka (topic, exactlyOnce), file (path, format=json|parquet), console (numRows, truncate), noop.
Async progress tracking (kafka, console, noop sinks): --sink-option asyncProgressTrackingEnabled=true,
asyncProgressTrackingCheckpointIntervalMs (1000; 0 = every batch). To switch it off: --async-switch-off.
Transform: --filter and --select take expressions over key, value, topic, partition, offset,
timestamp, timestampType, headers, e.g. --select 'CAST(value AS STRING) AS v' --select 'json(value, "user") AS user'.
Aggregation: --group-by 'string(key) AS k' --agg 'count(*) AS n, sum(int(string(value))) AS s'
--output-mode update|complete; the state is written as Spark's HDFS-backed store writes it.
Deduplication: --select 'string(key) AS k' --select 'partition AS p' --drop-duplicates 'k, p'
(Spark's dropDuplicates("k", "p")), output mode append or update. With a watermark:
--select timestamp --drop-duplicates 'k, timestamp' --watermark 'timestamp=10 seconds', or
--select timestamp --drop-duplicates-within-watermark k --watermark 'timestamp=10 seconds'.
Windows and watermark: --group-by "window(timestamp, '1 minute') AS w" --watermark 'timestamp=10 seconds'
--output-mode append emits each window once the watermark passes its end.`,
		Example: `  ckpt run --demo
  ckpt run --source kafka --option kafka.bootstrap.servers=host:9092 --option subscribe=in \
      --sink kafka --sink-option kafka.bootstrap.servers=host:9092 --sink-option topic=out \
      --checkpoint s3://bucket/ckpt --trigger 10s
  ckpt run -f query.yaml --max-batches 10`,
		Args: cli.ExactArgs(0, "no arguments (the query is given with flags or -f)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "file", "f", "", "query file (YAML) with the same keys as the flags; flags override it")
	f.StringVar(&o.Name, "name", "", "query name shown in progress events (Spark's queryName)")
	f.StringVar(&o.Source, "source", "", "source format (default kafka)")
	f.StringArrayVar(&o.SourceOpts, "option", nil, "source option key=value, Spark's names (repeatable): kafka.bootstrap.servers, subscribe, startingOffsets, maxOffsetsPerTrigger, …")
	f.StringVar(&o.Sink, "sink", "", "sink format: kafka, file (json, parquet), console, noop (default console)")
	f.StringArrayVar(&o.SinkOpts, "sink-option", nil, "sink option key=value (repeatable): topic, exactlyOnce, path, format, numRows, truncate, kafka.*")
	f.StringVar(&o.Checkpoint, "checkpoint", "", "checkpoint location: a directory, file://… or s3://bucket/prefix")
	f.StringVar(&o.Trigger, "trigger", "", "trigger: default, an interval such as 10s, once, availableNow")
	f.StringVar(&o.Filter, "filter", "", "keep rows where this expression is true")
	f.StringArrayVar(&o.Select, "select", nil, "output column: \"expression AS name\" or a column name (repeatable)")
	f.StringArrayVar(&o.GroupBy, "group-by", nil, "grouping column of a streaming aggregation: \"expression AS name\" or a column name (repeatable, or comma-separated)")
	f.StringArrayVar(&o.Agg, "agg", nil, "aggregate: \"count(*) AS n\", sum(e), min(e), max(e), avg(e) with AS name (repeatable, or comma-separated); needs --group-by")
	f.StringArrayVar(&o.DropDups, "drop-duplicates", nil, "column of Spark's dropDuplicates: a column name of the query (--select output or Kafka columns); a row whose values in these columns were seen before is dropped (repeatable, or comma-separated)")
	f.StringVar(&o.OutputMode, "output-mode", "", "output mode: append (default), update, complete (Spark's outputMode)")
	f.StringArrayVar(&o.DropDupsWM, "drop-duplicates-within-watermark", nil, "column of Spark's dropDuplicatesWithinWatermark (needs --watermark and --select timestamp): as --drop-duplicates, but a key is forgotten once the watermark passes its first row's event time plus the delay (repeatable, or comma-separated)")
	f.StringVar(&o.Watermark, "watermark", "", "event-time watermark of an aggregation or deduplication, COLUMN=DELAY (Spark's withWatermark): timestamp=10 seconds")
	f.StringArrayVar(&o.Conf, "conf", nil, "Spark SQL conf key=value: spark.sql.shuffle.partitions (200), spark.sql.streaming.minBatchesToRetain (100), spark.sql.streaming.fileSink.log.deletion (true), .compactInterval (10), .cleanupDelay (10m), spark.sql.streaming.stateStore.providerClass (HDFS-backed or RocksDB), .stateStore.rocksdb.changelogCheckpointing.enabled (false), .stateStore.minDeltasForSnapshot (10)")
	f.IntVar(&o.Parallelism, "parallelism", 0, "partitions read at once (default: one per partition, up to one per CPU, as Spark runs a task per core)")
	cli.AddOutputFlag(cmd, &o.Output)
	f.StringVar(&o.ProgressLog, "progress-log", "", "append each batch's progress event (JSON, one per line) to this file")
	f.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. :9464) at /metrics")
	f.DurationVar(&o.StopTimeout, "stop-timeout", query.DefaultStopTimeout, "on SIGINT/SIGTERM, wait this long for the running batch before abandoning it")
	f.StringVar(&o.FailAt, "fail-at", "", "crash drill: exit abruptly at batch=N,phase=after-offsets|mid-state-commit|mid-sink|before-commit")
	f.IntVar(&o.MaxBatches, "max-batches", 0, "stop after this many batches (0: no limit)")
	f.BoolVar(&o.AsyncSwitchOff, "async-switch-off", false, "switch async progress tracking off safely: run with it at interval 0 for 2 batches (Spark's procedure), then continue without it")
	f.StringVar(&o.SparkVersion, "spark-version", "", "Spark release that will read the checkpoint (3.5, 4.0, 4.1, …): Kafka offsets are written in its key order, which Spark compares as text (default: the checkpoint's order, else 3.5's)")
	_ = cmd.RegisterFlagCompletionFunc("spark-version", cobra.FixedCompletions(recovery.SparkVersions, cobra.ShellCompDirectiveNoFileComp))
	f.DurationVar(&o.Duration, "duration", 0, "stop gracefully after this long (0: no limit)")
	f.BoolVar(&o.Demo, "demo", false, "start an embedded Kafka broker with a generated topic and run a query on it")
	f.IntVar(&o.DemoRate, "demo-rate", demo.Rate, "records per second the --demo generator writes")
	f.IntVar(&o.DemoPartition, "demo-partitions", demo.Partitions, "partitions of the --demo topic")
	f.BoolVar(&o.Keep, "keep", false, "with --demo: keep the checkpoint folder and broker data it created (default: removed at the end)")
	return cmd
}

// buildQuery merges the file and the flags.
func buildQuery(o *Options) (*query.Query, error) {
	q := &query.Query{}
	if o.File != "" {
		fq, err := query.Load(o.File)
		if err != nil {
			return nil, exitcode.UsageError(err)
		}
		q = fq
	}
	flags := &query.Query{Name: o.Name, Source: o.Source, Sink: o.Sink, Checkpoint: o.Checkpoint, Trigger: o.Trigger,
		Filter: o.Filter, Select: o.Select, GroupBy: o.GroupBy, Agg: o.Agg, DropDuplicates: o.DropDups, DropDuplicatesWithinWatermark: o.DropDupsWM, OutputMode: o.OutputMode, Watermark: o.Watermark, Parallelism: o.Parallelism}
	var err error
	if flags.Options, err = query.ParseKV("option", o.SourceOpts); err != nil {
		return nil, exitcode.UsageError(err)
	}
	if flags.SinkOptions, err = query.ParseKV("sink-option", o.SinkOpts); err != nil {
		return nil, exitcode.UsageError(err)
	}
	if flags.Conf, err = query.ParseKV("conf", o.Conf); err != nil {
		return nil, exitcode.UsageError(err)
	}
	q.Merge(flags)
	return q, nil
}

// run validates every flag and the query before it starts anything (a --demo broker, a
// folder), then runs the query.
func run(ctx context.Context, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	format, err := cli.ParseOutput(o.Output)
	if err != nil {
		return err
	}
	failAt, err := engine.ParseFailAt(o.FailAt)
	if err != nil {
		return exitcode.UsageError(err)
	}
	if o.StopTimeout <= 0 {
		return exitcode.UsageError(fmt.Errorf("--stop-timeout must be positive"))
	}
	if o.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.MetricsAddr); err != nil {
			return exitcode.UsageError(fmt.Errorf("--metrics-addr %q: want host:port or :port: %v", o.MetricsAddr, err))
		}
	}
	if o.Keep && !o.Demo {
		return exitcode.UsageError(errors.New("--keep keeps what --demo creates: give --demo too"))
	}
	q, err := buildQuery(o)
	if err != nil {
		return err
	}
	if failAt != nil && failAt.Phase == engine.PhaseMidStateCommit && len(q.GroupBy) == 0 {
		// A drill that cannot fire would end as a clean run.
		return exitcode.UsageError(fmt.Errorf("--fail-at %s: phase mid-state-commit needs a stateful query (--group-by)", o.FailAt))
	}
	stderr := o.IO.ErrOut
	info := func(format string, a ...any) { fmt.Fprintf(stderr, "ckpt run: "+format+"\n", a...) }

	var d *demo.Demo
	if o.Demo {
		if d, err = demo.Prepare(q, demo.Options{Rate: o.DemoRate, Partitions: o.DemoPartition, Keep: o.Keep}); err != nil {
			return exitcode.UsageError(err)
		}
	}
	vq := q
	if d != nil {
		vq = q.Clone() // validated again once the demo's placeholders are replaced
	}
	r, err := validate(vq, o)
	if err != nil {
		return err
	}
	if d != nil {
		if err := d.Start(ctx, info); err != nil {
			return err
		}
		defer d.Close()
		// The broker's address and the demo's checkpoint replace the placeholders Prepare
		// validated with.
		if r, err = validate(q, o); err != nil {
			return err
		}
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		t := time.AfterFunc(o.Duration, cancel)
		defer t.Stop()
		defer cancel()
	}

	store, err := o.OpenStore(ctx, r.Checkpoint)
	if err != nil {
		return err
	}
	var progressLog io.Writer
	if o.ProgressLog != "" {
		f, err := os.OpenFile(o.ProgressLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		progressLog = f
	}
	metrics := engine.NewMetrics()
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		info("Prometheus metrics on http://%s/metrics", ln.Addr())
	}

	console := o.IO.Out
	if format == render.FormatJSON {
		console = stderr // stdout carries the progress events
	}
	live := o.IO.IsStderrTTY() && format != render.FormatJSON && r.Sink != query.SinkConsole
	status := &statusLine{w: stderr, enabled: live}
	var outMu sync.Mutex
	onProgress := func(p *engine.Progress) {
		line, _ := json.Marshal(p)
		outMu.Lock()
		defer outMu.Unlock()
		if progressLog != nil {
			fmt.Fprintf(progressLog, "%s\n", line)
		}
		if format == render.FormatJSON {
			fmt.Fprintf(o.IO.Out, "%s\n", line)
		}
		status.update(p)
	}
	opts := engine.Options{
		Query: r, Store: store, Log: &prefixWriter{w: stderr, status: status}, Console: console, OnProgress: onProgress, Metrics: metrics,
		StopTimeout: o.StopTimeout, MaxBatches: o.MaxBatches, FailAt: failAt, OpenStore: o.OpenStore,
		AsyncSwitchOff: o.AsyncSwitchOff, SparkVersion: o.SparkVersion,
	}
	eng, err := engine.New(ctx, opts)
	if err != nil {
		var oe *kafka.OptionError
		if errors.As(err, &oe) {
			return exitcode.UsageError(fmt.Errorf("invalid query: %v", err))
		}
		return err
	}
	info("query %s: %s → %s, trigger %s, checkpoint %s", describeName(r), r.Source, sinkName(r), r.Trigger, r.Checkpoint)
	// The liveness record tells repair, offsets reset, rewind and undo at once whether this
	// engine is alive, also after a kill -9.
	if hold, err := liveness.Hold(ctx, store, liveness.Options{Tool: "ckpt " + o.Version, Sink: string(r.Sink)}); err != nil {
		info("warning: %v (repair and rewind fall back to the file-age window)", err)
	} else {
		defer func() { _ = hold.Release(context.WithoutCancel(ctx)) }()
	}
	stats, err := eng.Run(ctx)
	status.done()
	if err != nil {
		var refused *engine.RefusedError
		if errors.As(err, &refused) {
			return exitcode.New(exitcode.Failure, errors.New(refusalText(refused)))
		}
		return err
	}
	switch stats.Stopped {
	case "abandoned":
		info("stopped: abandoned batch %d after its offsets were written (--stop-timeout %s); the next start re-runs it", *stats.AbandonedRun, o.StopTimeout)
	default:
		info("stopped (%s) after %d batch(es), %d row(s); %s; checkpoint %s", stopReason(stats.Stopped), stats.Batches, stats.Rows, lastCommitText(stats), r.Checkpoint)
	}
	return nil
}

// validate resolves the query and checks what the engine would refuse, as usage errors.
func validate(q *query.Query, o *Options) (*query.Resolved, error) {
	r, err := q.Validate()
	if err != nil {
		return nil, exitcode.UsageError(err)
	}
	if o.SparkVersion != "" {
		if err := recovery.ValidateSparkVersion(o.SparkVersion); err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("--spark-version: %v", err))
		}
	}
	if o.AsyncSwitchOff {
		if err := query.CheckSwitchOff(r); err != nil {
			return nil, exitcode.UsageError(err)
		}
	}
	if r.Source == query.SourceKafka {
		if _, err := engine.ParseKafkaSourceOptions(r); err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("invalid query: %v", err))
		}
	}
	return r, nil
}

// lastCommitText names the last batch whose commit is on disk, where a restart resumes. With
// async progress tracking that can be older than the last batch run, which is then said too.
func lastCommitText(s engine.Stats) string {
	id := func(n int64) string {
		if n < 0 {
			return "none"
		}
		return strconv.FormatInt(n, 10)
	}
	if s.LastBatch <= s.LastDurableCommit {
		return "last committed batch " + id(s.LastDurableCommit)
	}
	return fmt.Sprintf("last batch run %s, last commit on disk %s (async progress tracking persists only some commits: a restart resumes after batch %s)",
		id(s.LastBatch), id(s.LastDurableCommit), id(s.LastDurableCommit))
}

func stopReason(s string) string {
	switch s {
	case "signal":
		return "signal or --duration"
	case "":
		return "done"
	}
	return s
}

func describeName(r *query.Resolved) string {
	if r.Name != "" {
		return strconv.Quote(r.Name)
	}
	return "(unnamed)"
}

func sinkName(r *query.Resolved) string {
	if r.Sink == query.SinkFile {
		return r.FileFormat + " files in " + r.SinkPath
	}
	return r.Sink
}

// statusLine is the live one-line status on a terminal's stderr.
type statusLine struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	shown   bool
	rows    int64
	batches int
}

func (s *statusLine) update(p *engine.Progress) {
	if !s.enabled {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows += p.NumInputRows
	s.batches++
	lag := ""
	if len(p.Sources) > 0 && p.Sources[0].Metrics != nil {
		lag = " · lag " + p.Sources[0].Metrics["maxOffsetsBehindLatest"]
	}
	fmt.Fprintf(s.w, "\r\033[Kbatch %d · %d rows in %d ms (%.0f rows/s) · total %d rows in %d batches%s",
		p.BatchID, p.NumInputRows, p.DurationMs["triggerExecution"], p.ProcessedRowsPerSecond, s.rows, s.batches, lag)
	s.shown = true
}

// clear removes the status line before other output.
func (s *statusLine) clear() {
	if s.enabled && s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

func (s *statusLine) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled && s.shown {
		fmt.Fprintln(s.w)
		s.shown = false
	}
}

// prefixWriter prints engine log lines on stderr, clearing the status line first.
type prefixWriter struct {
	w      io.Writer
	status *statusLine
	mu     sync.Mutex
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status.mu.Lock()
	p.status.clear()
	p.status.mu.Unlock()
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(p.w, "ckpt run: "+line); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
