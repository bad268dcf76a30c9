package recovery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// This file connects the planner's prediction to the broker's facts (Options.Broker): which
// batch runs first and over which recorded range (PlanKafkaRestart), and what that range, or the
// next batch's start, meets on the broker (CheckRestart). Plan applies it when Options.Broker is
// given, so doctor, replay, repair and lag get every restart outcome from the planner.

// KafkaRestartSource is where a restart reads one Kafka source.
type KafkaRestartSource struct {
	// Index is the source's line in the offsets files (sources/<Index>/).
	Index int `json:"source"`
	// Batch is the batch that reads from Start: the re-run batch, or the next new batch.
	Batch int64 `json:"batch"`
	// Rerun is true when Batch runs again over the recorded range (Start, End]; false when
	// Batch is a new batch, which reads from Start up to the broker's latest offsets.
	Rerun bool `json:"rerun"`
	// Start are the offsets Batch starts from; nil when unknown (sources/<i>/0 is missing, so
	// Spark resolves startingOffsets again).
	Start *logformat.KafkaOffsets `json:"-"`
	// StartFile is where Start comes from: "offsets/6", "sources/0/0".
	StartFile string `json:"startFile"`
	// End are the re-run's end offsets; nil without a re-run, or when unknown (--what-if).
	End *logformat.KafkaOffsets `json:"-"`
	// EndFile is where End comes from: "offsets/7"; "" without End.
	EndFile string `json:"endFile,omitempty"`
}

// KafkaRestart is the Kafka side of a restart, per Kafka source.
type KafkaRestart struct {
	Sources []KafkaRestartSource
}

// PlanKafkaRestart says where the restart predicted by res reads each Kafka source. When a batch
// re-runs (res.RerunRange), each source reads the recorded range: start from the previous
// offsets file (or sources/<i>/0 when the source has no start), end from offsets/L. Otherwise
// the next batch starts from the latest offsets file, offsets/L = offsets/C of the latest
// commit; that is also used when the restart fails before any batch (after a repair the query
// continues from about there). A checkpoint without offsets has no sources. Unreadable offsets
// files add nothing (the planner and doctor report them); only I/O failures are errors.
func PlanKafkaRestart(ctx context.Context, cp *checkpoint.Checkpoint, res *Result) (*KafkaRestart, error) {
	r := &KafkaRestart{}
	if res.RerunBatch != nil && res.RerunRange != nil {
		L := *res.RerunBatch
		prevFile := ""
		if prev, ok := cp.Offsets.Prev(L); ok {
			prevFile = cp.Offsets.Path(prev)
		}
		for i := range res.RerunRange.End {
			var startRaw json.RawMessage
			if i < len(res.RerunRange.Start) {
				startRaw = res.RerunRange.Start[i]
			}
			end, endKafka := kafkaRaw(res.RerunRange.End[i])
			s := KafkaRestartSource{Index: i, Batch: L, Rerun: true}
			if end != nil {
				s.End, s.EndFile = end, cp.Offsets.Path(L)
			}
			if NullOffset(startRaw) {
				rel := checkpoint.InitialOffsetsPath(i)
				ini, err := cp.ReadKafkaInitialOffsets(ctx, i)
				var le *logformat.Error
				switch {
				case errors.Is(err, fs.ErrNotExist):
					if !endKafka {
						continue
					}
					s.StartFile = startingOffsetsPrefix + rel + " is missing)"
				case errors.As(err, &le):
					if !endKafka {
						continue // not a Kafka source, or unreadable: the planner reports it
					}
					s.StartFile = rel
				case err != nil:
					return nil, err
				default:
					s.Start, s.StartFile = &ini.Offsets, rel
				}
			} else {
				start, ok := kafkaRaw(startRaw)
				if !ok && !endKafka {
					continue
				}
				s.Start, s.StartFile = start, prevFile
			}
			r.Sources = append(r.Sources, s)
		}
		return r, nil
	}
	if res.LatestOffsets == nil {
		return r, nil
	}
	L := *res.LatestOffsets
	seq, err := cp.ReadOffsets(ctx, L)
	if err != nil {
		var le *logformat.Error
		if errors.As(err, &le) {
			return r, nil
		}
		return nil, err
	}
	batch := L + 1
	if !res.Failed() && res.NextBatch >= 0 {
		batch = res.NextBatch
	}
	for _, src := range KafkaSources(seq) {
		r.Sources = append(r.Sources, KafkaRestartSource{Index: src.Index, Batch: batch, Start: &src.Offsets, StartFile: cp.Offsets.Path(L)})
	}
	return r, nil
}

// kafkaRaw parses a raw offset of Range as Kafka offsets. ok is true when it is one;
// null, a JSON string (an offset line that is not JSON) or another source's offset give false.
func kafkaRaw(raw json.RawMessage) (*logformat.KafkaOffsets, bool) {
	if NullOffset(raw) || raw[0] != '{' {
		return nil, false
	}
	k, err := logformat.ParseKafkaOffsets("", string(raw))
	if err != nil {
		return nil, false
	}
	return &k, true
}

