package recovery

// Reasons a restart fails: Result.Reason. The set is closed (Reasons lists
// it) and stable: doctor, repair and runbooks key on it instead of on
// Spark's message text, which differs between releases. A value is never
// renamed or reused; a new failure mode gets a new value.
//
// Result.FailedFile names the file the reason is about, when there is one.
const (
	// ReasonMissingMetadata: the metadata file is gone while the logs hold
	// batches; Spark master refuses to start (MISSING_METADATA_FILE,
	// SPARK-55058). FailedFile: "metadata".
	ReasonMissingMetadata = "missing-metadata"
	// ReasonCorruptMetadata: the metadata file cannot be parsed.
	// FailedFile: "metadata".
	ReasonCorruptMetadata = "corrupt-metadata"
	// ReasonEmptyOffsetsWithCommits: offsets/ has no batch file while
	// commits/ has some. Spark master asserts at start (no FailedFile);
	// earlier releases start batch 0 as new and stop at the first commit
	// file that already exists (FailedFile: that commit).
	ReasonEmptyOffsetsWithCommits = "empty-offsets-with-commits"
	// ReasonCorruptLatestOffsets: offsets/L cannot be parsed (empty,
	// truncated, only a version line, malformed header, bad JSON).
	// FailedFile: offsets/L.
	ReasonCorruptLatestOffsets = "corrupt-latest-offsets"
	// ReasonUnsupportedOffsetsVersion: an offsets file the restart reads
	// (offsets/L or the previous one) has a version header the release does
	// not read (CheckVersion). FailedFile: that file.
	ReasonUnsupportedOffsetsVersion = "unsupported-offsets-version"
	// ReasonMissingPreviousOffsets: the sync engine needs offsets/L-1 and it
	// does not exist ("batch L-1 doesn't exist"). FailedFile: offsets/L-1.
	ReasonMissingPreviousOffsets = "missing-previous-offsets"
	// ReasonCorruptPreviousOffsets: the offsets file the restart starts from
	// (Result.PreviousBatch) cannot be parsed. FailedFile: that file.
	ReasonCorruptPreviousOffsets = "corrupt-previous-offsets"
	// ReasonSourceCountMismatch: OffsetSeq.toStreamProgress's assertion. An
	// offsets file the restart reads lists a different number of sources
	// than the query (modelled as offsets/L's sources, not counting empty
	// lines). FailedFile: the file that fails the assertion.
	ReasonSourceCountMismatch = "source-count-mismatch"
	// ReasonInvalidSourceOffset: the re-run hands a source a start offset it
	// cannot read (an empty line, or another source's offset).
	// FailedFile: the offsets file the start offset comes from.
	ReasonInvalidSourceOffset = "invalid-source-offset"
	// ReasonCorruptLatestCommit: commits/C cannot be parsed.
	// FailedFile: commits/C.
	ReasonCorruptLatestCommit = "corrupt-latest-commit"
	// ReasonUnsupportedCommitVersion: commits/C has a version header the
	// release (and, in 4.0, the commit format setting) does not read.
	// FailedFile: commits/C.
	ReasonUnsupportedCommitVersion = "unsupported-commit-version"
	// ReasonCommitsAhead: commits exist beyond offsets/L, and the commit of a
	// batch the restart runs meets an existing file (concurrent update).
	// FailedFile: that commit file.
	ReasonCommitsAhead = "commits-ahead"
	// ReasonCorruptInitialOffsets: a Kafka source's sources/<i>/0, read
	// because the re-run has no start offset for it, cannot be parsed.
	// FailedFile: sources/<i>/0.
	ReasonCorruptInitialOffsets = "corrupt-initial-offsets"
	// ReasonUnsupportedInitialOffsetsVersion: that sources/<i>/0 has a
	// version header the release does not read. FailedFile: sources/<i>/0.
	ReasonUnsupportedInitialOffsetsVersion = "unsupported-initial-offsets-version"
)

