// Package run implements `ckpt run`: the Spark-compatible micro-batch engine (internal/engine).
package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/broker"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/engine"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/liveness"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// Demo defaults.
const (
	DemoTopic      = "demo"
	DemoPartitions = 3
	DemoRate       = 5 // records per second
	DemoTrigger    = "2s"
)

// Options are the flags of `ckpt run`.
type Options struct {
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

	Demo          bool
	DemoRate      int
	DemoPartition int
}

// NewCmd builds `ckpt run`. runF replaces the run function in tests.
func NewCmd(env *cli.Env, runF func(context.Context, *cli.Env, *Options) error) *cobra.Command {
	o := &Options{}
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
timestamp, timestampType, headers, e.g. --select 'CAST(value AS STRING) AS v' --select 'json(value, "user") AS user'.`,
		Example: `  ckpt run --demo
  ckpt run --source kafka --option kafka.bootstrap.servers=host:9092 --option subscribe=in \
      --sink kafka --sink-option kafka.bootstrap.servers=host:9092 --sink-option topic=out \
      --checkpoint s3://bucket/ckpt --trigger 10s
  ckpt run -f query.yaml --max-batches 10`,
		Args: cli.ExactArgs(0, "no arguments (the query is given with flags or -f)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), env, o)
			}
			return Run(cmd.Context(), env, o)
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
	f.StringArrayVar(&o.Conf, "conf", nil, "Spark SQL conf key=value: spark.sql.shuffle.partitions (200), spark.sql.streaming.minBatchesToRetain (100)")
	f.IntVar(&o.Parallelism, "parallelism", 0, "partitions read at once (default: one per partition, up to 4×CPUs)")
	cli.AddOutputFlag(cmd, &o.Output)
	f.StringVar(&o.ProgressLog, "progress-log", "", "append each batch's progress event (JSON, one per line) to this file")
	f.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. :9464) at /metrics")
	f.DurationVar(&o.StopTimeout, "stop-timeout", query.DefaultStopTimeout, "on SIGINT/SIGTERM, wait this long for the running batch before abandoning it")
	f.StringVar(&o.FailAt, "fail-at", "", "crash drill: exit abruptly at batch=N,phase=after-offsets|mid-sink|before-commit")
	f.IntVar(&o.MaxBatches, "max-batches", 0, "stop after this many batches (0: no limit)")
	f.BoolVar(&o.AsyncSwitchOff, "async-switch-off", false, "switch async progress tracking off safely: run with it at interval 0 for 2 batches (Spark's procedure), then continue without it")
	f.DurationVar(&o.Duration, "duration", 0, "stop gracefully after this long (0: no limit)")
	f.BoolVar(&o.Demo, "demo", false, "start an embedded Kafka broker with a generated topic and run a query on it")
	f.IntVar(&o.DemoRate, "demo-rate", DemoRate, "records per second the --demo generator writes")
	f.IntVar(&o.DemoPartition, "demo-partitions", DemoPartitions, "partitions of the --demo topic")
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
		Filter: o.Filter, Select: o.Select, Parallelism: o.Parallelism}
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

// Run runs the query.
func Run(ctx context.Context, env *cli.Env, o *Options) error {
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
	q, err := buildQuery(o)
	if err != nil {
		return err
	}
	stderr := env.IO.ErrOut
	info := func(format string, a ...any) { fmt.Fprintf(stderr, "ckpt run: "+format+"\n", a...) }

	if o.Demo {
		cleanup, err := setupDemo(ctx, o, q, info)
		if err != nil {
			return err
		}
		defer cleanup()
	}
	r, err := q.Validate()
	if err != nil {
		return exitcode.UsageError(err)
	}
	if o.AsyncSwitchOff {
		if err := checkSwitchOff(r); err != nil {
			return exitcode.UsageError(err)
		}
	}
	if r.Source == query.SourceKafka {
		if _, err := engine.ParseKafkaSourceOptions(r); err != nil {
			return exitcode.UsageError(fmt.Errorf("invalid query: %v", err))
		}
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		t := time.AfterFunc(o.Duration, cancel)
		defer t.Stop()
		defer cancel()
	}

	store, err := env.OpenStore(ctx, r.Checkpoint)
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

	console := env.IO.Out
	if format == render.FormatJSON {
		console = stderr // stdout carries the progress events
	}
	live := env.IO.IsStderrTTY() && format != render.FormatJSON && r.Sink != query.SinkConsole
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
			fmt.Fprintf(env.IO.Out, "%s\n", line)
		}
		status.update(p)
	}
	opts := engine.Options{
		Query: r, Store: store, Log: &prefixWriter{w: stderr, status: status}, Console: console, OnProgress: onProgress, Metrics: metrics,
		StopTimeout: o.StopTimeout, MaxBatches: o.MaxBatches, FailAt: failAt, OpenStore: env.OpenStore,
		AsyncSwitchOff: o.AsyncSwitchOff,
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
	if hold, err := liveness.Hold(ctx, store, liveness.Options{Tool: "ckpt " + env.Version, Sink: string(r.Sink)}); err != nil {
		info("warning: %v (repair and rewind fall back to the file-age window)", err)
	} else {
		defer func() { _ = hold.Release(context.WithoutCancel(ctx)) }()
	}
	stats, err := eng.Run(ctx)
	status.done()
	if err != nil {
		var refused *engine.RefusedError
		if errors.As(err, &refused) {
			return exitcode.New(exitcode.Failure, err)
		}
		return err
	}
	switch stats.Stopped {
	case "abandoned":
		info("stopped: abandoned batch %d after its offsets were written (--stop-timeout %s); the next start re-runs it", *stats.AbandonedRun, o.StopTimeout)
	default:
		last := "none"
		if stats.LastBatch >= 0 {
			last = strconv.FormatInt(stats.LastBatch, 10)
		}
		info("stopped (%s) after %d batch(es), %d row(s); last committed batch %s; checkpoint %s", stopReason(stats.Stopped), stats.Batches, stats.Rows, last, r.Checkpoint)
	}
	return nil
}

// checkSwitchOff: --async-switch-off runs the query with async progress tracking for its first
// batches, so Spark's async validations apply; the query itself must be the one without it.
func checkSwitchOff(r *query.Resolved) error {
	var errs []string
	if r.AsyncProgressTracking {
		errs = append(errs, "--async-switch-off switches async progress tracking off: remove the sink option "+query.OptAsyncProgressTracking+"=true")
	}
	if r.Sink == query.SinkFile {
		errs = append(errs, fmt.Sprintf("--async-switch-off runs the query with async progress tracking, and Spark refuses it for this sink: Sink FileSink[%s] does not support async progress tracking; use ckpt repair instead", r.SinkPath))
	}
	switch r.Trigger.Kind {
	case query.TriggerOnce:
		errs = append(errs, "--async-switch-off runs the query with async progress tracking: Async progress tracking cannot be used with Once trigger")
	case query.TriggerAvailableNow:
		errs = append(errs, "--async-switch-off runs the query with async progress tracking: Async progress tracking cannot be used with AvailableNow trigger")
	}
	if len(errs) > 0 {
		return &query.Error{Problems: errs}
	}
	return nil
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

// setupDemo starts the embedded broker and fills in the demo query.
func setupDemo(ctx context.Context, o *Options, q *query.Query, info func(string, ...any)) (func(), error) {
	if o.DemoRate < 0 || o.DemoPartition <= 0 {
		return nil, exitcode.UsageError(errors.New("--demo-rate must be ≥ 0 and --demo-partitions > 0"))
	}
	if q.Options["kafka.bootstrap.servers"] != "" {
		return nil, exitcode.UsageError(errors.New("--demo runs its own broker: leave out kafka.bootstrap.servers"))
	}
	bopts := broker.Options{
		Topics:   []broker.TopicSpec{{Name: DemoTopic, Partitions: int32(o.DemoPartition)}},
		Generate: &broker.GeneratorSpec{Topic: DemoTopic, Rate: o.DemoRate},
	}
	if q.Checkpoint != "" {
		// A named checkpoint outlives this process, so the broker's log must too: otherwise a
		// restart finds the topic empty and reports data loss, as Spark would.
		sum := sha256.Sum256([]byte(q.Checkpoint))
		bopts.DataDir = filepath.Join(os.TempDir(), "ckpt-demo-broker-"+hex.EncodeToString(sum[:6]))
		info("broker data in %s (kept so that a restart on the same checkpoint finds its data)", bopts.DataDir)
	}
	b, err := broker.Start(context.WithoutCancel(ctx), bopts)
	if err != nil {
		return nil, err
	}
	cleanup := []func(){b.Close}
	run := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	info("started an embedded Kafka broker on %s: topic %q (%d partitions), %d generated records/s", b.Addr(), DemoTopic, o.DemoPartition, o.DemoRate)
	if q.Options == nil {
		q.Options = map[string]string{}
	}
	q.Options["kafka.bootstrap.servers"] = b.Addr()
	if q.Options["subscribe"] == "" && q.Options["subscribePattern"] == "" && q.Options["assign"] == "" {
		q.Options["subscribe"] = DemoTopic
	}
	if q.Options["startingOffsets"] == "" {
		q.Options["startingOffsets"] = "earliest"
	}
	if q.Sink == query.SinkKafka && q.SinkOptions["kafka.bootstrap.servers"] == "" {
		if q.SinkOptions == nil {
			q.SinkOptions = map[string]string{}
		}
		q.SinkOptions["kafka.bootstrap.servers"] = b.Addr()
	}
	if q.Trigger == "" {
		q.Trigger = DemoTrigger
	}
	if len(q.Select) == 0 && (q.Sink == "" || q.Sink == query.SinkConsole) {
		q.Select = []string{"CAST(key AS STRING) AS key", `json(value, "amount") AS amount`, "partition", "offset", "CAST(value AS STRING) AS value"}
	}
	if q.Checkpoint == "" && q.SinkOptions["checkpointLocation"] == "" {
		dir, err := os.MkdirTemp("", "ckpt-demo-")
		if err != nil {
			run()
			return nil, err
		}
		q.Checkpoint = dir
		info("checkpoint in %s (inspect it later with: ckpt doctor %s)", dir, dir)
	}
	info("stop with Ctrl-C (or --max-batches N / --duration 30s)")
	return run, nil
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
