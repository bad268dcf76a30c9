// Detection infers, from what a checkpoint holds, what the restart flags would otherwise
// have to say: whether the query ran with async progress tracking (from the gap pattern of its
// logs) and which Spark release wrote it (from the conf keys of its latest offsets file and the
// versions of its log files). Commands use the result as defaults when --mode, --spark-version
// and --commit-format-version are not given, and say what was detected and why; a flag always
// wins. Detection only supplies data: Plan stays the one decision maker.

package recovery

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Detection is what the checkpoint tells about the query that wrote it. An empty field was not
// detected: the command keeps its own default.
type Detection struct {
	// Mode is "async" when the logs have async progress tracking's gaps, else "".
	Mode       Mode   `json:"mode,omitempty"`
	ModeReason string `json:"modeReason,omitempty"`
	// AsyncNotApplied is set instead of Mode when the logs have async progress tracking's gaps
	// but the command kept the sync engine (DetectDefaults: the sync restart fails where the async
	// one would not, and the files cannot tell whether async was switched off since). It says so.
	AsyncNotApplied string `json:"asyncNotApplied,omitempty"`
	// SparkMin and SparkMax bound the release that wrote the latest offsets file (SparkMax ""
	// when only a lower bound is known); SparkVersion is the release used as the default:
	// SparkMin when it is newer than ckpt's default release, else "" (the default stands).
	SparkMin     string `json:"sparkMin,omitempty"`
	SparkMax     string `json:"sparkMax,omitempty"`
	SparkVersion string `json:"sparkVersion,omitempty"`
	SparkReason  string `json:"sparkReason,omitempty"`
	// CommitFormatVersion is the version header of the latest commit file when it is above 1
	// (checkpoint format v2, which Spark 4.0 requires the restart to be configured with).
	CommitFormatVersion int    `json:"commitFormatVersion,omitempty"`
	CommitReason        string `json:"commitReason,omitempty"`
}

// Empty reports whether nothing was detected.
func (r *Detection) Empty() bool {
	return r == nil || (r.Mode == "" && r.AsyncNotApplied == "" && r.SparkMin == "" && r.CommitFormatVersion == 0)
}

// Lines are the detections in words, one per line, for a command's header.
func (r *Detection) Lines() []string {
	if r == nil {
		return nil
	}
	var out []string
	if r.Mode != "" {
		out = append(out, fmt.Sprintf("detected %s engine: %s", r.Mode, r.ModeReason))
	}
	if r.AsyncNotApplied != "" {
		out = append(out, "detected async progress tracking but kept the sync engine: "+r.AsyncNotApplied)
	}
	switch {
	case r.SparkVersion != "":
		out = append(out, fmt.Sprintf("detected Spark %s: %s", r.SparkVersion, r.SparkReason))
	case r.SparkMin != "":
		out = append(out, fmt.Sprintf("written by an older Spark: %s; predicting a restart on Spark %s (--spark-version to change)", r.SparkReason, DefaultSparkVersion))
	}
	if r.CommitFormatVersion != 0 {
		out = append(out, fmt.Sprintf("detected commit format v%d: %s", r.CommitFormatVersion, r.CommitReason))
	}
	return out
}

// Detect reads the latest offsets and commit files of cp (two small reads; the listings are
// already in cp) and returns what they show. A file that cannot be read or parsed detects
// nothing; it is the planner's and doctor's business to report it.
func Detect(ctx context.Context, cp *checkpoint.Checkpoint) *Detection {
	r := &Detection{}
	r.Mode, r.ModeReason = detectAsyncFromGaps(cp.Offsets.IDs(), cp.Commits.IDs())
	if l, ok := cp.Offsets.Latest(); ok {
		if seq, err := cp.ReadOffsets(ctx, l); err == nil {
			r.spark(seq, l)
		}
	}
	if c, ok := cp.Commits.Latest(); ok {
		if com, err := cp.ReadCommit(ctx, c); err == nil && com.Version >= 2 {
			r.CommitFormatVersion = com.Version
			r.CommitReason = fmt.Sprintf("commits/%d has header v%d", c, com.Version)
			r.raise(fmt.Sprintf("commits/%d is v%d (checkpoint format v2, Spark 4.0)", c, com.Version), "4.0")
		}
	}
	r.choose()
	return r
}

// detectAsyncFromGaps takes the async engine when the planner's gap classification shows async
// progress tracking's pattern with the commits' evidence (Gaps.WrittenByAsync,
// spark-semantics.md §6.2), and says why.
func detectAsyncFromGaps(offsets, commits []int64) (Mode, string) {
	if !ClassifyGaps(offsets, commits).WrittenByAsync() {
		return "", ""
	}
	return ModeAsync, fmt.Sprintf("offsets/ and commits/ share gaps (offsets %s, commits %s), the pattern of async progress tracking", detectFirstGap(offsets), detectFirstGap(commits))
}

