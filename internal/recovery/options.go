package recovery

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
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
// latest entries read up front); master behaves as 4.2 in them, except that
// 4.2.0 requires apiVersion in a v3 commit's sink entries (checked against
// 4.2.0 by the oracle; versions.go).
var SparkVersions = []string{"2.1", "2.2", "2.3", "2.4", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "master"}

// Options chooses the engine and release whose restart Plan predicts.
type Options struct {
	// Mode is the engine; "" means sync, or spark-2.1 when SparkVersion is 2.1.
	Mode Mode
	// SparkVersion is "2.1" … "3.5", "4.0", "4.1", "4.2" (the released
	// lines) or "master"; a patch release ("4.1.1") is accepted. Default
	// "3.5". It decides
	// which log versions are readable, the wording of errors, and how a
	// missing metadata file is treated. Where patch releases of a line
	// differ (Spark bugs: SPARK-55271 in 4.1.0 and 4.1.1), a line stands for
	// the newest patch release ckpt models ("4.1" is 4.1.1); give the patch
	// release to predict another ("4.1.0"). A patch release newer than
	// those is predicted with the line's rules, without the bugs fixed
	// after the newest one ckpt models.
	SparkVersion string
	// Trigger is the query's trigger, when the caller knows it:
	// TriggerAvailableNow, TriggerOnce or TriggerProcessingTime. Default ""
	// (unknown): the rules that depend on it (Spark 4.0.0's Kafka
	// pre-fetch under availableNow) are not applied.
	Trigger string
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
	// State is what the checkpoint's state stores hold (read by the caller: internal/state's
	// listing, and the files of Result.State.Loads read for damage); nil means the prediction
	// does not look at state. With it, Plan predicts the load of the state version the
	// restart's first batch needs in every partition (state.go), and a load that fails makes
	// the outcome "fail" with one of StateReasons.
	State *StateInventory
	// FailOnDataLossFalse models the Kafka source option failOnDataLoss=false when Broker is
	// given. Default false: Spark's default, failOnDataLoss=true.
	FailOnDataLossFalse bool
}

// Triggers (Options.Trigger).
const (
	TriggerUnknown        = ""
	TriggerAvailableNow   = "availableNow"
	TriggerOnce           = "once"
	TriggerProcessingTime = "processingTime"
)

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
	r, _, err := parseVersion(s)
	return r, err
}

// parseVersion is parseRelease that also returns the patch release: 1 for "4.1.1", -1 when
// none is given ("4.1", "master").
func parseVersion(s string) (release, int, error) {
	s = strings.TrimPrefix(strings.TrimSpace(strings.ToLower(s)), "v")
	if s == "master" {
		return relMaster, -1, nil
	}
	bad := fmt.Errorf("unknown Spark version %q: want one of %s (or master), or a patch release such as 4.1.1", s, strings.Join(SparkVersions, ", "))
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, bad
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || minor > 99 {
		return 0, 0, bad
	}
	patch := -1
	if len(parts) == 3 {
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 {
			return 0, 0, bad
		}
		patch = n
	}
	r := mkRelease(major, minor)
	for _, v := range SparkVersions {
		if v == r.String() {
			return r, patch, nil
		}
	}
	return 0, 0, fmt.Errorf("unsupported Spark version %q: want one of %s (or master)", s, strings.Join(SparkVersions, ", "))
}

// newestPatch is, for each line whose patch releases differ in what Plan models, the newest
// patch release ckpt models: "--spark-version 4.1" means 4.1.1. Each was checked against the
// real release (internal/sparkoracle). A line missing here behaves alike in all its patch
// releases as far as Plan knows, and its patch number is not used.
var newestPatch = map[release]int{
	mkRelease(4, 0): 0, // 4.0.0: Trigger.AvailableNow pre-fetches the Kafka offsets (availableNowPrefetch)
	mkRelease(4, 1): 1, // 4.1.1: SPARK-55271 (kafkaMetricsNPE)
}

// defaultPatch is the patch release a line without one stands for: newestPatch, or -1.
func defaultPatch(r release) int {
	if p, ok := newestPatch[r]; ok {
		return p
	}
	return -1
}

// config is Options validated and with defaults applied.
type config struct {
	mode Mode
	rel  release
	// patch is the patch release (1 for 4.1.1): the one given, else defaultPatch; -1 when the
	// line's patch releases do not differ in what Plan models. patchGiven says it was given.
	patch      int
	patchGiven bool
	// trigger is Options.Trigger.
	trigger    string
	commitFmt  int
	sinkLatest *int64
	// querySources is Options.QuerySources (0 = unknown).
	querySources int
	// broker and failOnDataLoss are Options.Broker and !Options.FailOnDataLossFalse.
	broker         *BrokerState
	failOnDataLoss bool
	sinkKind       string
	delta          []DeltaTable
	state          *StateInventory
}

// version is the release as Result.SparkVersion shows it: the line ("4.1"), or the patch
// release when one was given ("4.1.1").
func (c config) version() string {
	if c.patchGiven {
		return fmt.Sprintf("%s.%d", c.rel, c.patch)
	}
	return c.rel.String()
}