// Topics returns every topic the restart reads: the topics to read from the broker.
func (r *KafkaRestart) Topics() []string {
	var offs []logformat.KafkaOffsets
	for _, s := range r.Sources {
		if s.Start != nil {
			offs = append(offs, *s.Start)
		}
		if s.End != nil {
			offs = append(offs, *s.End)
		}
	}
	return KafkaTopics(offs...)
}

// RestartIssue is a BrokerIssue the restart meets, with where it meets it.
type RestartIssue struct {
	BrokerIssue
	// Source is the Kafka source's index.
	Source int `json:"source"`
	// Batch is the batch that meets the issue.
	Batch int64 `json:"batch"`
	// Rerun is true when the re-run of Batch over its recorded range meets it
	// (CheckBrokerRerun); false when a new batch does, planned against the broker's latest
	// offsets (CheckBroker).
	Rerun bool `json:"rerun"`
	// File is the offsets file whose offsets meet it: "offsets/6".
	File string `json:"file"`
	// FailOnDataLoss is the failOnDataLoss the issue was checked with.
	FailOnDataLoss bool `json:"failOnDataLoss"`
}

// Check returns what the restart meets on the broker, in the order Spark meets it: for a
// source that re-runs a batch, CheckBrokerRerun over the recorded range, then CheckBroker of its end offsets
// (the batch after the re-run plans from them against the broker's latest offsets); for a
// source that starts a new batch, or re-runs one whose end is unknown (--what-if), CheckBroker of its
// start offsets. An issue about a partition's existence (topic-missing, partitions-removed,
// partitions-added) is reported once per source, by the first batch that meets it. A source
// whose start is unknown is checked at its end only.
func (r *KafkaRestart) Check(st *BrokerState, failOnDataLoss bool) []RestartIssue {
	var out []RestartIssue
	add := func(s KafkaRestartSource, rerun bool, batch int64, file string, issues []BrokerIssue) {
		for _, is := range issues {
			out = append(out, RestartIssue{BrokerIssue: is, Source: s.Index, Batch: batch, Rerun: rerun, File: file, FailOnDataLoss: failOnDataLoss})
		}
	}
	for _, s := range r.Sources {
		if !s.Rerun {
			if s.Start != nil {
				add(s, false, s.Batch, s.StartFile, CheckBroker(*s.Start, st, failOnDataLoss))
			}
			continue
		}
		if s.End == nil && s.Start != nil {
			// The re-run's end is not known (--what-if): Spark will have planned it up to the
			// latest offsets of its time, so check the start as a new batch's.
			add(s, false, s.Batch, s.StartFile, CheckBroker(*s.Start, st, failOnDataLoss))
			continue
		}
		var rerun []BrokerIssue
		if s.Start != nil && s.End != nil {
			rerun = CheckBrokerRerun(*s.Start, *s.End, st, failOnDataLoss)
			add(s, true, s.Batch, s.StartFile, rerun)
		}
		if s.End == nil {
			continue
		}
		var next []BrokerIssue
		for _, is := range CheckBroker(*s.End, st, failOnDataLoss) {
			structural := is.Code != ReasonOffsetsOutOfRange && is.Code != ReasonTopicRecreated
			if structural && slices.ContainsFunc(rerun, func(o BrokerIssue) bool {
				return o.Code == is.Code && o.Topic == is.Topic && o.Partition == is.Partition
			}) {
				continue
			}
			next = append(next, is)
		}
		add(s, false, s.Batch+1, s.EndFile, next)
	}
	// Batch by batch: a re-run's issues come before those of the batch after it.
	slices.SortStableFunc(out, func(a, b RestartIssue) int { return cmp.Compare(a.Batch, b.Batch) })
	return out
}

// Where says which batch meets the issue: "re-run of batch 7", "batch 8".
func (is RestartIssue) Where() string {
	if is.Rerun {
		return fmt.Sprintf("re-run of batch %d", is.Batch)
	}
	return fmt.Sprintf("batch %d", is.Batch)
}

// Exception is the JVM exception class Spark throws for the issue and its message: Kafka's
// UnknownTopicOrPartitionException for topic-missing, IllegalStateException for every data-loss
// report (KafkaMicroBatchStream.reportDataLoss, KafkaDataConsumer.reportDataLoss0).
func (is RestartIssue) Exception() (class, message string) {
	class = is.Class
	if class == "" {
		class = dataloss.IllegalState
	}
	msg := is.SparkMessage
	if msg == "" {
		msg = is.Message
	}
	return class, strings.TrimPrefix(msg, class+": ")
}

// Warning renders the issue as one line for Result's warnings: where, what, Spark's
// first line, and what the other failOnDataLoss setting does.
func (is RestartIssue) Warning() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kafka, %s: %s", is.Where(), is.Message)
	if is.DataLoss && is.Code != ReasonOffsetsOutOfRange { // offsets-out-of-range messages count already
		fmt.Fprintf(&b, " (records affected: %s)", recordsText(is.Records))
	}
	spark := strings.TrimSpace(firstLine(is.SparkMessage)) // without the instruction on the next lines
	switch {
	case is.Fails:
		class, _ := is.Exception()
		if !strings.HasPrefix(spark, class) {
			spark = class + ": " + spark
		}
		fmt.Fprintf(&b, ". The restart fails: %s", spark)
		if is.FailOnDataLoss && is.Code != ReasonTopicMissing {
			fmt.Fprintf(&b, " With failOnDataLoss=false: %s", is.FailOnDataLossFalse)
		}
	case is.DataLoss:
		fmt.Fprintf(&b, ". Spark logs a warning (failOnDataLoss=false): %s %s", spark, is.FailOnDataLossFalse)
	default:
		b.WriteString(".")
	}
	return b.String()
}

