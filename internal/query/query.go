// Package query is the definition of a `ckpt run` query: what to read, how to transform it, where
// to write it, where to checkpoint and when to trigger. It comes from command-line flags, from a
// YAML file (-f query.yaml) holding the same keys, or both (flags win). Option names are Spark's
// (DataStreamReader/DataStreamWriter .option keys), so a query moves to Spark unchanged.
//
// Validate rejects unknown keys and bad values with a message that names the key, before anything
// is written. Kafka source and sink options are checked in depth by internal/kafka when the engine
// prepares the query, also before anything is written.
package query

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ckpt-dev/ckpt/internal/flagfile"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// Source formats.
const (
	SourceKafka = "kafka"
)

// Sink formats. "json" and "parquet" are the file sink with that format, as in Spark's
// writeStream.format("json").
const (
	SinkKafka   = "kafka"
	SinkFile    = "file"
	SinkJSON    = "json"
	SinkParquet = "parquet"
	SinkConsole = "console"
	SinkNoop    = "noop"
)

// Spark SQL confs a query may set with --conf; the first two are recorded in every offsets file.
const (
	ConfShufflePartitions  = "spark.sql.shuffle.partitions"
	ConfMinBatchesToRetain = "spark.sql.streaming.minBatchesToRetain"
	// The file sink's log (CompactibleFileStreamLog): whether expired log files are deleted
	// (default true), the compact interval (default 10) and how old an expired file must be
	// before it is deleted (default 10m; a number alone is milliseconds, as in Spark).
	ConfFileSinkLogDeletion        = "spark.sql.streaming.fileSink.log.deletion"
	ConfFileSinkLogCompactInterval = "spark.sql.streaming.fileSink.log.compactInterval"
	ConfFileSinkLogCleanupDelay    = "spark.sql.streaming.fileSink.log.cleanupDelay"
	// The state store of a stateful query (docs/engine.md "State providers and maintenance"):
	// the provider class (recorded in the offsets log), RocksDB's changelog checkpointing, and
	// how many deltas (changelogs) since the last snapshot make the next one.
	ConfStateProvider        = "spark.sql.streaming.stateStore.providerClass"
	ConfRocksDBChangelog     = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
	ConfMinDeltasForSnapshot = "spark.sql.streaming.stateStore.minDeltasForSnapshot"
)

// The state store providers ckpt run writes (the same class names in Spark 3.5 to 4.2).
const (
	HDFSStateProvider    = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
	RocksDBStateProvider = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
	// DefaultMinDeltasForSnapshot is spark.sql.streaming.stateStore.minDeltasForSnapshot's default.
	DefaultMinDeltasForSnapshot = 10
)

// KnownConfs are the confs --conf accepts.
var KnownConfs = []string{ConfShufflePartitions, ConfMinBatchesToRetain, ConfFileSinkLogDeletion, ConfFileSinkLogCompactInterval, ConfFileSinkLogCleanupDelay,
	ConfStateProvider, ConfRocksDBChangelog, ConfMinDeltasForSnapshot}

// Defaults of the file sink log confs (Spark's).
const (
	DefaultFileSinkCompactInterval = 10
	DefaultFileSinkCleanupDelay    = 10 * time.Minute
)

// ParseSparkTime parses a Spark time conf value (JavaUtils.timeStringAsMs): an integer with an
// optional unit us, ms, s, m, min, h or d; without a unit, unit is assumed.
func ParseSparkTime(v string, unit time.Duration) (time.Duration, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid time %q: want a number with an optional unit (us, ms, s, m, min, h, d)", v)
	}
	units := map[string]time.Duration{"": unit, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second,
		"m": time.Minute, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[s[i:]]
	if !ok {
		return 0, fmt.Errorf("invalid time %q: unknown unit %q (us, ms, s, m, min, h, d)", v, s[i:])
	}
	return time.Duration(n) * u, nil
}

