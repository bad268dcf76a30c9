package recovery

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// The reasons a restart fails, or loses data, on the Kafka broker rather than on the checkpoint
// (BrokerIssue.Code, and Result.Reason when the issue fails the restart). They are stable:
// doctor reports them as finding codes and runbooks key on them.
const (
	// ReasonOffsetsOutOfRange: the checkpoint offset is below the log start, because retention
	// (or DeleteRecords) removed records the query has not read.
	ReasonOffsetsOutOfRange = "offsets-out-of-range"
	// ReasonTopicRecreated: the checkpoint offset is above the log end, because the topic was
	// deleted and recreated (or the high watermark went backwards).
	ReasonTopicRecreated = "topic-recreated"
	// ReasonPartitionsRemoved: a partition in the checkpoint no longer exists.
	ReasonPartitionsRemoved = "partitions-removed"
	// ReasonPartitionsAdded: a partition of a checkpointed topic is not in the checkpoint; the next
	// batch reads it from its earliest offset.
	ReasonPartitionsAdded = "partitions-added"
	// ReasonTopicMissing: a topic in the checkpoint does not exist.
	ReasonTopicMissing = "topic-missing"
)

// BrokerReasons are the Result.Reason values of a restart that fails on the Kafka broker rather
// than on the checkpoint (failOnDataLoss=true), in the order Spark meets them on restart (see
// CheckBroker). Plan sets them when Options.Broker is given, with FailedFile naming the offsets
// file whose offsets the broker no longer serves. Like Reasons, the set is closed and its values
// are never renamed.
var BrokerReasons = []string{ReasonTopicMissing, ReasonPartitionsAdded, ReasonPartitionsRemoved, ReasonTopicRecreated, ReasonOffsetsOutOfRange}

// Unknown is the value of Issue.Records (and of offsets) that ckpt cannot know: the records of a
// partition or topic that no longer exists.
const Unknown int64 = -1

// BrokerIssue is one thing the restart of the query will hit on the broker. Its JSON form is part of
// doctor's and lag's output.
type BrokerIssue struct {
	// Code is one of BrokerReasons.
	Code string `json:"code"`
	// Topic and Partition name the partition; Partition is -1 for topic-missing.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"` // -1 for topic-missing
	// CheckpointOffset is the checkpoint's next offset to read for the partition; Unknown (-1)
	// for partitions-added (the checkpoint has none) and topic-missing.
	CheckpointOffset int64 `json:"checkpointOffset"`
	// LogStart and LogEnd are the broker's earliest and latest offsets; Unknown (-1) when the
	// partition does not exist.
	LogStart int64 `json:"logStart"`
	LogEnd   int64 `json:"logEnd"` // exclusive: the high watermark
	// Records is how many offsets the query loses (skips, or cannot read): logStart − offset for
	// offsets-out-of-range, the current log for topic-recreated, the removed offsets before the
	// earliest for partitions-added; 0 when nothing is lost; Unknown (-1) when it cannot be known
	// (the partition or topic is gone). Offsets, not data records: on a transactional topic
	// control records take offsets too, so this is an upper bound.
	Records int64 `json:"records"`
	// DataLoss is true when records are, or may be, lost.
	DataLoss bool `json:"dataLoss"`
	// Fails is true when the restart fails on this issue with the failOnDataLoss given to Check.
	Fails bool `json:"fails"`
	// Message says what ckpt found, in one line.
	Message string `json:"message"`
	// SparkMessage is what Spark reports: the exception message when Fails, else the warning
	// it logs; "" when Spark says nothing (a new partition starting at 0). Texts are Spark
	// 3.5's (KafkaMicroBatchStream, KafkaDataConsumer), instruction included; a group id in an
	// executor message is dataloss.ExecutorGroupID.
	SparkMessage string `json:"sparkMessage"`
	// Class is the JVM exception class Spark throws when Fails: dataloss.UnknownTopic for
	// topic-missing, dataloss.IllegalState for every data-loss report.
	Class string `json:"-"`
	// Executor is true when Spark's executors report the issue (KafkaDataConsumer, reading a
	// range), false when the driver does (KafkaMicroBatchStream, planning a batch).
	Executor bool `json:"-"`
	// FailOnDataLossFalse says what Spark does instead with failOnDataLoss=false.
	FailOnDataLossFalse string `json:"failOnDataLossFalse"`
}

