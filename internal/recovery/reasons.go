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
)

// Reasons is the closed set of Result.Reason values, in the order Spark
// meets them on a restart.
var Reasons = []string{
	ReasonMissingMetadata,
	ReasonCorruptMetadata,
	ReasonBatchSpanTooLarge,
	ReasonEmptyOffsetsWithCommits,
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
	ReasonKafkaRangeDataLoss,
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