// Defaults.
const (
	DefaultShufflePartitions = 200 // spark.sql.shuffle.partitions
	DefaultParallelism       = 0   // 0: one reader per partition, up to GOMAXPROCS (as Spark runs a task per core)
	DefaultStopTimeout       = 30 * time.Second
	DefaultConsoleNumRows    = 20
	// DefaultAsyncCheckpointIntervalMs is asyncProgressTrackingCheckpointIntervalMs's default.
	DefaultAsyncCheckpointIntervalMs = 1000
)

// Async progress tracking writer options (Spark's AsyncProgressTrackingMicroBatchExecution); they
// are DataStreamWriter options, so they are given as sink options.
const (
	OptAsyncProgressTracking   = "asyncProgressTrackingEnabled"
	OptAsyncCheckpointInterval = "asyncProgressTrackingCheckpointIntervalMs"
)

// TriggerKind is the kind of a trigger.
type TriggerKind string

// Trigger kinds, as in Spark's Trigger class.
const (
	TriggerDefault        TriggerKind = "default"        // ProcessingTime(0): next batch as soon as the last ends
	TriggerProcessingTime TriggerKind = "processingTime" // every Interval; an overrunning batch is followed at once
	TriggerOnce           TriggerKind = "once"           // one batch with everything available, then stop
	TriggerAvailableNow   TriggerKind = "availableNow"   // everything available at start, in rate-limited batches, then stop
)

// Trigger says when batches run.
type Trigger struct {
	Kind     TriggerKind
	Interval time.Duration // processingTime only
}

func (t Trigger) String() string {
	if t.Kind == TriggerProcessingTime {
		return "processingTime=" + t.Interval.String()
	}
	return string(t.Kind)
}

// ParseTrigger reads a --trigger value: "" or "default"; "once"; "availableNow"; an interval as
// a Go duration ("10s"), Spark's interval text ("10 seconds") or "processingTime=10s".
func ParseTrigger(s string) (Trigger, error) {
	v := strings.TrimSpace(s)
	switch strings.ToLower(v) {
	case "", "default":
		return Trigger{Kind: TriggerDefault}, nil
	case "once":
		return Trigger{Kind: TriggerOnce}, nil
	case "availablenow", "available-now":
		return Trigger{Kind: TriggerAvailableNow}, nil
	}
	if k, rest, ok := strings.Cut(v, "="); ok {
		if !strings.EqualFold(strings.TrimSpace(k), "processingTime") {
			return Trigger{}, fmt.Errorf("invalid trigger %q: want default, once, availableNow or an interval such as 10s", s)
		}
		v = strings.TrimSpace(rest)
	}
	d, err := parseInterval(v)
	if err != nil || d < 0 {
		return Trigger{}, fmt.Errorf("invalid trigger %q: want default, once, availableNow or an interval such as 10s or \"10 seconds\"", s)
	}
	if d == 0 {
		return Trigger{Kind: TriggerDefault}, nil
	}
	return Trigger{Kind: TriggerProcessingTime, Interval: d}, nil
}

var sparkInterval = regexp.MustCompile(`^(?i)(?:interval\s+)?(\d+)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)$`)

func parseInterval(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(n) * time.Millisecond, nil // Spark: a bare number is milliseconds
	}
	m := sparkInterval.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0, errors.New("bad interval")
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	unit := strings.ToLower(m[2])
	switch {
	case unit == "ms" || strings.HasPrefix(unit, "milli"):
		return time.Duration(n) * time.Millisecond, nil
	case unit == "s" || strings.HasPrefix(unit, "sec"):
		return time.Duration(n) * time.Second, nil
	case unit == "m" || strings.HasPrefix(unit, "min"):
		return time.Duration(n) * time.Minute, nil
	default:
		return time.Duration(n) * time.Hour, nil
	}
}