// More reasons, added after the first set (a value is never reused).
const (
	// ReasonBatchSpanTooLarge: Spark 3.4+ lists a log as every id from its
	// oldest to its newest file ((min to max).toArray in
	// HDFSMetadataLog.listBatches, SPARK-40957), which fails with "More than
	// Int.MaxValue elements." when the ids span more than 2^31-1.
	// FailedFile: the log directory ("offsets" or "commits").
	ReasonBatchSpanTooLarge = "batch-span-too-large"
	// ReasonKafkaRangeDataLoss: the re-run's recorded Kafka range loses
	// data: a partition of the start offsets is missing from the end
	// offsets, or an end offset is below its start. Spark checks it while
	// planning the batch, without the broker, and fails with
	// failOnDataLoss=true (the default). FailedFile: offsets/L.
	ReasonKafkaRangeDataLoss = "kafka-range-data-loss"
	// ReasonLatestNotReadable: the newest id of offsets/ or commits/, as
	// Spark lists it, names no file Spark can open: the listed name is not
	// the id's canonical spelling ("007", "+7": Spark parses the name with
	// toLong, then opens offsets/7), or, up to 3.5, it is a directory (4.0
	// lists files only, SPARK-46339). FailedFile: the listed entry.
	ReasonLatestNotReadable = "latest-not-readable"
	// ReasonOrphanChecksum: an orphan Hadoop checksum (.N.crc) sits next to
	// the first log file the restart writes; the checksum rename fails and
	// Spark reports a concurrent use of the log. FailedFile: the .crc.
	ReasonOrphanChecksum = "orphan-checksum"
	// ReasonNotEmptyOnStart: offsets/ holds no batch, so the query starts at
	// batch 0, and Spark 4.1+ first checks that offsets/, state/ and commits/
	// are empty (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY); offsets/ or
	// state/ is not (commits/ with batches is
	// ReasonEmptyOffsetsWithCommits). FailedFile: that directory.
	ReasonNotEmptyOnStart = "not-empty-on-start"
	// ReasonBatchPathTaken: a directory sits where the restart writes its
	// next log file (offsets/N, or commits/N after the batch):
	// HDFSMetadataLog.add finds the path taken and Spark reports a
	// concurrent update. FailedFile: that directory.
	ReasonBatchPathTaken = "batch-path-taken"
	// ReasonSparkBug: a bug of the Spark release stops the restart, not the
	// checkpoint (Result.SparkBug says which, what was written before the
	// failure, and what fixes it). FailedFile: the offsets file of the batch
	// that ran.
	ReasonSparkBug = "spark-bug"
	// ReasonKafkaPrefetchMismatch: Spark 4.0.0 under Trigger.AvailableNow
	// compares the re-run's end offsets with the offsets it fetched from the
	// broker at start, and the topic-partitions differ. FailedFile: offsets/L.
	ReasonKafkaPrefetchMismatch = "kafka-prefetch-mismatch"
)

// Reasons is the closed set of Result.Reason values, in the order Spark
// meets them on a restart.
var Reasons = []string{
	ReasonMissingMetadata,
	ReasonCorruptMetadata,
	ReasonBatchSpanTooLarge,
	ReasonEmptyOffsetsWithCommits,
	ReasonNotEmptyOnStart,
	ReasonCorruptLatestOffsets,
	ReasonUnsupportedOffsetsVersion,
	ReasonMissingPreviousOffsets,
	ReasonCorruptPreviousOffsets,
	ReasonSourceCountMismatch,
	ReasonCorruptLatestCommit,
	ReasonUnsupportedCommitVersion,
	ReasonCommitsAhead,
	ReasonCorruptInitialOffsets,
	ReasonUnsupportedInitialOffsetsVersion,
	ReasonInvalidSourceOffset,
	ReasonKafkaPrefetchMismatch,
	ReasonKafkaRangeDataLoss,
	ReasonLatestNotReadable,
	ReasonBatchPathTaken,
	ReasonOrphanChecksum,
	ReasonSparkBug,
}

// Behaviour keys of restarts that succeed: two releases behave alike when
// their keys and next batch match (a failing restart's key is its Reason).
// They are internal; the JSON carries the effects.
const (
	keyFresh          = "fresh"
	keyFreshIgnored   = "fresh-commits-ignored"
	keyResume         = "resume"
	keyRerun          = "rerun"
	keyRerunBehind    = "rerun-commits-behind"
	keyRerunNoCommits = "rerun-no-commits"
	keyRerun21        = "rerun-spark-2.1"
	keyAheadIgnored   = "rerun-commits-ahead-ignored"
)
