package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
)

// Severity ranks a finding. The names are part of the JSON contract.
type Severity string

// The severities, from most to least serious.
const (
	// Error: the restart fails, or it succeeds but silently loses or duplicates data.
	Error Severity = "error"
	// Warning: the restart works, but something is wrong and will bite later (a rollback, an
	// upgrade, switching a setting off, the next batch write).
	Warning Severity = "warning"
	// Info: expected behaviour an operator should know about before restarting.
	Info Severity = "info"
)

// Rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case Error:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// ParseSeverity validates a --fail-on value.
func ParseSeverity(s string) (Severity, error) {
	switch sv := Severity(strings.ToLower(s)); sv {
	case Error, Warning, Info:
		return sv, nil
	}
	return "", fmt.Errorf("invalid severity %q: want error, warning or info", s)
}

// Code documents one stable finding code. Runbooks key on ID, so an ID is never renamed or
// reused; the texts may be improved.
type Code struct {
	// ID is the stable, kebab-case code.
	ID string
	// Title is a short noun phrase for indexes.
	Title string
	// Severities lists the severities a finding with this code can carry, most serious first;
	// the condition decides which (for example, a corrupt latest file is an error, an older one
	// a warning).
	Severities []Severity
	// Summary is the condition, in one sentence.
	Summary string
	// Explanation says what Spark does with the condition and why it matters (Markdown).
	Explanation string
	// SparkError is what Spark prints, per release where it differs (Markdown); "" when Spark
	// says nothing.
	SparkError string
	// Fix says how to get out (Markdown). Findings carry the exact command for the checkpoint at
	// hand.
	Fix string
}

// The codes. Their order is the order of docs/doctor.md and of findings of equal severity.
const (
	CodeMissingPreviousOffsets  = "missing-previous-offsets"
	CodeCommitsAhead            = "commits-ahead"
	CodeEmptyOffsetsWithCommits = "empty-offsets-with-commits"
	CodeCorruptLogFile          = "corrupt-log-file"
	CodeUnsupportedLogVersion   = "unsupported-log-version"
	CodeSourceCountMismatch     = "source-count-mismatch"
	CodeMissingMetadata         = "missing-metadata"
	CodeMissingInitialOffsets   = "missing-initial-offsets"
	CodeKafkaRangeDataLoss      = "kafka-range-data-loss"
	CodeSinkAhead               = "sink-ahead"
	CodeSinkBehind              = "sink-behind"
	CodeSinkEntryOutside        = "sink-entry-outside"
	CodeSinkLogBatchMissing     = sinklog.CodeLogBatchMissing
	CodeSinkFileMissing         = sinklog.CodeFileMissing
	CodeSinkFileSizeMismatch    = sinklog.CodeFileSizeMismatch
	CodeSinkFileExtra           = sinklog.CodeFileExtra
	CodeCommitLag               = "commit-lag"
	CodeAsyncProgressGaps       = "async-progress-gaps"
	CodeOrphanChecksum          = "orphan-checksum"
	CodeLeftoverTempFile        = "leftover-temp-file"
	CodeRepairLock              = "repair-lock"
	CodeLeftoverStaging         = "leftover-staging"
	CodeRetentionAnomaly        = "retention-anomaly"
	CodeUncommittedBatch        = "uncommitted-batch"
	CodeBatchSpanTooLarge       = "batch-span-too-large"
	CodeLatestNotReadable       = "latest-not-readable"
	CodeNotEmptyOnStart         = recovery.ReasonNotEmptyOnStart
	CodeBatchPathTaken          = recovery.ReasonBatchPathTaken
	CodeSparkBug                = recovery.ReasonSparkBug
	CodeKafkaPrefetchMismatch   = recovery.ReasonKafkaPrefetchMismatch
)

// The codes of the broker checks (broker.go, with --bootstrap-server). They are
// topicstate's issue codes, which `ckpt lag` reports as statuses too.
const (
	CodeOffsetsOutOfRange = recovery.ReasonOffsetsOutOfRange
	CodeTopicRecreated    = recovery.ReasonTopicRecreated
	CodePartitionsRemoved = recovery.ReasonPartitionsRemoved
	CodePartitionsAdded   = recovery.ReasonPartitionsAdded
	CodeTopicMissing      = recovery.ReasonTopicMissing
)