// Query is a query definition. The YAML keys are the field tags.
type Query struct {
	// Name is the query name shown in progress events (Spark's queryName). Default: none.
	Name string `yaml:"name,omitempty"`
	// Source is the source format. Default and only value: kafka.
	Source string `yaml:"source,omitempty"`
	// Options are the source options (Spark's readStream.option): kafka.bootstrap.servers,
	// subscribe, startingOffsets, maxOffsetsPerTrigger, ….
	Options map[string]string `yaml:"options,omitempty"`
	// Sink is the sink format: kafka, file (or json, parquet), console, noop. Default: console.
	Sink string `yaml:"sink,omitempty"`
	// SinkOptions are the sink options (Spark's writeStream.option).
	SinkOptions map[string]string `yaml:"sinkOptions,omitempty"`
	// Checkpoint is the checkpoint location (Spark's checkpointLocation): a path, file://,
	// s3://bucket/prefix. Also accepted as the sink option checkpointLocation.
	Checkpoint string `yaml:"checkpoint,omitempty"`
	// Trigger: default, once, availableNow, or an interval ("10s"). Default: default.
	Trigger string `yaml:"trigger,omitempty"`
	// Filter is a boolean expression over the Kafka columns; rows where it is false are dropped.
	Filter string `yaml:"filter,omitempty"`
	// Select is the projection: items "expression AS name" or bare column names. Default: the
	// Kafka columns unchanged.
	Select []string `yaml:"select,omitempty"`
	// GroupBy are the grouping columns of a streaming aggregation: items "expression AS name"
	// or Kafka column names, over the Kafka columns (after Filter). Needs Agg.
	GroupBy []string `yaml:"groupBy,omitempty"`
	// Agg are the aggregates: "fn(expression) AS name" with fn count (count(*) counts rows),
	// sum, min, max or avg; an item may hold several separated by commas.
	Agg []string `yaml:"agg,omitempty"`
	// DropDuplicates are the columns of Spark's dropDuplicates(cols): names of the query's
	// columns (the --select output, or the Kafka columns without one); a row whose values in
	// these columns were seen in an earlier row is dropped. Items may be comma-separated.
	DropDuplicates []string `yaml:"dropDuplicates,omitempty"`
	// DropDuplicatesWithinWatermark are the columns of Spark's dropDuplicatesWithinWatermark
	// (Spark 3.5+): as DropDuplicates, but a key is forgotten once the watermark passes its
	// first row's event time plus the watermark delay. Needs Watermark.
	DropDuplicatesWithinWatermark []string `yaml:"dropDuplicatesWithinWatermark,omitempty"`
	// OutputMode is Spark's outputMode: append (the default), update or complete.
	OutputMode string `yaml:"outputMode,omitempty"`
	// Watermark is Spark's withWatermark as COLUMN=DELAY ("timestamp=10 seconds"): the
	// event-time column (the Kafka column timestamp) and how late a row may be.
	Watermark string `yaml:"watermark,omitempty"`
	// Conf are Spark SQL confs: spark.sql.shuffle.partitions (recorded in offsets, default 200)
	// and spark.sql.streaming.minBatchesToRetain (default 100).
	Conf map[string]string `yaml:"conf,omitempty"`
	// Parallelism bounds concurrent partition reads. Default 0: one per partition, up to
	// GOMAXPROCS (one reader per CPU, as Spark runs a task per core).
	Parallelism int `yaml:"parallelism,omitempty"`
}

