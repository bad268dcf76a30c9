package recovery

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode names the micro-batch engine that restarts the query.
type Mode string

// The engines Plan can predict.
const (
	// ModeSync is MicroBatchExecution (Spark ≥ 2.2), the default engine: it
	// needs offsets/L-1 on disk to restart from offsets/L.
	ModeSync Mode = "sync"
	// ModeAsync is AsyncProgressTrackingMicroBatchExecution (Spark ≥ 3.4,
	// asyncProgressTrackingEnabled=true): the previous batch is the nearest
	// on-disk offsets id below L, so gaps are tolerated.
	ModeAsync Mode = "async"
	// ModeSpark21 is Spark 2.1's StreamExecution, which has no commit log:
	// the latest offsets batch always re-runs.
	ModeSpark21 Mode = "spark-2.1"
)

// Modes lists every Mode, in the order help texts show them.
var Modes = []Mode{ModeSync, ModeAsync, ModeSpark21}

// DefaultSparkVersion is the release Plan predicts when none is given.
const DefaultSparkVersion = "3.5"

// SparkVersions lists the releases Plan knows, oldest first: each minor
// line as released (x.y.0 and its patch releases), then "master", Spark's
// development branch as read for ckpt (docs/spark-semantics.md, "Releases").
// The behaviours the planner models changed last in 4.2 (offsets v2,
// commit log v1..v3 read across versions, MISSING_METADATA_FILE, both
// latest entries read up front); master behaves as 4.2 in them.
var SparkVersions = []string{"2.1", "2.2", "2.3", "2.4", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "master"}

// Options chooses the engine and release whose restart Plan predicts.
type Options struct {
	// Mode is the engine; "" means sync, or spark-2.1 when SparkVersion is 2.1.
	Mode Mode
	// SparkVersion is "2.1" … "3.5", "4.0", "4.1", "4.2" (the released
	// lines) or "master"; a patch release ("4.1.1") is accepted. Default
	// "3.5". It decides
	// which log versions are readable, the wording of errors, and how a
	// missing metadata file is treated.
	SparkVersion string
	// CommitFormatVersion is spark.sql.streaming.stateStore.checkpointFormatVersion,
	// which Spark 4.0 requires every commit file header to equal. Default 1.
	CommitFormatVersion int
	// SinkLatest is the latest batch id in the file sink's _spark_metadata
	// log, or the version of the Delta sink's txn action for the query (SinkKind), read by the
	// caller; nil when no sink is given.
	SinkLatest *int64
	// SinkKind says which sink SinkLatest comes from: SinkKindFile (default, "") or
	// SinkKindDelta. Both skip a batch id at or below their latest, so only the words differ.
	SinkKind string
	// Delta are the Delta tables the query's Delta sources read, read by the caller
	// (deltalog.Read): Plan checks the offsets the restart starts from against them (delta.go).
	// Default: none, no Delta check.
	Delta []DeltaTable
	// QuerySources is the number of sources of the query that restarts, when the caller knows
	// it (ckpt run does). 0 means unknown: ckpt then takes the query to have the sources of
	// offsets/L, not counting empty lines.
	QuerySources int
	// Broker is what the Kafka broker holds for the checkpoint's topics (read by the caller:
	// topicstate.Read of CheckpointTopics); nil means the prediction is from the checkpoint
	// alone. With it, Plan checks the restart's Kafka ranges against the broker (CheckRestart):
	// every issue is a warning, and the first that fails the restart makes the outcome "fail"
	// with one of BrokerReasons. Result.Broker then says what was checked.
	Broker *BrokerState
	// FailOnDataLossFalse models the Kafka source option failOnDataLoss=false when Broker is
	// given. Default false: Spark's default, failOnDataLoss=true.
	FailOnDataLossFalse bool
}

// release is a Spark major.minor version, comparable as an integer.
type release int

func mkRelease(major, minor int) release { return release(major*100 + minor) }

// relMaster is Spark's master branch: newer than every release.
const relMaster release = 9999

func (r release) String() string {
	if r == relMaster {
		return "master"
	}
	return fmt.Sprintf("%d.%d", int(r)/100, int(r)%100)
}

// atLeast reports whether r is major.minor or newer.
func (r release) atLeast(major, minor int) bool { return r >= mkRelease(major, minor) }

// parseRelease accepts "3.5", "3.5.1", "v3.5", "master".
func parseRelease(s string) (release, error) {
	s = strings.TrimPrefix(strings.TrimSpace(strings.ToLower(s)), "v")
	if s == "master" {
		return relMaster, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("unknown Spark version %q: want one of %s (or master)", s, strings.Join(SparkVersions, ", "))
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unknown Spark version %q: want one of %s (or master)", s, strings.Join(SparkVersions, ", "))
	}
	r := mkRelease(major, minor)
	for _, v := range SparkVersions {
		if v == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unsupported Spark version %q: want one of %s (or master)", s, strings.Join(SparkVersions, ", "))
}

// config is Options validated and with defaults applied.
type config struct {
	mode       Mode
	rel        release
	commitFmt  int
	sinkLatest *int64
	// querySources is Options.QuerySources (0 = unknown).
	querySources int
	// broker and failOnDataLoss are Options.Broker and !Options.FailOnDataLossFalse.
	broker         *BrokerState
	failOnDataLoss bool
	sinkKind       string
	delta          []DeltaTable
}

// OptionsError reports invalid Options (an unknown mode or release, or a
// mode the release does not have): a usage error, not an I/O failure.
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *OptionsError) Unwrap() error { return e.Err }