// Codes is the registry of every code doctor can report. docs/doctor.md is generated from it.
var Codes = []Code{
	{
		ID:         CodeNotEmptyOnStart,
		Title:      "A new query finds offsets/ or state/ not empty",
		Severities: []Severity{Error},
		Summary:    "`offsets/` holds no batch file, so the query starts at batch 0, but `offsets/` or `state/` holds other entries.",
		Explanation: `Since 4.1.0 a query that starts at batch 0 first checks that ` + "`offsets/`, `state/` and `commits/`" + ` are
missing or empty (` + "`spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart`" + `, default true), and stops
naming the first that is not. On the local file system Hadoop's listing hides ` + "`.crc`" + ` files; temporary files,
unknown names and directories count. Older releases start the query and ignore them.`,
		SparkError: "Spark 4.1 and later:\n\n```\n[STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY] The checkpoint location file:/ckpt/offsets should be empty on batch 0\n" +
			"Please either use a new checkpoint location, or delete the existing data in the checkpoint location. SQLSTATE: 42K03\n```",
		Fix: `If the query is meant to start afresh, use a new checkpoint location or move the leftovers out of the
directory; if offsets were lost, restore them from a backup instead.`,
	},
	{
		ID:         CodeBatchPathTaken,
		Title:      "A directory sits where the restart writes its next log file",
		Severities: []Severity{Error},
		Summary:    "`offsets/N` or `commits/N`, the file the restart writes next, is a directory.",
		Explanation: `Spark 3.5 and later list files only, so the directory is not a batch; but before writing a log
file ` + "`HDFSMetadataLog.add`" + ` checks that the path does not exist, finds the directory, and the engine reports a
concurrent update. The directory was made by hand or by a copy tool.`,
		SparkError: "```\norg.apache.spark.SparkException: [CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for 8.\n" +
			"Please make sure only one streaming job runs on a specific checkpoint location at a time. SQLSTATE: 40000\n```",
		Fix: "Move the directory out of the log before restarting.",
	},
	{
		ID:         CodeSparkBug,
		Title:      "A bug of the Spark release stops the restart",
		Severities: []Severity{Error},
		Summary:    "The checkpoint is sound, but the Spark release predicted has a bug that makes this restart fail (SPARK-55271 in 4.1.0 and 4.1.1).",
		Explanation: `SPARK-55271: in Spark 4.1.0 and 4.1.1 the Kafka source's progress metrics read the latest offsets
that only a new batch fetches. When the restart's first batch re-runs a batch of the offset log, the
batch runs, its output reaches the sink and (sync engine) its commit is written, and then progress
reporting fails with a NullPointerException. It is a regression of SPARK-54027, fixed after 4.1.1.`,
		SparkError: "Spark 4.1.0 and 4.1.1:\n\n```\njava.lang.NullPointerException: Cannot invoke \"scala.collection.IterableOps.map(scala.Function1)\" because the return value of \"scala.Option.get()\" is null\n```",
		Fix: `Do not repair the checkpoint. Upgrade Spark past 4.1.1, or restart once more: the re-run batch is
committed, so the next restart starts a new batch, which does not hit the bug.`,
	},
	{
		ID:         CodeKafkaPrefetchMismatch,
		Title:      "Spark 4.0.0 under availableNow meets other Kafka partitions than it fetched",
		Severities: []Severity{Error},
		Summary:    "Under Trigger.AvailableNow, the re-run's end offsets name other topic-partitions than the broker's latest offsets Spark 4.0.0 fetched at start.",
		Explanation: `Spark 4.0.0 fetches the broker's latest offsets when an availableNow query starts and requires each
batch's end offsets to cover the same topic-partitions. A re-run whose recorded offsets lack a partition
(or name one the broker no longer has) fails this check before its data-loss check. 3.5.7 and 4.1.1
fetch lazily and report the data loss instead.`,
		SparkError: "```\norg.apache.spark.SparkException: Kafka data source in Trigger.AvailableNow should provide the same topic partitions in pre-fetched offset to end offset for each microbatch. " +
			"The error could be transient - restart your query, and report if you still see the same issue.\ntopic-partitions for pre-fetched offset: Set(events-0, events-1, events-2), topic-partitions for end offset: Set(events-0, events-1).\n```",
		Fix: "See kafka-range-data-loss: the recorded range is damaged; restore the offsets file or rewind the query past it (`ckpt rewind`).",
	},
	{
		ID:         CodeLatestNotReadable,
		Title:      "The newest batch of a log names no file Spark can open",
		Severities: []Severity{Error},
		Summary:    "The newest id in `offsets/` or `commits/` comes from a name that is not its canonical spelling (`007`, `+7`) or, up to Spark 3.5, from a directory named with a number.",
		Explanation: `Spark takes every name of the log directory that parses as a long (` + "`\"007\".toLong == 7`" + `,
a sign allowed) as a batch id, and up to 3.5 directories too (4.0 lists files only, SPARK-46339). It then
opens ` + "`<log>/<id>`" + `, the canonical name, not the name it listed: for ` + "`007`" + ` that file does not
exist, and a directory cannot be read. The newest id is what the restart reads first, so it fails there.
A name Spark would never write was made by hand (a copy, a rename, a restore tool).`,
		SparkError: "Spark 3.4 and later (the exception of Hadoop's local file system; other stores word it their way):\n\n" +
			"```\njava.io.FileNotFoundException: File file:/ckpt/offsets/7 does not exist\n```\n\n" +
			"Spark 3.3 and older:\n\n```\njava.lang.IllegalStateException: failed to read log file for batch 7\n```",
		Fix: `If the file is the batch's own (compare it with its neighbours), rename it to its canonical name
(` + "`offsets/007`" + ` to ` + "`offsets/7`" + `); otherwise move it, or the directory, out of the log.`,
	},
	{
		ID:         CodeBatchSpanTooLarge,
		Title:      "A log's batch ids span more ids than Spark can list",
		Severities: []Severity{Error},
		Summary:    "The oldest and newest batch files of `offsets/` or `commits/` are more than 2^31-1 ids apart (e.g. `offsets/9000000000000000000` next to `offsets/0..7`).",
		Explanation: `Since 3.4 (SPARK-40957) Spark lists a metadata log as every id from its oldest to its
newest file, ` + "`(min to max).toArray`" + ` in ` + "`HDFSMetadataLog.listBatches`" + `, before it reads the
latest entry. Scala refuses a range of more than Int.MaxValue elements, so the restart fails before
it reads any batch; a span of hundreds of millions of ids costs the driver 8 bytes per id. Batch ids
grow by one, so such a file was not written by the query's normal run: it was copied in or renamed
by hand. Spark 3.3 and older take the maximum of the listing instead.`,
		SparkError: "```\njava.lang.IllegalArgumentException: More than Int.MaxValue elements.\n```",
		Fix: `Move the outlying file aside: when it is the newest, ` + "`ckpt rewind <checkpoint> --to-batch N`" + ` (N the newest
id below the jump) moves the files above N into a backup, planned first.`,
	},
	{
		ID:         CodeMissingPreviousOffsets,
		Title:      "The offsets file before the latest one is missing",
		Severities: []Severity{Error},
		Summary:    "The latest offsets file is `offsets/L` with L > 0, and `offsets/L-1` does not exist.",
		Explanation: `On restart Spark reads the latest offsets file ` + "`offsets/L`" + ` and then ` + "`offsets/L-1`" + `,
the end of the previous batch and so the start of batch L. The normal (synchronous) engine requires
that exact file, before it even looks at the commit log, so the restart fails even when
` + "`commits/L`" + ` exists. Async progress tracking instead takes the nearest lower offsets file and tolerates
gaps.

Two shapes lead here:

* **Async progress tracking was switched off.** With ` + "`asyncProgressTrackingEnabled`" + ` Spark persists
  offsets (and commits) only every ` + "`asyncProgressTrackingCheckpointIntervalMs`" + `, so both logs are
  sparse, with commits on the same sparse ids. The synchronous engine cannot restart from such a log.
* **A single orphan.** One offsets file sits after a gap: it was copied in by hand, written by a
  second query sharing the checkpoint, or left by a partial restore or a manual deletion.

doctor says which shape it sees.`,
		SparkError: "Driver log, then the exception (every release since 3.3; older ones throw the same exception):\n\n" +
			"```\n" +
			"ERROR MicroBatchExecution: The offset log for batch L-1 doesn't exist, which is required to restart the query from the latest batch L from the offset log. Please ensure there are two subsequent offset logs available for the latest batch via manually deleting the offset file(s). Please also ensure the latest batch for commit log is equal or one batch earlier than the latest batch for offset log.\n" +
			"java.lang.IllegalStateException: batch L-1 doesn't exist\n" +
			"```",
		Fix: `Two ways out:

1. **Spark's documented procedure** (for the async shape): restart the query with
   ` + "`asyncProgressTrackingEnabled=true`" + ` and ` + "`asyncProgressTrackingCheckpointIntervalMs=0`" + `, let it
   process at least two micro-batches (every batch is then persisted, so the latest two offsets files
   are consecutive), stop it, and disable async progress tracking.
2. **` + "`ckpt repair <checkpoint>`" + `** shows a plan that makes the latest two offsets files consecutive
   (and removes commits that would then be ahead), with the replay it causes; ` + "`--execute`" + ` applies it
   after a backup. Review the plan when a file sink is involved (` + "`--sink`" + `): re-planning a batch the
   sink already has silently skips its data.`,
	},
	{
		ID:         CodeCommitsAhead,
		Title:      "Commits exist beyond the latest offsets",
		Severities: []Severity{Error, Warning},
		Summary:    "`commits/N` exists for some N greater than the latest offsets batch L.",
		Explanation: `Spark writes ` + "`offsets/N`" + ` before running batch N and ` + "`commits/N`" + ` after it, so a
commit can never legitimately be ahead of the offsets. It happens when offsets files were deleted by
hand without the matching commits (old advice for "batch x doesn't exist" said to delete the latest
offsets), or when two queries write the same checkpoint.

None of Spark's restart branches matches: it re-runs batch L, then finds ` + "`commits/L`" + ` (or a later
commit) already present when it tries to write it, and stops.`,
		SparkError: "Spark 3.4 and later:\n\n```\n" +
			"org.apache.spark.SparkException: [CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for N.\n" +
			"Please make sure only one streaming job runs on a specific checkpoint location at a time. SQLSTATE: 40000\n" +
			"```\n\nSpark 3.3 and older:\n\n```\n" +
			"java.lang.AssertionError: assertion failed: Concurrent update to the commit log. Multiple streaming jobs detected for N\n" +
			"```",
		Fix: `First make sure no other query uses this checkpoint (the same message is Spark's report of two
live writers). Spark before 3.0 ignores the failed commit write and goes on (warning), leaving
those commit files with their old content. Then ` + "`ckpt repair <checkpoint>`" + ` plans the removal of the commits beyond the latest
offsets (with their ` + "`.crc`" + ` files), after a backup with ` + "`--execute`" + `.`,
	},
	{
		ID:         CodeEmptyOffsetsWithCommits,
		Title:      "Commits without any offsets",
		Severities: []Severity{Error},
		Summary:    "`offsets/` has no batch file while `commits/` has some.",
		Explanation: `Without offsets Spark believes the query is new: it starts at batch 0 from the sources'
starting positions (Kafka: ` + "`startingOffsets`" + `, default ` + "`latest`" + `), so everything between the
old position and now is either skipped or read again. Then, when it writes the commit of a batch id
that already exists in ` + "`commits/`" + `, it stops with a concurrent-update error. Spark 4.1 and later
refuse to start at all. The offsets were usually deleted by hand or by a storage lifecycle rule.`,
		SparkError: "Spark 4.2 and later, at start:\n\n```\njava.lang.AssertionError: assertion failed\n```\n\n" +
			"Spark 4.1, at start:\n\n```\n[STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY] The checkpoint location file:/ckpt/commits should be empty on batch 0\n" +
			"Please either use a new checkpoint location, or delete the existing data in the checkpoint location. SQLSTATE: 42K03\n```\n\n" +
			"Spark 4.0 and older, when the first existing commit id is reached:\n\n```\n" +
			"[CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for N.\n```",
		Fix: `Restore ` + "`offsets/`" + ` from a backup if there is one: the commits alone cannot say where the
sources were. Otherwise ` + "`ckpt repair <checkpoint>`" + ` plans moving the commits aside so the query can
start afresh, which is only right if you also choose the sources' starting positions deliberately.`,
	},
	{
		ID:         CodeCorruptLogFile,
		Title:      "A log file cannot be parsed",
		Severities: []Severity{Error, Warning},
		Summary:    "An offsets, commits or `metadata` file is empty, truncated, holds only its version line, has a malformed header or is not valid JSON, or an offsets file holds a source offset its source cannot read.",
		Explanation: `Spark writes log files atomically (a temporary file renamed into place), so a damaged file
comes from a copy by hand, a non-atomic object store, a full disk or an interrupted upload.

Spark reads the **latest** offsets file, the offsets file it restarts from, the latest commit and
` + "`metadata`" + ` on every start, and never falls back to an older file: if one of those is damaged the
restart fails (error). Older files are read only when something goes back to them (a rollback, a
replay of old batches), so a damaged older file is a warning. A size of 0 is visible from the listing;
other damage in older files is found with ` + "`--deep`" + `, which reads every file.

An offsets file can also parse and still be unreadable for a source: a line emptied by hand, or
another source's offset after the query's sources changed order. The batch that re-runs from it hands
that line to the source, which fails (error).`,
		SparkError: "The parse error is wrapped with the file's full path, for example:\n\n```\n" +
			"java.lang.IllegalStateException: Failed to read log file file:/ckpt/offsets/7. Incomplete log file\n" +
			"java.lang.IllegalStateException: Failed to read log file file:/ckpt/commits/7. Incomplete log file in the offset commit log\n" +
			"java.lang.IllegalStateException: Failed to read log file file:/ckpt/offsets/7. Log file was malformed: failed to read correct log version from x1.\n" +
			"```\n\nAn offsets file holding only `v1` fails unwrapped with `java.util.NoSuchElementException`; " +
			"bad JSON fails with the JSON library's exception. A Kafka source handed an offset it cannot read: " +
			"`java.lang.IllegalArgumentException: Expected e.g. {\"topicA\":{\"0\":23,\"1\":-1},\"topicB\":{\"0\":-2}}, got …`.",
		Fix: `Restore the file from a backup if you have one. Otherwise ` + "`ckpt repair <checkpoint>`" + ` plans the
removal of a damaged latest file (and of the commits that would then be ahead), so the previous batch
becomes the latest and the lost batch is planned again; ` + "`ckpt replay <checkpoint>`" + ` shows what that
re-reads.`,
	},
	{
		ID:         CodeUnsupportedLogVersion,
		Title:      "A log file's version is too new for this Spark",
		Severities: []Severity{Error, Warning},
		Summary:    "A log file's header (`v2`, `v3`, …) is newer than the Spark release given with `--spark-version` can read.",
		Explanation: `The first line of every log file is its format version, and each Spark release reads only the
versions it knows (offsets: v1 up to 4.0; commits: v1 up to 3.5, exactly the configured
` + "`spark.sql.streaming.stateStore.checkpointFormatVersion`" + ` in 4.0). A newer header means a newer Spark (or
a newer checkpoint format setting) wrote the checkpoint; downgrading Spark over it fails at start when
the file is one Spark reads on restart (error), and later otherwise (warning: found with ` + "`--deep`" + `,
which checks every file's header against the release with the same rules as the restart).`,
		SparkError: "Spark 3.x:\n\n```\n" +
			"java.lang.IllegalStateException: Failed to read log file file:/ckpt/commits/7. UnsupportedLogVersion: maximum supported log version is v1, but encountered v2. The log file was produced by a newer version of Spark and cannot be read by this version. Please upgrade.\n" +
			"```\n\nSpark 4.x:\n\n```\n" +
			"[INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION] UnsupportedLogVersion. The maximum supported log version is v1, but encountered v2. The log file was produced by a newer version of Spark and cannot be read by this version. You need to upgrade. SQLSTATE: KD002\n" +
			"```",
		Fix: `Run the query with a Spark release that can read the checkpoint (check one with
` + "`ckpt doctor <checkpoint> --spark-version V`" + `), or with the matching checkpoint format setting. Do not
delete or rewrite the files by hand: commit v2 files are the only link to the right state store files.
To go back to an older release, ` + "`ckpt migrate <checkpoint> --to-spark V`" + ` rewrites what can be expressed in
its formats (checkpoint format v2 as v1, RocksDB SST format 6 as 5) through the journal, and says
exactly what cannot (transformWithState state, offsets v2, commits v3, Avro or checksummed state
rows); the finding names what ` + "`ckpt migrate`" + ` would do for the release given.`,
	},
	{
		ID:         CodeSourceCountMismatch,
		Title:      "Offsets files disagree on the number of sources",
		Severities: []Severity{Error, Warning},
		Summary:    "Two offsets files hold offsets for a different number of sources (or one has a stray blank line).",
		Explanation: `Each offsets file has one line per streaming source, in the order of the query plan, and Spark
asserts that the number matches the running query. On restart it checks the latest offsets file and
the one it restarts from, so if those two disagree no query can restart from them (error): ckpt
cannot see the query, so it takes the latest file's sources as the query's and reports the other
file, with the error that query gets. A
disagreement further back means the query's sources were changed at some point; it matters only for
going back to those batches (warning). An extra blank line in a file edited by hand counts as an
extra source.`,
		SparkError: "Spark 2.4 and later (A: the file's sources, B: the query's):\n\n```\njava.lang.AssertionError: assertion failed: There are [A] sources in the checkpoint offsets and now there are [B] sources requested by the query. Cannot continue.\n```\n\n" +
			"Spark 2.1 to 2.3: `java.lang.AssertionError: assertion failed`.",
		Fix: `Restart with the query whose sources match the checkpoint, or start a new checkpoint for a query
whose sources changed. If a file was edited by hand, restore it from a backup. ckpt does not rewrite
source offsets to match a different query.`,
	},
	{
		ID:         CodeMissingMetadata,
		Title:      "The `metadata` file (query id) is missing",
		Severities: []Severity{Error, Warning},
		Summary:    "The root `metadata` file is missing while `offsets/` or `commits/` hold batches.",
		Explanation: "`metadata` holds the query's id (`{\"id\":\"<uuid>\"}`). Sinks that deduplicate by query id " +
			"(Delta's `txnAppId`, `foreachBatch` writers keyed on it, listeners and dashboards) depend on it staying " +
			"the same across restarts.\n\n" +
			"Spark 4.1 and older silently create a **new** query id when the file is missing, so the restart " +
			"works but those sinks see a different query and may write duplicates (warning). Spark 4.2 and later " +
			"refuse to start (error). The file is the oldest in the checkpoint, which makes it the first victim of " +
			"a storage lifecycle rule that expires old objects.",
		SparkError: "Spark 4.2 and later:\n\n```\n[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] Checkpoint location <checkpoint> is in an inconsistent state: … SQLSTATE: 42K03\n```\n\nSpark 4.1 and older: nothing; a new id is written.",
		Fix: "Restore `metadata` from a backup, or write it with the query's **original** id, which appears in the " +
			"driver log (`Starting [id = <uuid>, runId = …]`), the Spark UI and `StreamingQueryListener` events. " +
			"Never write a new random id: that is exactly the silent change this code warns about.",
	},
	{
		ID:         CodeMissingInitialOffsets,
		Title:      "A Kafka source's initial offsets are gone when the restart needs them",
		Severities: []Severity{Error},
		Summary:    "The restart will start a Kafka source from its initial offsets, and `sources/<i>/0` is missing.",
		Explanation: `A Kafka source records where it first started in ` + "`sources/<i>/0`" + `, written once. Spark reads it
again whenever a batch has no start offset for the source: a re-run of batch 0, or an async-progress
restart with no earlier offsets file. If the file is gone, Spark resolves ` + "`startingOffsets`" + ` again
(default ` + "`latest`" + `), so the batch starts from today's end of the topic and the records in between are
skipped, or read again with ` + "`earliest`" + `, without any error.`,
		SparkError: "",
		Fix: `Restore ` + "`sources/<i>/0`" + ` from a backup, or set ` + "`startingOffsets`" + ` explicitly to the positions
the query originally started from before restarting. ` + "`ckpt replay <checkpoint>`" + ` shows the ranges the
restart reads.`,
	},
	{
		ID:         CodeKafkaRangeDataLoss,
		Title:      "The Kafka range of the batch that re-runs loses data",
		Severities: []Severity{Error},
		Summary:    "In the batch the restart runs again, a Kafka partition's end offset is below its start offset, or a partition in the start offsets is missing from the end offsets.",
		Explanation: `A batch that re-runs reads exactly the range the checkpoint recorded, from the offsets file it
restarts from to the latest one. Spark never writes a range that goes backwards or drops a partition,
so the two files disagree: the topic was deleted and recreated (with fewer partitions) between the two
batches, or a file was edited or copied in by hand. This is visible in the checkpoint alone; with a
broker to compare with, the ` + "`--bootstrap-server`" + ` checks say more about the topic as it is now.

Spark reports it as data loss when it plans the re-run: with ` + "`failOnDataLoss=true`" + ` (the default) the
restart fails; with ` + "`false`" + ` it logs a warning, drops the partitions that are gone and reads nothing
where the range goes backwards.`,
		SparkError: "Driver side (`getOffsetRangesFromResolvedOffsets`), with `failOnDataLoss=true`; a partition gone comes first:\n\n```\n" +
			"java.lang.IllegalStateException: Set(T-P) are gone. Some data may have been missed.. \n" +
			"Some data may have been lost because they are not available in Kafka any more; …\n" +
			"java.lang.IllegalStateException: Partition T-P's offset was changed from S to E, some data may have been missed. \n" +
			"Some data may have been lost because they are not available in Kafka any more; …\n" +
			"```",
		Fix: `If the topic was recreated on purpose, the recorded offsets belong to the old topic: start the query
on a new checkpoint, or restart once with ` + "`failOnDataLoss=false`" + ` and accept the loss. If a file was
edited or copied in by hand, restore it from a backup. ckpt does not rewrite source offsets;
` + "`ckpt replay <checkpoint>`" + ` shows the range per partition.`,
	},
	{
		ID:         CodeSinkAhead,
		Title:      "The file sink has batches the checkpoint has not planned",
		Severities: []Severity{Error},
		Summary:    "The file sink's `_spark_metadata` log (`--sink`) has batches that the restart will plan again as new batches.",
		Explanation: `The file sink skips any batch id it already has ("Skipping already committed batch"). If the
sink is ahead of the offsets, the batches between will be planned again with whatever data the sources
have now, and the sink will silently drop them: data loss without an error. This appears after offsets
were deleted or a checkpoint was restored from an older copy, and it is why ckpt refuses to plan a
repair that deletes offsets the sink already has. (A sink that has exactly the batch being re-run is
normal: the query stopped between the sink write and the commit, and the sink skips the re-run.)`,
		SparkError: "Spark logs, and loses the batch silently:\n\n```\nINFO FileStreamSink: Skipping already committed batch N\n```",
		Fix: `Do not delete offsets at or below the sink's latest batch. Restore the missing offsets from a
backup, or point ` + "`--sink`" + ` at the right directory if it is a different query's output.
` + "`ckpt replay <checkpoint> --sink <dir>`" + ` shows which batches the sink will skip.`,
	},
	{
		ID:         CodeSinkBehind,
		Title:      "The file sink is missing committed batches",
		Severities: []Severity{Warning},
		Summary:    "The file sink's `_spark_metadata` log (`--sink`) ends before the latest commit.",
		Explanation: `A commit is written only after the sink's write succeeded, so the sink log should reach at least
the latest commit. If it does not, the sink's log was deleted, reset or restored from an older copy, or
` + "`--sink`" + ` names a different query's output. Readers of a file sink trust only its log, so the data of
the missing batches is invisible to them, and Spark will not write those batches again.`,
		SparkError: "",
		Fix: `Check that ` + "`--sink`" + ` is this query's output directory. If it is, restore ` + "`_spark_metadata`" + ` from a
backup; the batches between cannot be recovered by restarting.`,
	},
	{
		ID:         CodeSinkEntryOutside,
		Title:      "The file sink's log lists files outside its output directory",
		Severities: []Severity{Error},
		Summary:    "An add entry of the file sink's `_spark_metadata` log (`--sink`) points outside the output directory: a `..` path, or another absolute location.",
		Explanation: `Spark's file sink writes every file below its output directory and records it in
` + "`_spark_metadata`" + ` with its full path. Readers of the output (a batch read of the directory, and
ckpt) take the list of files from the log, not from a directory listing, so an entry that points
elsewhere makes them read a file that is not this query's output: another dataset, or anything the
path names. Spark never writes such an entry; it comes from a hand-edited log, a log copied from another
query, or an attack. ckpt compares the entries with the output directory ` + "`--sink`" + ` names; when
none of them is below it (the output was copied or moved), with the directory most entries share.`,
		SparkError: "",
		Fix: `Find out how the entry got there. If the log was edited or copied from another query, restore
` + "`_spark_metadata`" + ` from a backup; do not read the output through its log until then.`,
	},
	{
		ID:         CodeSinkLogBatchMissing,
		Title:      "A file of the file sink's log that readers need is gone",
		Severities: []Severity{Error},
		Summary:    "A batch file or compaction file of `_spark_metadata` that Spark's `allFiles` reads (the latest compaction and every batch after it) does not exist (`ckpt sink verify`, `doctor --sink --deep`).",
		Explanation: `Readers of a file sink (a batch read of the output directory, and the sink itself when it
lists its files) read the latest compaction file and every batch file after it. When one is missing,
Spark retries (it may be a compaction in progress) and then fails: the output cannot be read through its
log. A missing compaction file is usually a failed upload or a cleanup that went wrong; its
entries are the previous compaction's plus the batches since, which ` + "`ckpt sink repair`" + ` rebuilds if
those files still exist.`,
		SparkError: "```\njava.lang.IllegalStateException: file:/out/_spark_metadata/19.compact doesn't exist (latestId: 21, compactInterval: 10)\n```",
		Fix: `For a compaction file: ` + "`ckpt sink repair <output>`" + ` plans a rebuild by Spark's compaction rules
(` + "`--execute`" + ` applies it, journaled; ` + "`ckpt repair undo`" + ` reverts it). A batch's own file holds entries no
other file has: restore it from a backup.`,
	},
	{
		ID:         CodeSinkFileMissing,
		Title:      "A data file the file sink's log lists is gone",
		Severities: []Severity{Error},
		Summary:    "A live entry of `_spark_metadata` (an add no delete cancels) names a data file that is not in the output (`ckpt sink verify`, `doctor --sink --deep`).",
		Explanation: `Readers take the file list from the log and open every file in it, so a listed file that is
gone makes every read of the output fail. It is typical after a manual cleanup or a lifecycle rule on
the bucket, or after copying the output without all its files.`,
		SparkError: "```\njava.io.FileNotFoundException: File file:/out/part-00000-….parquet does not exist\n```",
		Fix: `Restore the file from a backup. If the data is lost for good,
` + "`ckpt sink repair <output> --drop-missing`" + ` rewrites the latest compaction file without the entries whose
files are gone (journaled, undoable with ` + "`ckpt repair undo`" + `); an entry of a batch file after it cannot be
dropped, as that file is the batch's own record.`,
	},
	{
		ID:         CodeSinkFileSizeMismatch,
		Title:      "A data file's size differs from the size the file sink's log records",
		Severities: []Severity{Error},
		Summary:    "A live data file of a file sink has a size other than the one its `_spark_metadata` entry records.",
		Explanation: `Readers plan their splits from the sizes in the log, not from the files: a file that shrank
is read past its end (an error or a corrupt read), one that grew is read only in part. Spark never
rewrites a data file it logged: the file was replaced or truncated from outside.`,
		SparkError: "",
		Fix:        `Restore the file from a backup, or find what rewrote it. The log's size is the size Spark wrote.`,
	},
	{
		ID:         CodeSinkFileExtra,
		Title:      "A data file in the file sink's output that the log does not list",
		Severities: []Severity{Info},
		Summary:    "A data file in the output directory (not hidden: no element starting with `_` or `.`) that no live `_spark_metadata` entry lists.",
		Explanation: `Readers that go through the log do not see it. This is normal after a failed batch (the
task files were written, the log entry never was; the re-run writes new files under new names), after
` + "`ckpt rewind --sink`" + `, or for files deleted from the log by a delete entry. Readers that list the
directory without the log (a plain Parquet read of a sub-directory) do see it, and may count its rows twice.`,
		SparkError: "",
		Fix: `Nothing blocks readers. Move the files away once you have checked they are leftovers of failed
batches; ` + "`ckpt sink verify -o json`" + ` lists them.`,
	},
	{
		ID:         CodeCommitLag,
		Title:      "The restart never runs again batches no commit says finished",
		Severities: []Severity{Error, Warning, Info},
		Summary:    "The latest commit C is below the batch the restart starts from (L-1 in the normal engine), so batches C+1 … L-1 are never run again.",
		Explanation: `Spark re-runs only batch L on restart, over the range from the offsets it restarts from to
` + "`offsets/L`" + `. The batches between the latest commit and that start (C+1 … L-1 in the normal engine)
have no commit and are **not** run again: unless their output reached the sink before their commits
were lost, their records are lost. The finding names the span of batches (some may have no offsets
file left) and the records at stake: the Kafka records between the end of batch C and the start of the
re-run, read from the two offsets files. It is an error when commits exist (a commit log that trails
by more than one was cut by hand), a warning when ` + "`commits/`" + ` is empty (the checkpoint cannot tell
whether the batches finished). Under async progress tracking commits are sparse by design and the
re-run range covers the gap (info); so does a repaired checkpoint whose ` + "`offsets/L-1`" + ` holds the
committed offsets.`,
		SparkError: "```\nWARN MicroBatchExecution: Batch completion log latest batch id is C, which is not trailing batchid L by one\n```",
		Fix: `Check the sink for the listed batches. If they are missing there, ` + "`ckpt repair <checkpoint>`" + ` plans a
restart that reads them again; ` + "`ckpt replay <checkpoint>`" + ` shows the exact range the restart reads.`,
	},
	{
		ID:         CodeAsyncProgressGaps,
		Title:      "The logs have the gaps of async progress tracking",
		Severities: []Severity{Warning, Info},
		Summary:    "`offsets/` (and `commits/` on the same ids) skip batch ids, the pattern async progress tracking leaves.",
		Explanation: `With ` + "`asyncProgressTrackingEnabled`" + ` Spark persists offsets and commits only every
` + "`asyncProgressTrackingCheckpointIntervalMs`" + ` (default 1000 ms), so the logs have gaps. The async engine
restarts from the nearest lower offsets file and is fine with them. The normal engine is not: if the
latest offsets file is not directly preceded by its neighbour, switching async progress tracking off
makes the next restart fail with "batch L-1 doesn't exist" (warning; when the run is already in the
normal engine that is ` + "`missing-previous-offsets`" + `). Gaps further back only limit how far back you can
go (info).

Failure recovery time grows with the checkpoint interval: the async engine restarts from the latest
persisted batch, so a failure replays every batch run since then, up to one interval's worth. The
finding says what the async restart does and how many batches and Kafka records lie between the last
two persisted offsets files, which is about what a failure just before the next persisted batch
replays (` + "`ckpt replay --mode async`" + ` shows the restart in full). ` + "`ckpt run --async-switch-off`" + `
performs Spark's switch-off procedure itself.`,
		SparkError: "",
		Fix: `Before switching async progress tracking off, run the query with
` + "`asyncProgressTrackingCheckpointIntervalMs=0`" + ` for at least two micro-batches (Spark's documented
procedure), then disable it.`,
	},
	{
		ID:         CodeOrphanChecksum,
		Title:      "A checksum file without its log file",
		Severities: []Severity{Error, Warning, Info},
		Summary:    "A `.N.crc` (or `N.crc`) checksum file exists in `offsets/` or `commits/` while `N` does not.",
		Explanation: `Hadoop's local file system writes a ` + "`.N.crc`" + ` beside each file and removes it with the file.
An orphan appears when ` + "`N`" + ` was deleted by hand. If Spark later writes batch N again, the leftover
checksum can make the rename into place fail, which Spark reports as two queries using the checkpoint
even when there is only one (warning, when the restart will write N). Orphans of old, purged ids are
harmless clutter (info).`,
		SparkError: "```\norg.apache.spark.SparkConcurrentModificationException: Multiple streaming queries are concurrently using file:/ckpt/commits\n```",
		Fix:        "`ckpt repair <checkpoint> --execute` removes orphan checksum files (after a backup).",
	},
	{
		ID:         CodeLeftoverTempFile,
		Title:      "Leftover temporary file of an interrupted write",
		Severities: []Severity{Info},
		Summary:    "A `.N.<uuid>.tmp` file is left in `offsets/` or `commits/`.",
		Explanation: `Spark writes each log file as a temporary file and renames it into place. A leftover temporary
file means a write was interrupted (a killed driver, a failed rename on an object store). Spark ignores
these files and never removes them; they say a crash happened around batch N.`,
		SparkError: "",
		Fix:        "`ckpt repair <checkpoint> --execute` removes leftover temporary files (after a backup).",
	},
	{
		ID:         CodeRepairLock,
		Title:      "A ckpt repair lock is held",
		Severities: []Severity{Warning},
		Summary:    "`_ckpt/lock` names a ckpt command that holds the checkpoint for a change.",
		Explanation: `Every ckpt command that changes a checkpoint (repair, purge, offsets reset, rewind, sink
repair, and the undo and resume of their journals) takes this lock first and removes it when it
ends. A lock that stays means that command is running, stopped half-way (its journal explains the
checkpoint's state), or was killed before it wrote a journal (then it changed nothing). Spark
ignores the lock; other ckpt commands that change the checkpoint refuse while it is held, except
that a lock whose holder is gone from this host and wrote no journal is taken over.`,
		SparkError: "",
		Fix:        "Wait for a running holder. If its journal exists: `ckpt repair resume <journal>` or `ckpt repair undo <journal>`. Without a journal the next change takes the stale lock over; `--force` if the holder ran on another host and is gone.",
	},
	{
		ID:         CodeLeftoverStaging,
		Title:      "Staged state files left by a stopped ckpt",
		Severities: []Severity{Info},
		Summary:    "`_ckpt/staging/<run>/` holds new state files that no running ckpt and no journal will place.",
		Explanation: `` + "`ckpt state repartition --execute`" + ` (and ` + "`state edit --execute`" + `) streams every new state file to ` + "`_ckpt/staging/<run>/`" + ` while it
reads the state (a gigabyte of state is not held in memory), then its journal places them by hard links or
copies and removes the run. A run killed before its journal was written (or whose journal's clean-up
failed) leaves that directory behind, with a marker ` + "`_ckpt/staging/<run>.json`" + ` naming the ckpt's host
and pid. It is not part of the checkpoint Spark reads: Spark reads only ` + "`metadata`" + `, ` + "`offsets/`" + `,
` + "`commits/`" + `, ` + "`sources/`" + ` and ` + "`state/`" + `, and ignores ` + "`_ckpt/`" + `; the files only take space (as much as the
new state). doctor reports a run as leftover only when no process that may be alive stages into it (its
marker's pid is gone from this host) and nothing may still place it: the repair lock is not held (or is
stale), and no journal under ` + "`_ckpt/repairs`" + ` that is neither done nor undone copies from it.`,
		SparkError: "",
		Fix:        "Nothing blocks the restart. `ckpt purge <checkpoint> --staging` lists the runs and why any stays; `--execute` removes the stale ones (it judges each run again first, and never removes one in progress or journaled).",
	},
	{
		ID:         CodeRetentionAnomaly,
		Title:      "Retention does not look like Spark's purge",
		Severities: []Severity{Warning, Info},
		Summary:    "The batches kept in `offsets/` and `commits/` do not match what Spark's purge leaves behind.",
		Explanation: "Spark keeps the last `spark.sql.streaming.minBatchesToRetain` batches (default 100) and deletes " +
			"offsets and commits below the same threshold, so both logs normally start at the same id and hold about " +
			"101 files. doctor flags:\n\n" +
			"* commits purged further than offsets, or offsets further than commits, or commits missing in the middle " +
			"of the retained range under the normal engine: files were deleted by hand or by a lifecycle rule " +
			"(warning);\n" +
			"* far more files than the default keeps: `minBatchesToRetain` was raised or purging fails, which makes " +
			"every listing slow on object stores (info);\n" +
			"* fewer files than the default keeps in a long-running query: `minBatchesToRetain` was lowered or files " +
			"were deleted, which limits rollback and replay (info).",
		SparkError: "",
		Fix: "Nothing blocks the restart. Find what deletes files (a lifecycle rule, a cleanup script) or check " +
			"`spark.sql.streaming.minBatchesToRetain`.",
	},
	{
		ID:         CodeUncommittedBatch,
		Title:      "The latest batch will run again",
		Severities: []Severity{Info},
		Summary:    "The latest offsets batch L has no commit, so the restart runs it again over the recorded range.",
		Explanation: `The batch was planned (its offsets were written) but not committed: the query stopped while it
ran. Spark re-runs it over exactly the recorded range, with the same timestamp and watermark. Sinks that
are idempotent by batch id (the file sink, Delta, foreachBatch writers that check the id) write it
once; others may write it twice.`,
		SparkError: "",
		Fix:        "Nothing to fix. `ckpt replay <checkpoint>` shows the range per source and partition.",
	},
	// The broker checks (broker.go): only with --bootstrap-server. Severity: error when data is
	// lost or the restart fails (recovery.BrokerIssue's DataLoss or Fails), info otherwise; only a
	// partition added at offset 0 is neither. No broker condition is a warning: each either
	// loses data now or is harmless.
	{
		ID:         CodeOffsetsOutOfRange,
		Title:      "Kafka no longer has the records the query reads next",
		Severities: []Severity{Error},
		Summary:    "With `--bootstrap-server`: the offset a Kafka source reads next (the start of the re-run batch, or the latest committed end offset) is below the partition's log start on the broker.",
		Explanation: `Kafka deleted records the query has not read yet: retention (` + "`retention.ms`, `retention.bytes`" + `) ran
while the query was down or behind, or someone ran ` + "`kafka-delete-records`" + `. Those records are gone from
Kafka whatever Spark does; the finding says how many (offsets: on a transactional topic commit markers
take offsets too, so the count is an upper bound).

The executors reading the batch ask Kafka for the checkpoint's offset and get ` + "`OffsetOutOfRange`" + `. With
` + "`failOnDataLoss=true`" + ` (the default) the task fails, and after its retries the query stops. With
` + "`failOnDataLoss=false`" + ` Spark logs a warning, skips to the earliest offset still available and reads on:
the loss is silent.

doctor checks the offsets the restart reads next: the recorded range of the batch that re-runs (and
then the end of that range, where the batch after it starts), or the end offsets of the latest
committed batch.`,
		SparkError: "Executor side (`KafkaDataConsumer`), with `failOnDataLoss=true`; the group id is random per run:\n\n```\n" +
			"java.lang.IllegalStateException: Cannot fetch offset N (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: T-P). \n" +
			"Some data may have been lost because they are not available in Kafka any more; either the\n" +
			" data was aged out by Kafka or the topic may have been deleted before all the data in the\n" +
			" topic was processed. If you don't want your streaming query to fail on such cases, set the\n" +
			" source option \"failOnDataLoss\" to \"false\".\n" +
			"```\n\n" +
			"With `failOnDataLoss=false` the same text is logged as a WARN (with the `failOnDataLoss=true` advice instead), followed by " +
			"`The current available offset range is AvailableOffsetRange(S,E). Offset N is out of range, and records in [N, S) will be skipped …`.",
		Fix: `The records cannot be brought back from Kafka. Either re-ingest them into the topic from where they
came from (the query then reads them, after newer ones), or accept the loss: restart once with the source
option ` + "`failOnDataLoss=false`" + ` (Spark skips to the log start and reads on), then set it back to ` + "`true`" + `
so that the next loss is not silent. ` + "`ckpt replay <checkpoint> --bootstrap-server … --fail-on-data-loss=false`" + `
shows that restart. To prevent it, keep the topic's retention well above the longest time the query
can be down or behind, and alert on ` + "`ckpt lag`" + ` (` + "`ckpt_issue{code=\"offsets-out-of-range\"}`" + `).`,
	},
	{
		ID:         CodeTopicRecreated,
		Title:      "The checkpoint's Kafka offsets are past the end of the log",
		Severities: []Severity{Error},
		Summary:    "With `--bootstrap-server`: the offset a Kafka source reads next, or the end of the range a re-run reads, is above the partition's latest offset on the broker.",
		Explanation: `A checkpoint offset can only be above the log end when the partition's log was replaced: the topic was
deleted and created again (Kafka starts it at offset 0), or, rarely, an unclean leader election moved
the high watermark back. The checkpoint's offsets belong to the old log.

When Spark plans a new batch it lists the latest offsets and finds them below the start: with
` + "`failOnDataLoss=true`" + ` it stops; with ` + "`false`" + ` it warns, reads nothing from the partition in that batch
and continues from the new log end, so the records the recreated topic already holds are never read
(the finding counts them). A batch that re-runs over a recorded range fails on the executors instead,
at the first offset that no longer exists (the finding counts the offsets of the range that are gone).

A topic recreated with **more** records than the checkpoint had read looks like progress and cannot be
detected, by ckpt or by Spark: the query then silently reads the new topic from the old offsets.`,
		SparkError: "Driver side (`KafkaMicroBatchStream`), planning a new batch:\n\n```\n" +
			"java.lang.IllegalStateException: Partition T-P's offset was changed from FROM to UNTIL, some data may have been missed. \n" +
			"Some data may have been lost because they are not available in Kafka any more; …\n" +
			"```\n\n" +
			"Executor side, re-running a batch: `java.lang.IllegalStateException: Cannot fetch offset N (GroupId: …, TopicPartition: T-P). …`. " +
			"With `failOnDataLoss=false` the same texts are logged as WARN lines.",
		Fix: `If the topic was recreated on purpose, the old offsets mean nothing. Start the query on a new
checkpoint (` + "`startingOffsets`" + ` ` + "`earliest`" + ` reads the new topic from its start; the query's state starts
empty), or restart once with ` + "`failOnDataLoss=false`" + ` and accept that the records the new topic holds
now are skipped (` + "`ckpt replay <checkpoint> --bootstrap-server … --fail-on-data-loss=false`" + ` shows it).
If the high watermark went back, the records above it are lost on the broker: restart once with
` + "`failOnDataLoss=false`" + `. ckpt does not rewrite source offsets.`,
	},
	{
		ID:         CodePartitionsRemoved,
		Title:      "A Kafka partition in the checkpoint no longer exists",
		Severities: []Severity{Error},
		Summary:    "With `--bootstrap-server`: a partition the checkpoint has offsets for is missing from its topic on the broker.",
		Explanation: `Kafka cannot remove partitions from a topic, so a partition disappears when the topic was deleted and
recreated with fewer partitions (the other partitions' offsets are then stale too: see
` + "`topic-recreated`" + `). What the partition held after the checkpoint's offset is lost, and nobody can count it.

Spark names all the gone partitions in one message when it plans the next batch; a batch that
re-runs over a recorded range names the partitions new in its range that it cannot find. With
` + "`failOnDataLoss=true`" + ` it stops; with ` + "`false`" + ` it warns and stops reading those partitions.`,
		SparkError: "```\njava.lang.IllegalStateException: Set(T-P, …) are gone. Some data may have been missed.. \n" +
			"Some data may have been lost because they are not available in Kafka any more; …\n```\n\n" +
			"The doubled period is Spark's. With `kafka.group.id` set, Spark's group-id warning replaces \"Some data may have been missed.\". " +
			"For partitions new in a re-run's range: `Cannot find earliest offsets of Set(T-P). Some data may have been missed. …`.",
		Fix: `Start the query on a new checkpoint, or restart once with ` + "`failOnDataLoss=false`" + ` and accept the loss
(` + "`ckpt replay <checkpoint> --bootstrap-server … --fail-on-data-loss=false`" + ` shows it). ckpt does not
rewrite source offsets.`,
	},
	{
		ID:         CodePartitionsAdded,
		Title:      "A Kafka topic has partitions the checkpoint does not know",
		Severities: []Severity{Error, Info},
		Summary:    "With `--bootstrap-server`: a partition of a topic the query reads is not in the checkpoint's offsets.",
		Explanation: `Partitions were added to the topic (` + "`kafka-topics --alter --partitions`" + `) since the offsets were written.
With ` + "`subscribe`" + ` or ` + "`subscribePattern`" + ` Spark picks them up in the next batch and reads them from their
earliest offset. When that offset is 0 nothing is lost and the restart works (info). When it is not
(error), retention or DeleteRecords removed the partition's first records before the query saw them:
Spark says the partition "starts from X instead of 0" and, with ` + "`failOnDataLoss=true`" + `, stops; X records
are lost.

With ` + "`assign`" + ` the new partitions are not read at all; ignore this finding then.`,
		SparkError: "When the earliest offset X is not 0:\n\n```\n" +
			"java.lang.IllegalStateException: Added partition T-P starts from X instead of 0. Some data may have been missed. \n" +
			"Some data may have been lost because they are not available in Kafka any more; …\n```\n\n" +
			"Nothing when it is 0.",
		Fix: `Earliest offset 0: nothing to do (a large backlog in the new partition makes the first batch large;
` + "`maxOffsetsPerTrigger`" + ` bounds it). Otherwise the records below X are gone from Kafka: re-ingest them, or
restart once with ` + "`failOnDataLoss=false`" + ` to accept the loss. Restart queries soon after adding
partitions, and keep retention above that delay.`,
	},
	{
		ID:         CodeTopicMissing,
		Title:      "A Kafka topic in the checkpoint does not exist",
		Severities: []Severity{Error},
		Summary:    "With `--bootstrap-server`: a topic the checkpoint has offsets for does not exist on the broker.",
		Explanation: `The topic was deleted, or ckpt (or the query) points at another cluster. With ` + "`subscribe`" + ` or
` + "`assign`" + ` Spark cannot list the topic's offsets and the query fails, whatever ` + "`failOnDataLoss`" + ` says;
with ` + "`subscribePattern`" + ` the topic no longer matches and its partitions are reported as gone (an error
with ` + "`failOnDataLoss=true`" + `, a warning with ` + "`false`" + `). Everything the topic held after the checkpoint
is lost; nobody can count it.`,
		SparkError: "```\norg.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic T not found.\n```\n\n" +
			"(after `fetchOffset.numRetries` attempts). With `subscribePattern`: `Set(T-0, …) are gone. Some data may have been missed.. …`.",
		Fix: `Check that ` + "`--bootstrap-server`" + ` names the query's cluster. If the topic was deleted by mistake,
recreate it with the same name and partition count and restore its data if you can (the offsets are
then checked as ` + "`topic-recreated`" + `). If the query reads other topics now, start it on a new checkpoint.`,
	},
}

// Lookup returns the code with id.
func Lookup(id string) (Code, bool) {
	i := slices.IndexFunc(Codes, func(c Code) bool { return c.ID == id })
	if i < 0 {
		return Code{}, false
	}
	return Codes[i], true
}

// IDs lists every code id in registry order.
func IDs() []string {
	ids := make([]string, len(Codes))
	for i, c := range Codes {
		ids[i] = c.ID
	}
	return ids
}

// order is a code's position in the registry, for sorting findings.
func order(id string) int {
	return slices.IndexFunc(Codes, func(c Code) bool { return c.ID == id })
}
