package topicstate

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
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// This file connects the recovery planner's prediction to the broker, for doctor, replay and
// repair. recovery.Plan stays a pure function of the checkpoint: it says which batch runs first
// and over which recorded range; here that range (or the next batch's start) is read against
// the broker.

// RestartSource is where a restart reads one Kafka source.
type RestartSource struct {
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

// Restart is the Kafka side of a restart, per Kafka source.
type Restart struct {
	Sources []RestartSource
}

// PlanRestart says where the restart predicted by res reads each Kafka source. When a batch
// re-runs (res.RerunRange), each source reads the recorded range: start from the previous
// offsets file (or sources/<i>/0 when the source has no start), end from offsets/L. Otherwise
// the next batch starts from the latest offsets file, offsets/L = offsets/C of the latest
// commit; that is also used when the restart fails before any batch (after a repair the query
// continues from about there). A checkpoint without offsets has no sources. Unreadable offsets
// files add nothing (the planner and doctor report them); only I/O failures are errors.
func PlanRestart(ctx context.Context, cp *checkpoint.Checkpoint, res *recovery.Result) (*Restart, error) {
	r := &Restart{}
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
			s := RestartSource{Index: i, Batch: L, Rerun: true}
			if end != nil {
				s.End, s.EndFile = end, cp.Offsets.Path(L)
			}
			if isNull(startRaw) {
				rel := fmt.Sprintf("%s/%d/0", checkpoint.DirSources, i)
				data, err := cp.ReadFile(ctx, rel)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					if !endKafka {
						continue
					}
					s.StartFile = "startingOffsets (" + rel + " is missing)"
				case err != nil:
					return nil, err
				default:
					ini, err := logformat.ParseKafkaInitialOffsets(rel, data)
					if err != nil {
						if !endKafka {
							continue // not a Kafka source, or unreadable: the planner reports it
						}
					} else {
						s.Start = &ini.Offsets
					}
					s.StartFile = rel
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
		r.Sources = append(r.Sources, RestartSource{Index: src.Index, Batch: batch, Start: &src.Offsets, StartFile: cp.Offsets.Path(L)})
	}
	return r, nil
}

// kafkaRaw parses a raw offset of recovery.Range as Kafka offsets. ok is true when it is one;
// null, a JSON string (an offset line that is not JSON) or another source's offset give false.
func kafkaRaw(raw json.RawMessage) (*logformat.KafkaOffsets, bool) {
	if isNull(raw) || raw[0] != '{' {
		return nil, false
	}
	k, err := logformat.ParseKafkaOffsets("", string(raw))
	if err != nil {
		return nil, false
	}
	return &k, true
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// Topics returns every topic the restart reads: the argument Read needs.
func (r *Restart) Topics() []string {
	var offs []logformat.KafkaOffsets
	for _, s := range r.Sources {
		if s.Start != nil {
			offs = append(offs, *s.Start)
		}
		if s.End != nil {
			offs = append(offs, *s.End)
		}
	}
	return Topics(offs...)
}

// RestartIssue is an Issue the restart meets, with where it meets it.
type RestartIssue struct {
	Issue
	// Source is the Kafka source's index.
	Source int `json:"source"`
	// Batch is the batch that meets the issue.
	Batch int64 `json:"batch"`
	// Rerun is true when the re-run of Batch over its recorded range meets it (CheckRerun);
	// false when a new batch does, planned against the broker's latest offsets (Check).
	Rerun bool `json:"rerun"`
	// File is the offsets file whose offsets meet it: "offsets/6".
	File string `json:"file"`
	// FailOnDataLoss is the failOnDataLoss the issue was checked with.
	FailOnDataLoss bool `json:"failOnDataLoss"`
}

// Check returns what the restart meets on the broker, in the order Spark meets it: for a
// source that re-runs a batch, CheckRerun over the recorded range, then Check of its end offsets
// (the batch after the re-run plans from them against the broker's latest offsets); for a
// source that starts a new batch, or re-runs one whose end is unknown (--what-if), Check of its
// start offsets. An issue about a partition's existence (topic-missing, partitions-removed,
// partitions-added) is reported once per source, by the first batch that meets it. A source
// whose start is unknown is checked at its end only.
func (r *Restart) Check(st *State, failOnDataLoss bool) []RestartIssue {
	var out []RestartIssue
	add := func(s RestartSource, rerun bool, batch int64, file string, issues []Issue) {
		for _, is := range issues {
			out = append(out, RestartIssue{Issue: is, Source: s.Index, Batch: batch, Rerun: rerun, File: file, FailOnDataLoss: failOnDataLoss})
		}
	}
	for _, s := range r.Sources {
		if !s.Rerun {
			if s.Start != nil {
				add(s, false, s.Batch, s.StartFile, Check(*s.Start, st, failOnDataLoss))
			}
			continue
		}
		if s.End == nil && s.Start != nil {
			// The re-run's end is not known (--what-if): Spark will have planned it up to the
			// latest offsets of its time, so check the start as a new batch's.
			add(s, false, s.Batch, s.StartFile, Check(*s.Start, st, failOnDataLoss))
			continue
		}
		var rerun []Issue
		if s.Start != nil && s.End != nil {
			rerun = CheckRerun(*s.Start, *s.End, st, failOnDataLoss)
			add(s, true, s.Batch, s.StartFile, rerun)
		}
		if s.End == nil {
			continue
		}
		var next []Issue
		for _, is := range Check(*s.End, st, failOnDataLoss) {
			structural := is.Code != CodeOffsetsOutOfRange && is.Code != CodeTopicRecreated
			if structural && slices.ContainsFunc(rerun, func(o Issue) bool {
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

// Exception splits SparkMessage into the JVM exception class Spark throws and its message:
// Kafka's UnknownTopicOrPartitionException for topic-missing, IllegalStateException for every
// data-loss report (KafkaMicroBatchStream.reportDataLoss, KafkaDataConsumer.reportDataLoss0).
func (is RestartIssue) Exception() (class, message string) {
	msg := is.SparkMessage
	if msg == "" {
		msg = is.Message
	}
	if c, m, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(c, "org.apache.kafka.") && !strings.ContainsAny(c, " \n") {
		return c, m
	}
	return "java.lang.IllegalStateException", msg
}

// Warning renders the issue as one line for recovery.Result's warnings: where, what, Spark's
// first line, and what the other failOnDataLoss setting does.
func (is RestartIssue) Warning() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kafka, %s: %s", is.Where(), is.Message)
	if is.DataLoss && is.Code != CodeOffsetsOutOfRange { // offsets-out-of-range messages count already
		fmt.Fprintf(&b, " (records affected: %s)", recordsText(is.Records))
	}
	spark := firstLine(is.SparkMessage)
	switch {
	case is.Fails:
		class, _ := is.Exception()
		if !strings.HasPrefix(spark, class) {
			spark = class + ": " + spark
		}
		fmt.Fprintf(&b, ". The restart fails: %s", spark)
		if is.FailOnDataLoss && is.Code != CodeTopicMissing {
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

// firstLine is the first line of a Spark message, without the instruction text that follows
// it on the next lines.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// Apply records on res what the restart meets on the broker: one warning per issue and, when
// an issue fails the restart, outcome "fail" with the exception of the first one Spark meets
// (the batch still starts: NextBatch stays), Reason the issue's code (one of Codes, not of
// recovery.Reasons, which are the checkpoint's) and FailedFile the offsets file that meets it.
// A restart that already fails is left failing for its own reason. Everything else in res
// stays the planner's.
func Apply(res *recovery.Result, issues []RestartIssue) {
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
		res.Outcome = recovery.OutcomeFail
		res.Error, res.Exception = &msg, class
		// The planner's reasons (recovery.Reasons) are about the checkpoint; a failure on the
		// broker is keyed by its issue code, and the offsets file that meets it.
		res.Reason, res.FailedFile = is.Code, is.File
		return
	}
}

// Count counts, per re-running source with a known start and end, the records its recorded
// range holds on the broker (CountRange), by source index. Sources that start a new batch have
// no recorded range and no counts.
func (r *Restart) Count(st *State) map[int][]PartitionCount {
	out := map[int][]PartitionCount{}
	for _, s := range r.Sources {
		if s.Rerun && s.Start != nil && s.End != nil {
			out[s.Index] = CountRange(st, *s.Start, *s.End)
		}
	}
	return out
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
		rel := fmt.Sprintf("%s/%d/0", checkpoint.DirSources, i)
		data, err := cp.ReadFile(ctx, rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			if ini, err := logformat.ParseKafkaInitialOffsets(rel, data); err == nil {
				offs = append(offs, ini.Offsets)
			}
		}
	}
	return Topics(offs...), nil
}