// release is the exact release the prediction models, for messages: "4.1.1" where the patch
// matters or was given, else the line.
func (c config) exact() string {
	if c.patch >= 0 {
		return fmt.Sprintf("%s.%d", c.rel, c.patch)
	}
	return c.rel.String()
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
		broker: o.Broker, failOnDataLoss: !o.FailOnDataLossFalse, sinkKind: o.SinkKind, delta: o.Delta, state: o.State}
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
	rel, patch, err := parseVersion(vs)
	if err != nil {
		return c, err
	}
	c.rel, c.patch, c.patchGiven = rel, patch, patch >= 0
	if patch < 0 {
		c.patch = defaultPatch(rel)
	}
	switch o.Trigger {
	case TriggerUnknown, TriggerAvailableNow, TriggerOnce, TriggerProcessingTime:
		c.trigger = o.Trigger
	default:
		return c, fmt.Errorf("unknown trigger %q: want %s, %s or %s", o.Trigger, TriggerAvailableNow, TriggerOnce, TriggerProcessingTime)
	}
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

// readsLogsUpFront: from 4.1 initializeExecution reads the latest offsets
// and commit entries (offsetLog.getLatest, commitLog.getLatest) before
// populateStartOffsets, so a latest commit Spark cannot read fails the
// restart before the previous offsets file is looked at (seen in 4.1.1's
// bytecode and in the oracle: "Failed to read log file commits/N.
// Incomplete log file in the offset commit log" where 4.0 says "batch N-1
// doesn't exist").
func (r release) readsLogsUpFront() bool { return r.atLeast(4, 1) }

// assertsCommitsNeedOffsets: 4.2's initializeExecution (the offset log
// format selection of SPARK-54583) asserts that no commit exists without an
// offsets entry.
func (r release) assertsCommitsNeedOffsets() bool { return r.atLeast(4, 2) }

// verifiesNewCheckpoint: from 4.1.0 a query that starts at batch 0 (no
// offsets entry) first checks that offsets/, state/ and commits/ are missing
// or empty (verifyNewCheckpointDirectory, under
// spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart, default true),
// and fails with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY naming the first
// that is not. It lists with Hadoop's file system: on the local file system
// ChecksumFs hides .crc files, so an orphan checksum alone does not count.
func (r release) verifiesNewCheckpoint() bool { return r.atLeast(4, 1) }

// listsContinuousRange: SPARK-40957 (3.4, the metadata cache) made
// HDFSMetadataLog.listBatches return (min to max).toArray, every id between
// the oldest and the newest file, so getLatest costs 8 bytes per id of the
// span and fails past Int.MaxValue ids. Before, getLatestBatchId took the
// maximum of the listing.
func (r release) listsContinuousRange() bool { return r.atLeast(3, 4) }

// listsDirectories: HDFSMetadataLog.listBatches keeps directories whose
// name is a number up to 3.4; SPARK-46339 (4.0) keeps files only, and so does
// 3.5.7 (its listBatches filters isFile, and the oracle's
// offsets-numeric-directory case plans batch 8 as 4.x does). Whether 3.4.x
// patch releases got it was not checked.
func (r release) listsDirectories() bool { return !r.atLeast(3, 5) }

// offsetChangedHint is the hint line of KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED: none in 4.0
// (4.0.0 prints the Reason line alone), 4.1.1's wording from 4.1 on (SPARK-52096 added a hint;
// the release's text is taken for the later lines too).
func (r release) offsetChangedHint() string {
	if r.atLeast(4, 1) {
		return dataloss.HintOffsetChanged41
	}
	return ""
}

// Patch-release rules: Spark bugs of some patch releases, decided on the
// exact release (config.patch, newestPatch).

// kafkaMetricsNPE: SPARK-55271 in 4.1.0 and 4.1.1. KafkaMicroBatchStream's
// metrics, asked for by progress reporting (finishTrigger) after a batch,
// dereference the latest partition offsets, which only latestOffset() sets:
// when the restart's first batch re-runs a batch from the offset log,
// latestOffset() has not run, and the query fails with a
// NullPointerException after the batch ran and its commit was written
// (markMicroBatchEnd precedes finishTrigger). A regression of SPARK-54027
// (Kafka real-time mode), fixed after 4.1.1.
func (c config) kafkaMetricsNPE() bool {
	return c.rel == mkRelease(4, 1) && c.patch >= 0 && c.patch <= 1
}

// availableNowPrefetch: 4.0.0's KafkaMicroBatchStream.prepareForTriggerAvailableNow
// fetches the broker's latest offsets when the query starts, so under
// Trigger.AvailableNow planInputPartitions compares every batch's end offsets
// with them first (verifyEndOffsetForTriggerAvailableNow), before the
// data-loss check of the range. 3.5.7 and 4.1.1 fetch them lazily in
// latestOffset(), which a re-run does not call: the check does not apply to
// the re-run there.
func (c config) availableNowPrefetch() bool {
	return c.rel == mkRelease(4, 0) && c.patch == 0 && c.trigger == TriggerAvailableNow
}

// getLatestReadsUnchecked: from 3.4 (SPARK-40957) getLatest opens the newest
// listed id without the existence check and without catching
// FileNotFoundException; before, it went through get(), whose None became
// "failed to read log file for batch N".
func (r release) getLatestReadsUnchecked() bool { return r.atLeast(3, 4) }

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
