// Package engine is the micro-batch engine behind `ckpt run`: Spark Structured Streaming's
// protocol, in Go. It reads Kafka, plans each batch as Spark does, writes Spark-compatible
// offsets/ and commits/ through one ordered log writer, and restarts by the rules of the one
// recovery planner (internal/recovery) — it never decides a restart itself.
//
// # Lifecycle
//
// An Engine is a state machine driven by Run:
//
//	start    → recovery.Plan (async mode with async progress tracking); refuse as Spark would,
//	           naming the async switch-off trap; then write metadata if absent
//	rerun    → (if the planner says so) batch L again with offsets/L's end offsets and timestamp
//	trigger  → wait for the trigger (Clock); stop on once/availableNow end, limits or a signal
//	plan     → source.Latest from the committed offsets under the read limit; no new data, no batch
//	wal      → offsets/N through the log writer (write-ahead), then purge to minBatchesToRetain
//	execute  → read every partition's range in parallel, transform, sink.AddBatch
//	commit   → commits/N through the log writer, progress event, metrics
//
// The clock is injected (Clock) so processingTime cadence is testable, and every log write goes
// through one ordered writer: the sync engine waits on each write; asynchronous progress tracking
// (async.go, Spark's AsyncProgressTrackingMicroBatchExecution) issues them without waiting and
// persists only every asyncProgressTrackingCheckpointIntervalMs, in the same state machine.
package engine