// Load reads a YAML query file. Unknown keys are errors.
func Load(path string) (*Query, error) {
	data, err := flagfile.Read("--file", path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses YAML query text; name is used in errors.
func Parse(name string, data []byte) (*Query, error) {
	var q Query
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&q); err != nil {
		if errors.Is(err, io.EOF) {
			return &q, nil
		}
		return nil, fmt.Errorf("%s: %v", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return &q, nil
}

// Merge overlays the non-zero fields of o (the flags) on q (the file). Options maps are merged
// key by key.
func (q *Query) Merge(o *Query) {
	if o.Name != "" {
		q.Name = o.Name
	}
	if o.Source != "" {
		q.Source = o.Source
	}
	if o.Sink != "" {
		q.Sink = o.Sink
	}
	if o.Checkpoint != "" {
		q.Checkpoint = o.Checkpoint
	}
	if o.Trigger != "" {
		q.Trigger = o.Trigger
	}
	if o.Filter != "" {
		q.Filter = o.Filter
	}
	if len(o.Select) > 0 {
		q.Select = o.Select
	}
	if len(o.GroupBy) > 0 {
		q.GroupBy = o.GroupBy
	}
	if len(o.Agg) > 0 {
		q.Agg = o.Agg
	}
	if len(o.DropDuplicates) > 0 {
		q.DropDuplicates = o.DropDuplicates
	}
	if len(o.DropDuplicatesWithinWatermark) > 0 {
		q.DropDuplicatesWithinWatermark = o.DropDuplicatesWithinWatermark
	}
	if o.OutputMode != "" {
		q.OutputMode = o.OutputMode
	}
	if o.Watermark != "" {
		q.Watermark = o.Watermark
	}
	if o.Parallelism != 0 {
		q.Parallelism = o.Parallelism
	}
	q.Options = mergeMap(q.Options, o.Options)
	q.SinkOptions = mergeMap(q.SinkOptions, o.SinkOptions)
	q.Conf = mergeMap(q.Conf, o.Conf)
}

func mergeMap(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}

// ParseKV parses repeated key=value flags into a map; a repeated key is an error.
func ParseKV(flag string, items []string) (map[string]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, it)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("--%s: %s given twice", flag, k)
		}
		m[k] = v
	}
	return m, nil
}

// Resolved is a validated query with parsed values.
type Resolved struct {
	*Query
	Trigger            Trigger
	Program            *transform.Program
	MinBatchesToRetain int
	ShufflePartitions  int
	// StateProvider is the state store provider a new stateful query records (HDFS by
	// default); RocksDBChangelog and MinDeltasForSnapshot are the session confs its state
	// store reads (not recorded in the offsets log, as in Spark).
	StateProvider        string
	RocksDBChangelog     bool
	MinDeltasForSnapshot int
	// FileSinkLogDeletion, FileSinkCompactInterval and FileSinkCleanupDelay are the file sink
	// log confs (spark.sql.streaming.fileSink.log.*): true, 10 and 10 minutes by default.
	FileSinkLogDeletion     bool
	FileSinkCompactInterval int
	FileSinkCleanupDelay    time.Duration
	// FileFormat is json or parquet for the file sink.
	FileFormat string
	// SinkPath is the file sink's output directory.
	SinkPath string
	// ConsoleNumRows and ConsoleTruncate configure the console sink.
	ConsoleNumRows  int
	ConsoleTruncate bool
	// AsyncProgressTracking is asyncProgressTrackingEnabled; AsyncCheckpointIntervalMs is
	// asyncProgressTrackingCheckpointIntervalMs (0: every batch is persisted).
	AsyncProgressTracking     bool
	AsyncCheckpointIntervalMs int64
	// Grouping is the streaming aggregation (nil: a stateless query); OutputMode the output
	// mode (OutputAppend, OutputUpdate, OutputComplete).
	Grouping   *transform.Grouping
	OutputMode string
	// Dedup is the deduplication (Spark's dropDuplicates over columns); nil for none.
	Dedup *Dedup
	// WatermarkColumn and WatermarkDelayMs are the parsed Watermark ("" for none).
	WatermarkColumn  string
	WatermarkDelayMs int64
}

// Dedup is a resolved dropDuplicates: the indexes of its columns in Program.Columns(), in
// the order given (the order of the state key's fields, as Spark keeps them).
type Dedup struct {
	Columns []int
	// EventTime is the position in Columns of the watermark's event-time column: dropDuplicates
	// with --watermark; -1 otherwise (every key kept, or WithinWatermark).
	EventTime int
	// WithinWatermark: dropDuplicatesWithinWatermark, whose state value is the key's expiry.
	WithinWatermark bool
}

// Output modes (Spark's OutputMode).
const (
	OutputAppend   = "append"
	OutputUpdate   = "update"
	OutputComplete = "complete"
)