func (o Options) normalize() (config, error) {
	c, err := o.validate()
	if err != nil {
		return c, &OptionsError{err}
	}
	return c, nil
}

func (o Options) validate() (config, error) {
	c := config{mode: o.Mode, commitFmt: o.CommitFormatVersion, sinkLatest: o.SinkLatest, querySources: o.QuerySources,
		broker: o.Broker, failOnDataLoss: !o.FailOnDataLossFalse, sinkKind: o.SinkKind, delta: o.Delta}
	if c.sinkKind != SinkKindFile && c.sinkKind != SinkKindDelta {
		return c, fmt.Errorf("invalid sink kind %q: want %q or %q", c.sinkKind, SinkKindFile, SinkKindDelta)
	}
	if c.commitFmt == 0 {
		c.commitFmt = 1
	}
	if c.commitFmt < 1 || c.commitFmt > 3 {
		return c, fmt.Errorf("invalid commit format version %d: want 1, 2 or 3", o.CommitFormatVersion)
	}
	vs := o.SparkVersion
	if vs == "" {
		vs = DefaultSparkVersion
		if c.mode == ModeSpark21 {
			vs = "2.1"
		}
	}
	rel, err := parseRelease(vs)
	if err != nil {
		return c, err
	}
	c.rel = rel
	if c.mode == "" {
		c.mode = ModeSync
		if rel == mkRelease(2, 1) {
			c.mode = ModeSpark21
		}
	}
	switch c.mode {
	case ModeSync:
		if rel == mkRelease(2, 1) {
			return c, fmt.Errorf("spark 2.1 has no commit log and no MicroBatchExecution: use mode %s", ModeSpark21)
		}
	case ModeAsync:
		if !rel.atLeast(3, 4) {
			return c, fmt.Errorf("async progress tracking exists from Spark 3.4 on, not in %s", rel)
		}
	case ModeSpark21:
		if rel != mkRelease(2, 1) {
			return c, fmt.Errorf("mode %s is Spark 2.1's engine; the Spark version must be 2.1, not %s", ModeSpark21, rel)
		}
	default:
		return c, fmt.Errorf("unknown mode %q: want sync, async or spark-2.1", o.Mode)
	}
	return c, nil
}

// ParseMode validates a mode name ("" is sync).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeSync:
		return ModeSync, nil
	case ModeAsync, ModeSpark21:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown mode %q: want sync, async or spark-2.1", s)
}

// ValidateSparkVersion reports whether s names a release Plan knows.
func ValidateSparkVersion(s string) error {
	_, err := parseRelease(s)
	return err
}

// Spark behaviour that changed between releases, in one place.

// offsetsMaxVersion is OffsetSeqLog's MAX_VERSION: v2 (OffsetMap,
// SPARK-54423 and SPARK-54583, merged to master in Nov/Dec 2025 after
// branch-4.1 was cut) is read from 4.2 on.
func (r release) offsetsMaxVersion() int {
	if r.atLeast(4, 2) {
		return 2
	}
	return 1
}

// sourceCountMessage: SPARK-23565 (2.4) gave OffsetSeq.toStreamProgress's
// source-count assertion its message; before, it failed with a bare
// "assertion failed".
func (r release) sourceCountMessage() bool { return r.atLeast(2, 4) }

// errorConditions: 4.x renders errors as "[CONDITION] message SQLSTATE: x".
func (r release) errorConditions() bool { return r.atLeast(4, 0) }

// commitConflictFails: SPARK-26425 (3.0) made a failed commitLog.add fatal;
// before it the result was ignored and the old commit file kept.
func (r release) commitConflictFails() bool { return r.atLeast(3, 0) }

// logsMissingPrev: SPARK-38033 (3.3) added the ERROR line before
// "batch N doesn't exist".
func (r release) logsMissingPrev() bool { return r.atLeast(3, 3) }

// concurrentCondition: SPARK-43542 (3.5) gave log conflicts the error
// condition CONCURRENT_STREAM_LOG_UPDATE.
func (r release) concurrentCondition() bool { return r.atLeast(3, 5) }

// missingMetadataFails: SPARK-55058 (Jan 2026, in 4.2) refuses a
// checkpoint whose metadata file is gone while its logs have data.
func (r release) missingMetadataFails() bool { return r.atLeast(4, 2) }

// readsLogsUpFront: 4.2's initializeExecution reads the latest offsets
// and commit entries before populateStartOffsets (to pick the offset log
// format, SPARK-54583), and asserts that no commits exist without offsets.
func (r release) readsLogsUpFront() bool { return r.atLeast(4, 2) }

// listsContinuousRange: SPARK-40957 (3.4, the metadata cache) made
// HDFSMetadataLog.listBatches return (min to max).toArray, every id between
// the oldest and the newest file, so getLatest costs 8 bytes per id of the
// span and fails past Int.MaxValue ids. Before, getLatestBatchId took the
// maximum of the listing.
func (r release) listsContinuousRange() bool { return r.atLeast(3, 4) }

// engineClass is the logger name of the engine in driver log lines.
func engineClass(mode Mode, r release) string {
	switch {
	case mode == ModeSpark21 || !r.atLeast(2, 3):
		return "StreamExecution"
	case mode == ModeAsync:
		return "AsyncProgressTrackingMicroBatchExecution"
	}
	return "MicroBatchExecution"
}
