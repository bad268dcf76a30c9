package recovery

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Outcomes of a restart.
const (
	OutcomeResume = "resume"
	OutcomeFail   = "fail"
)

// Result is what a restart of the query does. Its JSON form is a public
// contract (`ckpt replay -o json`, docs/replay.md).
type Result struct {
	// Outcome is "resume" or "fail".
	Outcome string `json:"outcome"`
	// Reason says why the restart fails: one of Reasons (reasons.go), a
	// stable key that does not depend on the release's wording. Omitted on
	// resume.
	Reason string `json:"reason,omitempty"`
	// FailedFile is the file (relative to the checkpoint, e.g. "offsets/6")
	// whose content or absence makes the restart fail; omitted when the
	// failure is about no single file.
	FailedFile string `json:"failedFile,omitempty"`
	// Error is the message of the exception the query fails with, e.g.
	// "batch 21 doesn't exist": the query thread's exception, which Spark
	// logs ("Query … terminated with error") and StreamingQueryException
	// wraps; null on resume.
	Error *string `json:"error"`
	// ErrorInexact is set when Error is ckpt's description of the failure
	// because Spark's own text (a JSON library's exception, say) could not
	// be reproduced exactly.
	ErrorInexact bool `json:"errorInexact,omitempty"`
	// Exception is the JVM class of that exception, when known.
	Exception string `json:"exception,omitempty"`
	// ErrorClass is the error class (getCondition on 4.x, getErrorClass on
	// 3.5) of the innermost exception of the chain that has one, e.g.
	// "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION"; "" when none has
	// (StreamingQueryException's own STREAM_FAILED does not count).
	ErrorClass string `json:"errorClass,omitempty"`
	// RootCause is the innermost exception of the chain that Error heads
	// ("Incomplete log file" under "Failed to read log file …"); the same as
	// Error and Exception when that exception has no cause. Omitted on resume.
	RootCause *Cause `json:"rootCause,omitempty"`
	// DriverLog holds the ERROR/WARN/INFO lines Spark's driver logs on the way.
	DriverLog []string `json:"driverLog,omitempty"`
	// NextBatch is the first batch id the restarted query executes (equal to
	// RerunBatch when a batch re-runs); -1 when the restart fails before
	// running any batch.
	NextBatch int64 `json:"nextBatch"`
	// RerunBatch is the batch that runs again with the offsets already in
	// the offset log, or null.
	RerunBatch *int64 `json:"rerunBatch"`
	// RerunRange is the offset range of the re-run, one entry per source.
	RerunRange *Range `json:"rerunRange"`
	// Skipped is the span of batches whose data the restart never processes
	// again although no commit says they finished (C+1 … L-1 when the commit
	// log trails by more than one; without any commit, from the oldest offsets
	// file), with the records at stake; null when nothing is skipped. A span,
	// never a list: ids reach 2^63-1.
	Skipped *Skipped `json:"skipped"`
	// Warnings explain risks Spark does not fail on.
	Warnings []string `json:"warnings"`
	// WatermarkMs is the event-time watermark the first batch runs with.
	WatermarkMs int64 `json:"watermarkMs"`
	// BatchTimestampMs is the batch timestamp recorded in the latest offsets
	// file: a re-run reuses it; a new batch takes the clock at planning.
	BatchTimestampMs int64 `json:"batchTimestampMs"`
	// StartFromInitial is, per source, whether the re-run has no start
	// offset, so the source's initial offsets are used (Kafka: sources/<i>/0,
	// or startingOffsets resolved again when that file is gone).
	StartFromInitial []bool `json:"startFromInitial,omitempty"`
	// Kafka is the re-run per Kafka topic-partition.
	Kafka []PartitionRange `json:"kafka,omitempty"`
	// Sink is the verdict on the file sink when Options.SinkLatest is given.
	Sink *SinkVerdict `json:"sink,omitempty"`
	// SparkBug is set when a bug of the Spark release, not the checkpoint, makes
	// the restart fail (Reason "spark-bug"): which, what was written before the
	// failure, and what fixes it.
	SparkBug *SparkBug `json:"sparkBug,omitempty"`

	// Mode and SparkVersion are the engine and release predicted.
	Mode         Mode   `json:"mode"`
	SparkVersion string `json:"sparkVersion"`
	// LatestOffsets and LatestCommit are L and C, or null.
	LatestOffsets *int64 `json:"latestOffsets"`
	LatestCommit  *int64 `json:"latestCommit"`
	// PreviousBatch is the offsets file the restart starts from, the end of
	// the batch before L: L-1 in the sync and Spark 2.1 engines, the
	// nearest lower id on disk in async mode. Null when there is none (no
	// offsets, L == 0, no lower file; in the sync engine a missing
	// offsets/L-1 is the missing-previous-offsets failure). It follows from
	// the listings alone, so it is set even when the restart fails before
	// Spark reads the file.
	PreviousBatch *int64 `json:"previousBatch"`
	// Releases lists the Spark releases (same mode) whose restart of this
	// checkpoint differs from SparkVersion's, grouped by behaviour.
	Releases []ReleaseNote `json:"releases,omitempty"`

	// State is what the restart's first batch loads from the state stores, when Options.State
	// was given (state.go); nil otherwise, and when the restart fails before its first batch.
	State *StateLoad `json:"state,omitempty"`

	// Delta is what Plan checked on the Delta tables of Options.Delta, per table; nil without.
	Delta []DeltaVerdict `json:"delta,omitempty"`

	// Broker is what Plan checked on the broker when Options.Broker was given; nil otherwise.
	// Not part of the JSON contract: commands render it their way.
	Broker *BrokerVerdict `json:"-"`

	key string // behaviour key, to group releases: Reason, or a key* constant
}