// Spark's refusals of an output mode (UnsupportedOperationChecker.checkForStreaming): append
// with an aggregation and no watermark in 3.5 and in 4.x (an error class since 4.0; the live
// hand-over test checks each against the release), complete without an aggregation.
const (
	SparkAppendAggregation  = "Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark"
	SparkAppendAggregation4 = "[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: append. This output mode is not supported for streaming aggregations without watermark on streaming DataFrames/DataSets. SQLSTATE: 42KDE"
	SparkCompleteStateless  = "Complete output mode not supported when there are no streaming aggregations on streaming DataFrames/Datasets"
	// SparkCompleteStateless4 is Spark 4's text for complete mode without an aggregation
	// (Spark 4.2.0's refusal of a dropDuplicates query, TestSparkLiveDedupHandOver).
	SparkCompleteStateless4 = "[STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: complete. This output mode is not supported for no streaming aggregations on streaming DataFrames/DataSets. SQLSTATE: 42KDE"
)

// sink option keys accepted per sink (kafka sink options are checked by internal/kafka).
var sinkKeys = map[string][]string{
	SinkFile:    {"path", "format", "checkpointLocation"},
	SinkConsole: {"numRows", "truncate", "checkpointLocation"},
	SinkNoop:    {"checkpointLocation"},
}