func recordsText(n int64) string {
	if n == Unknown {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// applyBroker records on res what the restart meets on the broker: one warning per issue and,
// when an issue fails the restart, outcome "fail" with the exception of the first one Spark
// meets (the batch still starts: NextBatch stays), Reason the issue's code (one of
// BrokerReasons) and FailedFile the offsets file that meets it. A restart that already fails
// is left failing for its own reason. Everything else in res stays the checkpoint's verdict.
func applyBroker(res *Result, issues []RestartIssue) {
	for _, is := range issues {
		res.Warnings = append(res.Warnings, is.Warning())
	}
	if res.Failed() {
		return
	}
	for _, is := range issues {
		if !is.Fails {
			continue
		}
		class, msg := is.Exception()
		res.Outcome = OutcomeFail
		res.Error, res.Exception = &msg, class
		res.RootCause = &Cause{Exception: class, Error: msg}
		res.Reason, res.FailedFile = is.Code, is.File
		return
	}
}

// CheckpointTopics returns the Kafka topics a checkpoint's restart can read, without running
// the planner: those of the latest offsets file, the one before it, the latest committed one,
// and the initial offsets (sources/<i>/0) of their Kafka sources. Files that do not parse add
// nothing; only I/O failures are errors.
func CheckpointTopics(ctx context.Context, cp *checkpoint.Checkpoint) ([]string, error) {
	var offs []logformat.KafkaOffsets
	var ids []int64
	if L, ok := cp.Offsets.Latest(); ok {
		ids = append(ids, L)
		if p, ok := cp.Offsets.Prev(L); ok {
			ids = append(ids, p)
		}
	}
	if C, ok := cp.Commits.Latest(); ok && cp.Offsets.Has(C) {
		ids = append(ids, C)
	}
	kafkaIndex := map[int]bool{}
	for _, id := range ids {
		seq, err := cp.ReadOffsets(ctx, id)
		if err != nil {
			var le *logformat.Error
			if errors.As(err, &le) {
				continue
			}
			return nil, err
		}
		for _, s := range KafkaSources(seq) {
			offs = append(offs, s.Offsets)
			kafkaIndex[s.Index] = true
		}
	}
	for i := range kafkaIndex {
		ini, err := cp.ReadKafkaInitialOffsets(ctx, i)
		var le *logformat.Error
		switch {
		case err == nil:
			offs = append(offs, ini.Offsets)
		case errors.Is(err, fs.ErrNotExist), errors.As(err, &le):
		default:
			return nil, err
		}
	}
	return KafkaTopics(offs...), nil
}

// BrokerVerdict is what Plan found on the broker (Options.Broker).
type BrokerVerdict struct {
	// Restart is where the restart reads each Kafka source (PlanKafkaRestart).
	Restart *KafkaRestart
	// Issues are what the restart meets there, in the order Spark meets them; each is one of
	// the result's warnings, and the first that fails is its error.
	Issues []RestartIssue
	// CheckpointOutcome is the outcome from the checkpoint alone, before the broker.
	CheckpointOutcome string
	// FailOnDataLoss is the source option the check assumed.
	FailOnDataLoss bool
}

// CheckRestart assesses a planner result against the broker's state: where the restart res
// predicts reads each Kafka source, and what it meets there. It changes nothing; Plan applies it
// to its result when Options.Broker is given, and repair uses it to check the restart after a
// plan. st must hold the topics of CheckpointTopics (or of the KafkaRestart's Topics).
func CheckRestart(ctx context.Context, cp *checkpoint.Checkpoint, res *Result, st *BrokerState, failOnDataLoss bool) (*KafkaRestart, []RestartIssue, error) {
	rs, err := PlanKafkaRestart(ctx, cp, res)
	if err != nil {
		return nil, nil, err
	}
	return rs, rs.Check(st, failOnDataLoss), nil
}

// assessBroker applies CheckRestart to res when the caller gave the broker's state (st non-nil).
func assessBroker(ctx context.Context, cp *checkpoint.Checkpoint, st *BrokerState, failOnDataLoss bool, res *Result) error {
	if st == nil {
		return nil
	}
	rs, issues, err := CheckRestart(ctx, cp, res, st, failOnDataLoss)
	if err != nil {
		return err
	}
	if issues == nil {
		issues = []RestartIssue{}
	}
	res.Broker = &BrokerVerdict{Restart: rs, Issues: issues, CheckpointOutcome: res.Outcome, FailOnDataLoss: failOnDataLoss}
	applyBroker(res, issues)
	return nil
}