// CheckBroker compares the offsets a Kafka source reads from next with the broker and returns what
// the restart will hit, in the order Spark meets it: topic-missing (listing the latest offsets
// fails), then the driver's checks when it plans the batch (partitions-added with an earliest
// offset above 0, partitions-removed, topic-recreated), then the executors' (offsets-out-of-
// range); by topic and partition within a code. The first issue with Fails is the exception
// the restart fails with.
//
// offsets are the offsets the next batch starts from: offsets/C of the latest commit C when
// the latest offsets batch is committed. When batch L is uncommitted the restart re-runs
// (O[L-1], O[L]]: pass offsets/L-1 to check the start of the re-run (and count the re-run with
// CountRange). failOnDataLoss is the source option (Spark's default: true).
//
// Spark's view assumes `subscribe` (or `subscribePattern`): with `assign`, partitions missing
// from the checkpoint are not read at all, so partitions-added does not apply. The messages
// assume no kafka.group.id (with it, "are gone." is followed by Spark's group-id warning).
// st must have been read for Topics(offsets); topics it neither has nor lists as missing are
// skipped.
func CheckBroker(offsets logformat.KafkaOffsets, st *BrokerState, failOnDataLoss bool) []BrokerIssue {
	from := offsets.Map()
	var issues []BrokerIssue
	report := func(msg string) string { return dataloss.Driver(msg, failOnDataLoss) }

	// Partitions gone from existing topics: Spark names them all in one message.
	var gone []logformat.TopicPartition
	for _, tp := range sortedKeys(from) {
		if t := st.Topic(tp.Topic); t != nil {
			if _, ok := t.Partition(tp.Partition); !ok {
				gone = append(gone, tp)
			}
		}
	}
	goneMsg := ""
	if len(gone) > 0 {
		goneMsg = report(dataloss.Gone(dataloss.PartitionSet(gone), false))
	}

	for _, topic := range KafkaTopics(offsets) {
		if st.Topic(topic) == nil && !st.IsMissing(topic) {
			continue // not read: nothing to say
		}
		if st.Topic(topic) == nil {
			tps := partitionsOf(from, topic)
			issues = append(issues, BrokerIssue{
				Code: ReasonTopicMissing, Topic: topic, Partition: -1,
				CheckpointOffset: Unknown, LogStart: Unknown, LogEnd: Unknown, Records: Unknown,
				DataLoss: true, Fails: true, Class: dataloss.UnknownTopic,
				Message:      fmt.Sprintf("topic %s is in the checkpoint (%d partitions) but not on the broker", topic, len(tps)),
				SparkMessage: dataloss.UnknownTopic + ": " + dataloss.UnknownTopicMessage([]string{topic}),
				FailOnDataLossFalse: "failOnDataLoss does not apply: with subscribe or assign the query fails the same way until the topic exists. " +
					"With subscribePattern the topic's partitions are dropped instead, reported as \"" + dataloss.Gone(dataloss.PartitionSet(tps), false) +
					"\" (an error with failOnDataLoss=true, a warning with false), and the query goes on without them.",
			})
			continue
		}
		t := st.Topic(topic)
		for _, p := range t.Partitions {
			tp := logformat.TopicPartition{Topic: topic, Partition: p.Partition}
			if _, ok := from[tp]; ok {
				continue
			}
			is := BrokerIssue{
				Code: ReasonPartitionsAdded, Topic: topic, Partition: p.Partition,
				CheckpointOffset: Unknown, LogStart: p.Start, LogEnd: p.End, Class: dataloss.IllegalState,
			}
			if p.Start == 0 {
				is.Message = fmt.Sprintf("%s is not in the checkpoint: the next batch reads it from its earliest offset 0 (%d records)", sparkTP(topic, p.Partition), p.End)
				is.FailOnDataLossFalse = "The same: the partition is read from offset 0 and nothing is lost."
			} else {
				is.Records, is.DataLoss, is.Fails = p.Start, true, failOnDataLoss
				is.Message = fmt.Sprintf("%s is not in the checkpoint and its earliest offset is %d: offsets [0, %d) were removed before the query could read them", sparkTP(topic, p.Partition), p.Start, p.Start)
				is.SparkMessage = report(dataloss.AddedPartition(sparkTP(topic, p.Partition), p.Start))
				is.FailOnDataLossFalse = fmt.Sprintf("Spark logs the message as a warning and reads the partition from offset %d; offsets [0, %d) are never read.", p.Start, p.Start)
			}
			issues = append(issues, is)
		}
		for _, tp := range partitionsOf(from, topic) {
			off := from[tp]
			p, ok := t.Partition(tp.Partition)
			if !ok {
				issues = append(issues, BrokerIssue{
					Code: ReasonPartitionsRemoved, Topic: topic, Partition: tp.Partition,
					CheckpointOffset: off, LogStart: Unknown, LogEnd: Unknown, Records: Unknown,
					DataLoss: true, Fails: failOnDataLoss, Class: dataloss.IllegalState,
					Message:             fmt.Sprintf("%s is in the checkpoint (next offset %d) but topic %s has only %d partitions", sparkTP(topic, tp.Partition), off, topic, len(t.Partitions)),
					SparkMessage:        goneMsg,
					FailOnDataLossFalse: "Spark logs the message as a warning and stops reading the partition; whatever it held after the checkpoint is lost.",
				})
				continue
			}
			switch {
			case off < 0:
				// Not an offset a batch ends at (-1/-2 only appear in startingOffsets).
			case off > p.End:
				issues = append(issues, BrokerIssue{
					Code: ReasonTopicRecreated, Topic: topic, Partition: tp.Partition,
					CheckpointOffset: off, LogStart: p.Start, LogEnd: p.End, Records: p.Records(),
					DataLoss: true, Fails: failOnDataLoss, Class: dataloss.IllegalState,
					Message: fmt.Sprintf("%s: the checkpoint is at offset %d but the log ends at %d: the topic was deleted and recreated (or the high watermark went backwards)",
						sparkTP(topic, tp.Partition), off, p.End),
					SparkMessage: report(dataloss.OffsetChanged(sparkTP(topic, tp.Partition), off, p.End)),
					FailOnDataLossFalse: fmt.Sprintf("Spark logs the message as a warning, reads nothing from the partition in that batch and continues from offset %d: "+
						"the %d records now in [%d, %d) are never read, nor anything the old topic held after offset %d.", p.End, p.Records(), p.Start, p.End, off),
				})
			case off < p.Start:
				lost := p.Start - off
				issues = append(issues, BrokerIssue{
					Code: ReasonOffsetsOutOfRange, Topic: topic, Partition: tp.Partition,
					CheckpointOffset: off, LogStart: p.Start, LogEnd: p.End, Records: lost,
					DataLoss: true, Fails: failOnDataLoss, Class: dataloss.IllegalState, Executor: true,
					Message: fmt.Sprintf("%s: the checkpoint is at offset %d but the log starts at %d: %d records were deleted (retention or DeleteRecords) before the query read them",
						sparkTP(topic, tp.Partition), off, p.Start, lost),
					// Executor side (KafkaDataConsumer.get): the fetch at the offset is out of range.
					SparkMessage: dataloss.Executor(dataloss.CannotFetch(off), dataloss.ExecutorGroupID, sparkTP(topic, tp.Partition), failOnDataLoss),
					FailOnDataLossFalse: fmt.Sprintf("Spark logs the message as a warning, skips offsets [%d, %d) (%d records) and reads on from offset %d.",
						off, p.Start, lost, p.Start),
				})
			}
		}
	}
	rank := func(code string) int { return slices.Index(BrokerReasons, code) }
	slices.SortStableFunc(issues, func(a, b BrokerIssue) int {
		return cmp.Or(cmp.Compare(rank(a.Code), rank(b.Code)), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return issues
}

// partitionsOf returns the partitions of topic in m, sorted.
func partitionsOf(m map[logformat.TopicPartition]int64, topic string) []logformat.TopicPartition {
	var out []logformat.TopicPartition
	for tp := range m {
		if tp.Topic == topic {
			out = append(out, tp)
		}
	}
	sortTPs(out)
	return out
}

func sortedKeys(m map[logformat.TopicPartition]int64) []logformat.TopicPartition {
	out := make([]logformat.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

func sortTPs(tps []logformat.TopicPartition) {
	slices.SortFunc(tps, func(a, b logformat.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// sparkTP is Kafka's TopicPartition.toString, which Spark's messages use: "topic-partition".
func sparkTP(topic string, p int32) string { return dataloss.TP(topic, p) }
