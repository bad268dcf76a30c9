package logformat

// DefaultMinBatchesToRetain is the default of spark.sql.streaming.minBatchesToRetain: the
// batches of offsets, commits, file sink log and state whose files Spark's purge and state
// maintenance keep. The one home of that default.
const DefaultMinBatchesToRetain = 100