// Cause is one exception of Spark's cause chain.
type Cause struct {
	Exception string `json:"exception,omitempty"`
	Error     string `json:"error"`
	// ErrorClass is this exception's own error class, "" when none.
	ErrorClass string `json:"errorClass,omitempty"`
}

// Span is an inclusive range of batch ids. Its size is To-From+1 as an
// unsigned number (Count): From 0 To 2^63-1 does not fit an int64.
type Span struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Count is the number of ids in the span.
func (s Span) Count() uint64 { return uint64(s.To-s.From) + 1 }

// Contains reports whether id is in the span.
func (s Span) Contains(id int64) bool { return id >= s.From && id <= s.To }

// String renders "4" or "4..5".
func (s Span) String() string {
	if s.From == s.To {
		return fmt.Sprint(s.From)
	}
	return fmt.Sprintf("%d..%d", s.From, s.To)
}

// Skipped is the data a restart never processes again: the batches of
// Span, whose records lie between the end of batch From-1 (StartBatch's
// offsets file, the latest commit's batch) and the start of the re-run
// (EndBatch's offsets file). Kafka holds them per partition, with Records
// their sum when every partition is known; null when no source is Kafka or
// StartBatch's file is not on disk (purged, or batch -1: the initial
// offsets).
type Skipped struct {
	Span
	// MissingOffsets is how many ids of the span have no offsets file.
	MissingOffsets uint64 `json:"missingOffsets"`
	// StartBatch is the batch whose end offsets are the start of the
	// skipped data (From-1), null when it is before batch 0; EndBatch is the
	// batch the re-run starts from (the end of the skipped data).
	StartBatch *int64 `json:"startBatch"`
	EndBatch   int64  `json:"endBatch"`
	// Records is the sum of Kafka's per-partition counts, null when unknown.
	Records *int64           `json:"records"`
	Kafka   []PartitionRange `json:"kafka,omitempty"`

	// missing are the first few ids of the span without an offsets file.
	missing []int64
}

