package kafka

import (
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// The instruction texts Spark appends to data-loss messages; their home is package dataloss.
const (
	InstructionFailOnDataLossTrue  = dataloss.InstructionTrue
	InstructionFailOnDataLossFalse = dataloss.InstructionFalse
)

// DataLossKind says which of Spark's data-loss checks fired.
type DataLossKind string

// The data-loss checks, driver side (planning a batch) and executor side (reading it).
const (
	// LossCannotFindEarliest: a partition new since the last batch vanished before its earliest
	// offset could be listed.
	LossCannotFindEarliest DataLossKind = "cannot-find-earliest"
	// LossAddedPartitionNotAtZero: a new partition's earliest offset is not 0.
	LossAddedPartitionNotAtZero DataLossKind = "added-partition-not-at-zero"
	// LossPartitionsGone: partitions of the start offsets no longer exist.
	LossPartitionsGone DataLossKind = "partitions-gone"
	// LossOffsetChanged: a partition's end offset is below its start offset (topic recreated).
	LossOffsetChanged DataLossKind = "offset-changed"
	// LossCannotFetchOffset: reading hit OffsetOutOfRange (records aged out or deleted).
	LossCannotFetchOffset DataLossKind = "cannot-fetch-offset"
	// LossMissingRecords: reading found a gap below the log start offset.
	LossMissingRecords DataLossKind = "missing-records"
)

// DataLossError is Spark's IllegalStateException for data loss with failOnDataLoss=true.
// Message is Spark 3.5's full text, byte for byte, including the instruction text (and therefore
// its trailing newline and spaces).
type DataLossError struct {
	Kind    DataLossKind // which check fired
	Message string       // Spark's exception message
	// Partitions are the partitions concerned, sorted.
	Partitions []logformat.TopicPartition
}

func (e *DataLossError) Error() string { return e.Message }

// UnknownTopicError is a subscribed or assigned topic that does not exist. Spark 3.x (whose
// offset reader describes topics with the Kafka AdminClient) fails the same way, after
// fetchOffset.numRetries attempts, with UnknownTopicOrPartitionException.
type UnknownTopicError struct {
	Topics []string // the missing topics, sorted
}

func (e *UnknownTopicError) Error() string {
	return dataloss.UnknownTopic + ": " + dataloss.UnknownTopicMessage(e.Topics)
}

// sparkTP is Kafka's TopicPartition.toString: "topic-partition".
func sparkTP(tp logformat.TopicPartition) string { return dataloss.TP(tp.Topic, tp.Partition) }

func sortedTPs(tps []logformat.TopicPartition) []logformat.TopicPartition {
	out := slices.Clone(tps)
	slices.SortFunc(out, compareTP)
	return out
}

func compareTP(a, b logformat.TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

func keysOf(m map[logformat.TopicPartition]int64) []logformat.TopicPartition {
	out := make([]logformat.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTP)
	return out
}

// reporter is Spark's reportDataLoss: with failOnDataLoss it returns the error, otherwise it
// records the warning (message + ". " + the _FALSE instruction) and lets the caller continue.
type reporter struct {
	fail     bool
	warnings []string
}

// driver reports a driver-side loss (KafkaMicroBatchStream.reportDataLoss).
func (r *reporter) driver(kind DataLossKind, msg string, tps ...logformat.TopicPartition) error {
	if r.fail {
		return &DataLossError{Kind: kind, Message: dataloss.Driver(msg, true), Partitions: sortedTPs(tps)}
	}
	r.warnings = append(r.warnings, dataloss.Driver(msg, false))
	return nil
}

// executorMessage is KafkaDataConsumer.reportDataLoss's text: message, then
// "(GroupId: g, TopicPartition: t-p). " and the instruction.
func executorMessage(msg, groupID string, tp logformat.TopicPartition, fail bool) string {
	return dataloss.Executor(msg, groupID, sparkTP(tp), fail)
}