// detectFirstGap describes the first gap of ascending ids ("3 → 7"), or "".
func detectFirstGap(ids []int64) string {
	for i := 1; i < len(ids); i++ {
		if ids[i] > ids[i-1]+1 {
			return fmt.Sprintf("%d → %d", ids[i-1], ids[i])
		}
	}
	return ""
}

// detectConfKey is a key of OffsetSeqMetadata's relevantSQLConfs and the first release whose offsets
// files carry it (every file a release writes carries all of its keys, spark-semantics.md §2.3).
// upper says whether its absence bounds the release from above; it is false for keys whose first
// release is not certain, which then only raise the lower bound to a release known to have them.
type detectConfKey struct {
	key, since string
	upper      bool
}

var detectConfKeys = []detectConfKey{
	{"spark.sql.shuffle.partitions", "2.2", false},
	{"spark.sql.streaming.multipleWatermarkPolicy", "2.4", true},
	{"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "2.4", true},
	{"spark.sql.streaming.aggregation.stateFormatVersion", "2.4", true},
	{"spark.sql.streaming.join.stateFormatVersion", "3.0", true},
	{"spark.sql.streaming.stateStore.compression.codec", "3.1", true},
	{"spark.sql.streaming.stateStore.rocksdb.formatVersion", "3.2", true},
	{"spark.sql.streaming.statefulOperator.useStrictDistribution", "3.3", true},
	{"spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan", "3.5", false},
	{"spark.sql.streaming.stateStore.encodingFormat", "4.0", true},
}

func (r *Detection) spark(seq *logformat.OffsetSeq, id int64) {
	file := fmt.Sprintf("offsets/%d", id)
	if seq.Version >= 2 {
		r.raise(fmt.Sprintf("%s is v%d (OffsetMap, Spark 4.1)", file, seq.Version), "4.1")
		return
	}
	if seq.Metadata == nil || seq.Metadata.Conf == nil {
		r.SparkMin, r.SparkMax = "2.1", "2.1"
		r.SparkReason = file + " has no conf, as only Spark 2.1 writes it"
		return
	}
	have := map[string]bool{}
	for _, kv := range seq.Metadata.Conf {
		have[kv.Key] = true
	}
	var newest, missing *detectConfKey
	for i := range detectConfKeys {
		k := &detectConfKeys[i]
		switch {
		case have[k.key]:
			if newest == nil || detectLess(newest.since, k.since) {
				newest = k
			}
		case k.upper && (missing == nil || detectLess(k.since, missing.since)):
			missing = k
		}
	}
	var why []string
	if newest != nil {
		r.raise("", newest.since)
		why = append(why, fmt.Sprintf("its conf has %s (Spark %s+)", detectShort(newest.key), newest.since))
	}
	if missing != nil && (r.SparkMin == "" || detectLess(r.SparkMin, missing.since)) {
		r.SparkMax = detectPrev(missing.since)
		why = append(why, fmt.Sprintf("not %s (Spark %s+)", detectShort(missing.key), missing.since))
	}
	if len(why) > 0 {
		r.SparkReason = file + ": " + strings.Join(why, " but ")
	}
}

// raise lifts the lower bound to since, with reason when it is the one that decides.
func (r *Detection) raise(reason, since string) {
	if r.SparkMin == "" || detectLess(r.SparkMin, since) {
		r.SparkMin = since
		if reason != "" {
			r.SparkReason = reason
		}
		if r.SparkMax != "" && detectLess(r.SparkMax, since) {
			r.SparkMax = ""
		}
	}
}

// choose picks the release the planner uses: the restart runs on the release that wrote the
// checkpoint or a newer one (Spark reads older checkpoints, not newer ones), so the lower bound
// lifts ckpt's default and never lowers it. A checkpoint of an older release is reported
// (Lines) but keeps the default.
func (r *Detection) choose() {
	if r.SparkMin == "" {
		return
	}
	v := DefaultSparkVersion
	if detectLess(v, r.SparkMin) {
		v = r.SparkMin
	}
	r.SparkVersion = v
	switch {
	case r.SparkMax == r.SparkMin:
	case r.SparkMax != "":
		r.SparkReason += fmt.Sprintf(", so Spark %s to %s", r.SparkMin, r.SparkMax)
	default:
		r.SparkReason += fmt.Sprintf(", so Spark %s or later", r.SparkMin)
	}
}

func detectShort(key string) string {
	key = strings.TrimPrefix(key, "spark.sql.streaming.")
	return strings.TrimPrefix(key, "spark.sql.")
}

// detectLess compares two releases of SparkVersions.
func detectLess(a, b string) bool { return detectIndex(a) < detectIndex(b) }

func detectIndex(v string) int {
	for i, s := range SparkVersions {
		if s == v {
			return i
		}
	}
	return -1
}

// detectPrev is the release before v.
func detectPrev(v string) string {
	if i := detectIndex(v); i > 0 {
		return SparkVersions[i-1]
	}
	return v
}