// SkippedText is the one sentence for the data the restart skips
// (Result.Skipped): which batches, why, and the records at stake; "" when
// nothing is skipped. replay and doctor print it.
func (r *Result) SkippedText() string {
	sk := r.Skipped
	if sk == nil {
		return ""
	}
	what := "batch " + sk.String() + " is"
	if sk.From != sk.To {
		what = "batches " + sk.String() + " are"
	}
	why := "commits/ is empty"
	if r.LatestCommit != nil {
		why = fmt.Sprintf("the latest commit is %d", *r.LatestCommit)
	}
	msg := fmt.Sprintf("%s never run again: %s and the restart re-runs only batch %d, starting where batch %d ended", what, why, r.NextBatch, sk.EndBatch)
	switch n := sk.MissingOffsets; {
	case n == 0:
	case n == sk.Count() && n == 1:
		msg += " (it has no offsets file)"
	case n == sk.Count():
		msg += " (none of them has an offsets file)"
	case int(n) == len(sk.missing) && n == 1:
		msg += fmt.Sprintf(" (batch %d has no offsets file)", sk.missing[0])
	case int(n) == len(sk.missing):
		msg += fmt.Sprintf(" (batches %s have no offsets file)", joinIDs(sk.missing))
	default:
		msg += fmt.Sprintf(" (%d of them have no offsets file)", n)
	}
	from := "the initial offsets"
	if sk.StartBatch != nil {
		from = fmt.Sprintf("offsets/%d", *sk.StartBatch)
	}
	loss := fmt.Sprintf("their data (%s → offsets/%d) is lost", from, sk.EndBatch)
	if sk.Records != nil {
		noun := "records"
		if *sk.Records == 1 {
			noun = "record"
		}
		loss = fmt.Sprintf("%d Kafka %s (%s → offsets/%d) are lost", *sk.Records, noun, from, sk.EndBatch)
		if *sk.Records == 1 {
			loss = strings.Replace(loss, " are lost", " is lost", 1)
		}
	}
	unless := "Unless they reached the sink before their commits were lost, "
	if r.LatestCommit == nil {
		unless = "Unless they reached the sink already, "
	}
	return msg + ". " + unless + loss
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

// Range is the offset range of a re-run batch: start and end per source, in
// offsets-file order. Entries are the raw offset JSON, or null where a source
// has no start (or, for --what-if, an end not yet known).
type Range struct {
	Start []json.RawMessage `json:"start"`
	End   []json.RawMessage `json:"end"`
}

// NullOffset reports whether a raw offset (of a Range, or an offsets file's source line read
// as JSON) is null or empty: the source has no offset there. The one test of it.
func NullOffset(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// PartitionRange is the re-run of one Kafka topic-partition. Offsets are
// Kafka's "next offset to read", so Records = End - Start. Start is null when
// Spark starts the partition from its earliest offset (a partition new since
// the start offsets) or from startingOffsets resolved again; End is null when
// not known yet (--what-if).
type PartitionRange struct {
	Source    int    `json:"source"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     *int64 `json:"start"`
	End       *int64 `json:"end"`
	Records   *int64 `json:"records"`
	Note      string `json:"note,omitempty"`
}

// PartitionRange.Note values that callers key on: the re-run's recorded
// range loses data, which Spark reports as data loss when it plans the batch
// (KafkaOffsetReader.getOffsetRangesFromResolvedOffsets: an
// IllegalStateException with the default failOnDataLoss=true, a WARN and
// the data skipped with false). The other notes are explanations.
const (
	// NotePartitionGone: the partition is in the start offsets but not in
	// the end offsets ("Set(t-p) are gone. Some data may have been missed.").
	NotePartitionGone = "partition gone from the end offsets"
	// NoteOffsetBackwards: the end offset is below the start offset
	// ("Partition t-p's offset was changed from S to E, some data may have
	// been missed").
	NoteOffsetBackwards = "offset went backwards"
)

// Sink verdict statuses.
const (
	SinkSkipsRerun  = "skips-rerun"  // the sink already has the re-run batch: no duplicates
	SinkWritesRerun = "writes-rerun" // the re-run batch reaches the sink for the first time
	SinkInSync      = "in-sync"      // the sink has exactly the committed batches
	SinkBehind      = "behind"       // the sink lacks batches the commit log says finished
	SinkAhead       = "ahead"        // the sink has batches the restart will run again: they are skipped
)

// SinkVerdict compares a file sink's _spark_metadata log, or a Delta sink's txn version for
// the query, with the restart.
type SinkVerdict struct {
	// Kind is "delta" for a Delta sink; omitted for a file sink.
	Kind string `json:"kind,omitempty"`
	// Latest is the sink's latest batch id.
	Latest int64 `json:"latest"`
	// Status is one of the Sink* constants.
	Status string `json:"status"`
	// Message explains the status.
	Message string `json:"message"`
}

// ReleaseNote is a group of Spark releases that restart this checkpoint
// differently from the release asked for.
type ReleaseNote struct {
	Versions  []string `json:"versions"`
	Outcome   string   `json:"outcome"`
	NextBatch int64    `json:"nextBatch"`
	Error     *string  `json:"error"`
	Summary   string   `json:"summary"`
}

// Failed reports whether Spark refuses or aborts the restart.
func (r *Result) Failed() bool { return r.Outcome == OutcomeFail }

// Blocked reports whether the checkpoint stops the restart: a failure on a bug of the Spark
// release (ReasonSparkBug) runs its batch first, and a second restart goes on.
func (r *Result) Blocked() bool { return r.Failed() && r.Reason != ReasonSparkBug }

// ErrorText is the Spark error message, "" on resume.
func (r *Result) ErrorText() string {
	if r.Error == nil {
		return ""
	}
	return *r.Error
}

// Verdict is the one-line summary a person reads first, e.g.
// "Restart will FAIL: java.lang.IllegalStateException: batch 21 doesn't exist"
// or "Restart re-runs batch 7, then continues at batch 8".
func (r *Result) Verdict() string {
	if r.Failed() {
		msg := firstLine(r.ErrorText())
		if r.Exception != "" {
			msg = r.Exception + ": " + msg
		}
		if b := r.SparkBug; b != nil {
			// The batch ran: say so first, and whose fault the failure is.
			return fmt.Sprintf("Restart will FAIL after re-running batch %d, on Spark bug %s (not the checkpoint): %s", b.Batch, b.ID, msg)
		}
		return "Restart will FAIL: " + msg
	}
	switch {
	case r.RerunBatch != nil:
		// +1 wraps past 2^63-1, as Spark's Long does.
		return fmt.Sprintf("Restart re-runs batch %d, then continues at batch %d", *r.RerunBatch, *r.RerunBatch+1)
	case r.LatestOffsets == nil:
		return fmt.Sprintf("Restart starts a new query at batch %d", r.NextBatch)
	}
	return fmt.Sprintf("Restart resumes at batch %d; nothing re-runs", r.NextBatch)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func ptr[T any](v T) *T { return &v }