// Validate checks q and returns the parsed form. Every problem found is reported, one per line.
func (q *Query) Validate() (*Resolved, error) {
	r := &Resolved{Query: q, MinBatchesToRetain: logformat.DefaultMinBatchesToRetain, ShufflePartitions: DefaultShufflePartitions, StateProvider: HDFSStateProvider, MinDeltasForSnapshot: DefaultMinDeltasForSnapshot, ConsoleNumRows: DefaultConsoleNumRows, ConsoleTruncate: true,
		AsyncCheckpointIntervalMs: DefaultAsyncCheckpointIntervalMs,
		FileSinkLogDeletion:       true, FileSinkCompactInterval: DefaultFileSinkCompactInterval, FileSinkCleanupDelay: DefaultFileSinkCleanupDelay}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	if q.Source == "" {
		q.Source = SourceKafka
	}
	if q.Source != SourceKafka {
		bad("unknown source %q: the only source is kafka", q.Source)
	}
	if q.Sink == "" {
		q.Sink = SinkConsole
	}
	switch q.Sink {
	case SinkJSON, SinkParquet:
		if f, ok := q.SinkOptions["format"]; ok && f != q.Sink {
			bad("sink %s with sink option format=%s: give one or the other", q.Sink, f)
		}
		r.FileFormat = q.Sink
		q.Sink = SinkFile
	case SinkFile:
		r.FileFormat = "json"
		if f, ok := q.SinkOptions["format"]; ok {
			if f != "json" && f != "parquet" {
				bad("sink option format=%q: want json or parquet", f)
			}
			r.FileFormat = f
		}
	case SinkKafka, SinkConsole, SinkNoop:
	default:
		bad("unknown sink %q: want kafka, file (json, parquet), console or noop", q.Sink)
	}
	// The async progress tracking options are writer options of every sink (Spark checks the
	// sink below); they never reach the sink itself.
	if v, ok := q.SinkOptions[OptAsyncProgressTracking]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			r.AsyncProgressTracking = true
		case "false":
		default:
			bad("sink option %s=%q: want true or false", OptAsyncProgressTracking, v)
		}
		delete(q.SinkOptions, OptAsyncProgressTracking)
	}
	if v, ok := q.SinkOptions[OptAsyncCheckpointInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			bad("sink option %s=%q: want a number of milliseconds ≥ 0 (0: persist every batch)", OptAsyncCheckpointInterval, v)
		}
		r.AsyncCheckpointIntervalMs = n
		delete(q.SinkOptions, OptAsyncCheckpointInterval)
	}
	if keys, ok := sinkKeys[q.Sink]; ok {
		for _, k := range sortedKeys(q.SinkOptions) {
			if !slices.Contains(keys, k) {
				bad("unknown %s sink option %q (known: %s)", q.Sink, k, strings.Join(keys, ", "))
			}
		}
	}
	if cl, ok := q.SinkOptions["checkpointLocation"]; ok {
		if q.Checkpoint != "" && q.Checkpoint != cl {
			bad("--checkpoint %q and sink option checkpointLocation=%q differ", q.Checkpoint, cl)
		}
		q.Checkpoint = cl
		delete(q.SinkOptions, "checkpointLocation")
	}
	switch q.Sink {
	case SinkFile:
		r.SinkPath = q.SinkOptions["path"]
		if r.SinkPath == "" {
			bad("the file sink needs an output directory: --sink-option path=DIR")
		}
	case SinkConsole:
		if v, ok := q.SinkOptions["numRows"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				bad("console sink option numRows=%q: want a number ≥ 0", v)
			}
			r.ConsoleNumRows = n
		}
		if v, ok := q.SinkOptions["truncate"]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				bad("console sink option truncate=%q: want true or false", v)
			}
			r.ConsoleTruncate = b
		}
	}
	if q.Checkpoint == "" {
		bad("no checkpoint location: give --checkpoint PATH (a directory, file://… or s3://bucket/prefix)")
	}
	t, err := ParseTrigger(q.Trigger)
	if err != nil {
		bad("%v", err)
	}
	r.Trigger = t
	if r.AsyncProgressTracking {
		// AsyncProgressTrackingMicroBatchExecution.validateAndGetTrigger: the sink check first,
		// then the trigger, with Spark's texts.
		for _, s := range AsyncRefusals(r) {
			bad("%s", s)
		}
	}
	for _, k := range sortedKeys(q.Conf) {
		v := q.Conf[k]
		switch k {
		case ConfMinBatchesToRetain:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				bad("--conf %s=%q: want a number ≥ 1", k, v)
			}
			r.MinBatchesToRetain = n
		case ConfShufflePartitions:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				bad("--conf %s=%q: want a number ≥ 1", k, v)
			}
			r.ShufflePartitions = n
		case ConfStateProvider:
			switch strings.TrimSpace(v) {
			case HDFSStateProvider, RocksDBStateProvider:
				r.StateProvider = strings.TrimSpace(v)
			default:
				bad("--conf %s=%q: ckpt run writes the state of %s or %s", k, v, HDFSStateProvider, RocksDBStateProvider)
			}
		case ConfRocksDBChangelog:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				bad("--conf %s=%q: want true or false", k, v)
			}
			r.RocksDBChangelog = b
		case ConfMinDeltasForSnapshot:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				bad("--conf %s=%q: want a number ≥ 1", k, v)
			}
			r.MinDeltasForSnapshot = n
		case ConfFileSinkLogDeletion:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				bad("--conf %s=%q: want true or false", k, v)
			}
			r.FileSinkLogDeletion = b
		case ConfFileSinkLogCompactInterval:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				// Spark: require(compactInterval > 0)
				bad("--conf %s=%q: want a number ≥ 1", k, v)
			}
			r.FileSinkCompactInterval = n
		case ConfFileSinkLogCleanupDelay:
			d, err := ParseSparkTime(v, time.Millisecond)
			if err != nil || d < 0 {
				bad("--conf %s=%q: want a duration ≥ 0 such as 10m or 600000 (milliseconds)", k, v)
			}
			r.FileSinkCleanupDelay = d
		default:
			bad("unknown --conf %s (known: %s)", k, strings.Join(KnownConfs, ", "))
		}
	}
	if q.Parallelism < 0 {
		bad("--parallelism %d: want ≥ 0 (0 = one reader per partition)", q.Parallelism)
	}
	switch m := strings.ToLower(strings.TrimSpace(q.OutputMode)); m {
	case "", OutputAppend:
		r.OutputMode = OutputAppend
	case OutputUpdate, OutputComplete:
		r.OutputMode = m
	default:
		bad("unknown output mode %q: want append, update or complete", q.OutputMode)
	}
	var outCols []transform.Column
	if len(q.DropDuplicates)+len(q.DropDuplicatesWithinWatermark) > 0 && (len(q.GroupBy) > 0 || len(q.Agg) > 0) {
		bad("--drop-duplicates with --group-by is not supported yet: ckpt run runs one stateful operator per query")
	}
	if len(q.GroupBy) > 0 || len(q.Agg) > 0 {
		if len(q.Select) > 0 {
			bad("--select with --group-by is not supported yet: write the expressions in --group-by and --agg")
		}
		g, err := transform.CompileGrouping(q.Filter, q.GroupBy, q.Agg)
		if err != nil {
			bad("%v", err)
		} else {
			r.Grouping = g
			outCols = g.Columns()
		}
		for _, p := range r.resolveWatermark() {
			bad("%s", p)
		}
		if r.OutputMode == OutputAppend && (r.Grouping == nil || r.Grouping.EventTimeKey(r.WatermarkColumn) < 0) && r.WatermarkColumn != "" {
			bad("%s (Spark 3.5's AnalysisException; Spark 4: %s). Append mode needs a grouping column that carries the watermark: window(%s, ...) or %s itself", SparkAppendAggregation, SparkAppendAggregation4, r.WatermarkColumn, r.WatermarkColumn)
		} else if r.OutputMode == OutputAppend && r.WatermarkColumn == "" {
			bad("%s (Spark 3.5's AnalysisException; Spark 4: %s). Add --watermark timestamp=DELAY and group by window(timestamp, ...), or use --output-mode update or complete", SparkAppendAggregation, SparkAppendAggregation4)
		}
		if q.Sink == SinkFile && r.OutputMode == OutputAppend {
			bad("the file sink with an aggregation is not supported yet: use the kafka, console or noop sink")
		} else if q.Sink == SinkFile {
			// Spark's file sink takes append only (FileStreamSink).
			bad("Data source %s does not support %s output mode (Spark's file sink writes append only: use the kafka, console or noop sink)", r.FileFormat, strings.ToUpper(r.OutputMode[:1])+r.OutputMode[1:])
		}
		if r.AsyncProgressTracking {
			bad("async progress tracking with a stateful query: ckpt run does not support it yet")
		}
		// The Program still carries the plain Kafka columns for code that reads them; the
		// aggregation's output columns are outCols.
		prog, err := transform.Compile("", nil)
		if err != nil {
			bad("%v", err)
		}
		r.Program = prog
	} else {
		if q.Watermark != "" && len(q.DropDuplicates)+len(q.DropDuplicatesWithinWatermark) == 0 {
			bad("--watermark without --group-by or --drop-duplicates: ckpt run supports a watermark only for a streaming aggregation or a deduplication")
		}
		if r.OutputMode == OutputComplete {
			bad("%s (Spark 3.5's AnalysisException; Spark 4: %s)", SparkCompleteStateless, SparkCompleteStateless4)
		}
		prog, err := transform.Compile(q.Filter, q.Select)
		if err != nil {
			bad("%v", err)
		}
		r.Program = prog
		if prog != nil && prog.Projects() {
			outCols = prog.Columns()
		}
		if len(q.DropDuplicates)+len(q.DropDuplicatesWithinWatermark) > 0 && prog != nil {
			r.Dedup = resolveDedup(r, bad)
			outCols = prog.Columns()
		}
	}
	if q.Sink == SinkKafka && outCols != nil {
		names := map[string]bool{}
		for _, c := range outCols {
			names[c.Name] = true
		}
		if !names["value"] {
			bad("the kafka sink needs a column named value: add \"... AS value\" to --select (or --agg)")
		}
		for n := range names {
			// An aggregation's other columns are left out, as Spark's Kafka writer leaves out
			// every column but these.
			if r.Grouping == nil && r.Dedup == nil && !slices.Contains([]string{"key", "value", "topic", "partition", "headers"}, n) {
				bad("the kafka sink writes only key, value, topic, partition and headers; the query outputs %q", n)
			}
		}
	}
	if len(errs) > 0 {
		return nil, &Error{Problems: errs}
	}
	return r, nil
}

// Error lists every problem Validate found.
type Error struct{ Problems []string }

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "invalid query: " + e.Problems[0]
	}
	return "invalid query:\n  " + strings.Join(e.Problems, "\n  ")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
