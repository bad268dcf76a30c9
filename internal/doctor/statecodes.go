package doctor

// The state store codes (state.go). They are registered here, appended to Codes, so that the
// registry's order puts them after the log and sink codes.
const (
	CodeStateVersionMissing     = "state-version-missing"
	CodeStateFileCorrupt        = "state-file-corrupt"
	CodeRocksDBSSTMissing       = "rocksdb-sst-missing"
	CodeStatePartitionsMismatch = "state-partitions-mismatch"
	CodeStateLineageBroken      = "state-lineage-broken"
	CodeStateSchemaMissing      = "state-schema-missing"
	CodeStateReclaimable        = "state-reclaimable"
	CodeStateAheadOfLogs        = "state-ahead-of-logs"
	CodeStateFormatUnsupported  = "state-format-unsupported"
)

func init() { Codes = append(Codes, stateCodes...) }

var stateCodes = []Code{
	{
		ID:         CodeStateFormatUnsupported,
		Title:      "The state the restart loads is in a format this Spark does not read",
		Severities: []Severity{Error},
		Summary:    "The recovery planner predicts that the restart fails loading state written in a newer format: checkpoint format v2 file names under the format v1 loader, or RocksDB SST files of a newer table format.",
		Explanation: `Checkpoint format v2 (` + "`spark.sql.streaming.stateStore.checkpointFormatVersion=2`" + `, RocksDB, Spark 4.0+)
names each state file ` + "`<version>_<uuid>.zip`" + ` / ` + "`.changelog`" + `. The setting is the restart's session's, not the
checkpoint's: with it at 1 (the default), Spark's format v1 loader lists the partition's zips and
parses each name as a version. Spark 4.2.0 reads the v2 commit and then fails that way (4.0 and 4.1
fail on the v2 commit before). RocksDB SST files of ` + "`rocksdb.formatVersion=6`" + ` (Spark 4.1+) are refused by
Spark 3.5's RocksDB when it opens them; 4.0 and later read them. Found with the files of the load
read (the default run lists the names; the SST footers are read with ` + "`--deep`" + `).`,
		SparkError: "Spark 4.2.0, v2 names with the setting at 1 (testdata/spark-migrate):\n\n```\n" +
			"org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.  SQLSTATE: 58030\n" +
			"Caused by: java.lang.NumberFormatException: For input string: \"4_<uuid>\"\n" +
			"```\n\nSpark 3.5.7, SST format 6:\n\n```\n" +
			"org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage <stage> failed 1 times, most recent failure: Lost task 0.0 in stage <stage> (TID <tid>) (<host> executor driver): org.rocksdb.RocksDBException: Unsupported BlockBasedTable format_version. Please check include/rocksdb/table.h for more info\n" +
			"```",
		Fix: `v2 names: restart with ` + "`spark.sql.streaming.stateStore.checkpointFormatVersion=2`" + ` (Spark 4.0+ read the checkpoint
as it is then), or rewrite it in format v1 with ` + "`ckpt migrate --to-spark V`" + `. SST format 6 on Spark 3.5:
` + "`ckpt migrate --to-spark 3.5`" + ` writes the state again in table format 5.`,
	},
	{
		ID:         CodeStateAheadOfLogs,
		Title:      "State versions ahead of the offsets and commit logs",
		Severities: []Severity{Error},
		Summary:    "state/ holds versions at or above the one the restart's first new batch writes: the logs lost batches the state still has.",
		Explanation: `Batch N writes state version N+1 of every partition of every stateful operator, so after a
commit of batch C the state has versions up to C+1. Versions above that belong to batches the
offsets and commit logs no longer hold: a purge or rewind that removed the logs but not the
state, a partial restore, or another query on the same checkpoint. A restart from the logs (a
new query at batch 0 when offsets/ and commits/ are empty) then runs batches whose state
versions already exist, written by another run from other records: the restart does not see
them as its own, and the state it builds and the files on disk disagree. Spark 4.1 and later
refuse a new query on a checkpoint whose state/ is not empty (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY,
not-empty-on-start).`,
		Fix: `Find out where the logs went: restore offsets/ and commits/ from the backup of the change
that removed them (` + "`ckpt repair undo`" + ` of its journal) so they reach the state again. To start the query
over instead, move state/ away (or use a new checkpoint): the new query then builds its state
from the sources.`,
	},
	{
		ID:         CodeStateVersionMissing,
		Title:      "A state version the restart loads cannot be rebuilt",
		Severities: []Severity{Error},
		Summary:    "For some operator, store and partition, state version C+1 (C = the latest committed batch) has no snapshot with a complete chain of deltas or changelogs after it.",
		Explanation: `The batch a restart runs first (C+1) loads state version C+1 of every partition of every
stateful operator. The HDFS-backed store walks down from that version to the newest snapshot
and applies every delta above it; the RocksDB store takes the newest checkpoint zip at or below
it and replays every changelog above it. One missing delta or changelog in that chain, or a
missing partition directory, fails the task, and the query, on every retry. The files were
deleted by hand, by a lifecycle rule, by a partial copy, or by two queries sharing the
checkpoint.`,
		SparkError: "As real restarts of damaged copies showed it (testdata/spark-state-damage); the finding's own text is the planner's for the release. " +
			"HDFS-backed store, Spark 3.5: the task's exception inside the driver's report\n\n```\n" +
			"org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 1.0 failed 1 times, most recent failure: Lost task 1.0 in stage 1.0 (TID 2) (host executor driver): java.lang.IllegalStateException: Error reading delta file file:/ckpt/state/0/1/4.delta of HDFSStateStoreProvider[id = (op=0,part=1),dir = file:/ckpt/state/0/1]: file:/ckpt/state/0/1/4.delta does not exist\n" +
			"```\n\nSpark 4.0:\n\n```\n" +
			"org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS] An error occurred during loading state. Error reading delta file file:/ckpt/state/0/1/4.delta of HDFSStateStoreProvider[id = (op=0,part=1),dir = file:/ckpt/state/0/1]: file:/ckpt/state/0/1/4.delta does not exist. SQLSTATE: 58030\n" +
			"```\n\nSpark 4.1 and later name the provider by its id, with the run id of the restart: " +
			"`HDFSStateStoreProvider[stateStoreProviderId=StateStoreProviderId[ storeId=StateStoreId[ operatorId=0, partitionId=1, storeName=default ], queryRunId=<uuid> ]]`. " +
			"The file named is the first delta Spark reads after the newest snapshot: with the snapshot gone, `1.delta`. " +
			"RocksDB store, a missing changelog: `java.lang.IllegalStateException: Error reading streaming state file of file:/ckpt/state/0/1/5.changelog does not exist. If the stream job is restarted with a new or updated state operation, please create a new checkpoint location or clear the existing checkpoint location.` " +
			"(4.x: `[CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE]` with the same text), caused by `java.io.FileNotFoundException: File file:/ckpt/state/0/1/5.changelog does not exist`.",
		Fix: `Restore the missing file from a backup if there is one: nothing else holds that state. Otherwise
the query can only restart from a batch whose state is whole in every partition: the finding
names the newest such version V; rewinding the checkpoint to batch V-1 (removing the offsets and
commits after it, ` + "`ckpt repair`" + ` shows the plan) makes the restart re-run the later batches from the
sources, which must still hold their data. Starting on a new checkpoint loses the state.`,
	},
	{
		ID:         CodeStateFileCorrupt,
		Title:      "A state file the restart reads is damaged",
		Severities: []Severity{Error},
		Summary:    "A delta, snapshot, changelog or RocksDB SST file of the restart's chain does not decode: bad codec framing, a bad record size, no end marker, a bad SST footer magic or block checksum (found with --deep).",
		Explanation: `State files are written through Spark's compression codec (lz4 by default) as length-prefixed
UnsafeRow pairs ending with -1. A file truncated by a full disk or a partial copy, or with flipped
bytes, fails the load of that partition on every retry. A RocksDB version's SST files are checked
as RocksDB opens them: the footer's magic number, the index, and every block's checksum (crc32c or
XXH3). Only ` + "`--deep`" + ` reads the files; the default run stays within the listing.`,
		SparkError: "Depends on the damage; as real restarts of damaged copies showed it (testdata/spark-state-damage, lz4), the task's exception:\n\n```\n" +
			"java.io.EOFException: Stream ended prematurely                 (a delta or changelog cut short)\n" +
			"java.io.EOFException                                          (an empty delta)\n" +
			"java.io.IOException: Stream is corrupted                       (flipped bytes; caused by net.jpountz.lz4.LZ4Exception)\n" +
			"java.io.EOFException: Unexpected end of ZLIB input stream      (a RocksDB zip cut short)\n" +
			"org.rocksdb.RocksDBException: Bad table magic number: expected 9863518390377041911, found ...   (an SST footer)\n" +
			"org.rocksdb.RocksDBException: block checksum mismatch: stored = ..., computed = ..., type = 1 ...  (an SST block, read by the batch)\n" +
			"```\n\nSpark 3.5 reports it inside `Job aborted due to stage failure`; 4.x wraps a failed load in " +
			"`[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.  SQLSTATE: 58030`. " +
			"Spark 4.1 and later first compare the file with its checksum file `<file>.crc` when the read reaches its end " +
			"(a file cut short, an empty one), before the codec's error: `[CHECKPOINT_FILE_CHECKSUM_VERIFICATION_FAILED] Checksum verification failed, " +
			"the file may be corrupted. File: ... Expected (file size: 302, checksum: 2081543771), Computed (file size: 151, checksum: 1734715718). SQLSTATE: XX000`.",
		Fix: `Restore the file from a backup. Otherwise an HDFS-backed partition can skip a damaged delta only
through a newer snapshot (none exists, or doctor would not report it), so rewind the checkpoint to
the batch before the damaged version, as for ` + "`state-version-missing`" + `.`,
	},
	{
		ID:         CodeRocksDBSSTMissing,
		Title:      "An SST file a RocksDB checkpoint lists is missing",
		Severities: []Severity{Error},
		Summary:    "A RocksDB `N.zip` the restart loads lists an SST file that `SSTs/` does not have, or has with another size (found with --deep).",
		Explanation: `A RocksDB state version is a zip of metadata listing immutable SST files shared between
versions under ` + "`SSTs/`" + `. Spark copies each listed file to the executor and checks its size; a
missing one fails the load. SST files go missing when a cleanup or lifecycle rule deletes them, or
when a checkpoint is copied without ` + "`SSTs/`" + `.`,
		SparkError: "```\njava.io.FileNotFoundException: File file:/ckpt/state/0/1/SSTs/000008-<uuid>.sst does not exist\n```\n\n" +
			"(seen on 3.5.7 to 4.2.0: 3.5 in `Job aborted`, 4.x in `[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED]`), or, for a size mismatch (not checked against Spark): `[CANNOT_LOAD_STATE_STORE.UNEXPECTED_FILE_SIZE] Copied <dfsFile> to <localFile>, expected <expectedSize> bytes, found <localFileSize> bytes.`",
		Fix: `Restore the SST file from a backup. Otherwise rewind to a version whose zip lists only present
files (or, with changelog checkpointing, whose changelog chain from an older whole zip exists).`,
	},
	{
		ID:         CodeStatePartitionsMismatch,
		Title:      "State partitions differ from the query's shuffle partitions",
		Severities: []Severity{Error, Warning},
		Summary:    "The number of partition directories of a state store differs from `spark.sql.shuffle.partitions` in the latest offsets file.",
		Explanation: `Spark fixes the number of state partitions at the query's first batch: it keeps
` + "`spark.sql.shuffle.partitions`" + ` in every offsets file and restores it on restart, whatever the session says.
Fewer partition directories than that means state was lost (the restart fails on the missing
partitions once the state has versions: error); more means directories left from another query
or a changed checkpoint (ignored by Spark: warning).`,
		Fix: `Fewer: restore the missing partition directories, or treat it as ` + "`state-version-missing`" + `. More:
check that no other query writes this checkpoint; the extra directories can be moved aside.`,
	},
	{
		ID:         CodeStateLineageBroken,
		Title:      "Checkpoint format v2 state ids name files that do not exist",
		Severities: []Severity{Error},
		Summary:    "The latest commit records `stateUniqueIds` (checkpoint format v2), and for some partition no `<C+1>_<id>.zip` or `.changelog` with that id exists.",
		Explanation: `With ` + "`spark.sql.streaming.stateStore.checkpointFormatVersion=2`" + ` each commit names the exact
state files of the version it produced (` + "`<version>_<uuid>.zip|.changelog`" + `), and the restart loads
those and only those: a file with the same version and another id (left by a retried task) is not
a substitute. The commit and the state files disagree after a partial restore, or when commits
were edited by hand.`,
		SparkError: "`[CANNOT_LOAD_STATE_STORE.CANNOT_FIND_BASE_SNAPSHOT_CHECKPOINT] An error occurred during loading state. Cannot find a base snapshot checkpoint with lineage: <lineage>.` or a `FileNotFoundException` for the named file.",
		Fix: `Restore the named files, or rewind to the last batch whose commit ids all have their files. Never
rename another id's file to the expected name: its content belongs to another attempt.`,
	},
	{
		ID:         CodeStateSchemaMissing,
		Title:      "A state store has no schema file",
		Severities: []Severity{Warning},
		Summary:    "A store has state files but no `state/<op>/0/[<store>/]_metadata/schema` (nor transformWithState schema files).",
		Explanation: `Spark writes the key and value schema of each store at the first batch and checks every restart
against it, refusing incompatible changes with ` + "`STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE`" + `. Without the
file the next run writes a new one from the query as it is now, so an incompatible change to the
query goes unnoticed and the state is read with the wrong layout. The state reader (Spark's and
` + "`ckpt state read`" + `) cannot decode the rows either.`,
		Fix: `Restore the schema file from a backup of the checkpoint. Otherwise make sure the query's stateful
part is unchanged before restarting; Spark recreates the file.`,
	},
	{
		ID:         CodeStateReclaimable,
		Title:      "Old state versions that maintenance will delete",
		Severities: []Severity{Info},
		Summary:    "State files older than what `spark.sql.streaming.minBatchesToRetain` (default 100) keeps, which Spark's maintenance deletes.",
		Explanation: `Spark's maintenance task keeps the files needed to rebuild the last minBatchesToRetain versions
and deletes older ones, in the background, while the query runs. Files older than that are
reclaimable: they are still here because the query stopped or maintenance has not run. They also
bound how far back the checkpoint can be rewound: after maintenance, no earlier batch can restart.`,
		Fix: `Nothing is needed: the next run's maintenance deletes them. Copy the checkpoint first if you may
want to rewind further back than minBatchesToRetain batches.`,
	},
}
