// Package dataloss is the one home of Spark's Kafka data-loss texts: the messages
// KafkaMicroBatchStream (driver) and KafkaDataConsumer (executors) report when offsets a query
// needs are gone, and the instruction Spark appends to them. The engine's Kafka source
// (internal/kafka) raises them; the recovery planner (internal/recovery) predicts them from the
// broker's offsets. It is pure text (standard library and logformat's TopicPartition), so that the
// planner stays free of a Kafka client. Texts are Spark 3.5's, byte for byte.
package dataloss

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// The instruction texts Spark 3.x appends to data-loss messages (KafkaSourceProvider
// INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE/_FALSE). They are Scala stripMargin heredocs, so they
// start with a newline and end with a newline and the closing line's four spaces; kept byte-exact.
const (
	InstructionTrue = "\nSome data may have been lost because they are not available in Kafka any more; either the\n" +
		" data was aged out by Kafka or the topic may have been deleted before all the data in the\n" +
		" topic was processed. If you don't want your streaming query to fail on such cases, set the\n" +
		" source option \"failOnDataLoss\" to \"false\".\n    "
	InstructionFalse = "\nSome data may have been lost because they are not available in Kafka any more; either the\n" +
		" data was aged out by Kafka or the topic may have been deleted before all the data in the\n" +
		" topic was processed. If you want your streaming query to fail on such cases, set the source\n" +
		" option \"failOnDataLoss\" to \"true\".\n    "

	// CustomGroupID is Spark's CUSTOM_GROUP_ID_ERROR_MESSAGE: logged when kafka.group.id is
	// set, and used instead of "Some data may have been missed." when partitions are gone.
	CustomGroupID = "Kafka option 'kafka.group.id' has been set on this query, it is\n" +
		" not recommended to set this option. This option is unsafe to use since multiple concurrent\n" +
		" queries or sources using the same group id will interfere with each other as they are part\n" +
		" of the same consumer group. Restarted queries may also suffer interference from the\n" +
		" previous run having the same group id. The user should have only one query per group id,\n" +
		" and/or set the option 'kafka.session.timeout.ms' to be very small so that the Kafka\n" +
		" consumers from the previous query are marked dead by the Kafka group coordinator before the\n" +
		" restarted query starts running.\n    "

	// ExecutorGroupID stands for the group id in Spark's executor-side messages when ckpt
	// predicts them. Spark makes it "<groupIdPrefix>-<random UUID>-<hash of the source's
	// metadata path>-executor" when the query starts (or uses kafka.group.id), so it differs in
	// every run and cannot be predicted.
	ExecutorGroupID = "spark-kafka-source-<uuid>-<hash>-executor"

	// Exception classes: every data-loss report is an IllegalStateException; a missing topic is
	// Kafka's UnknownTopicOrPartitionException.
	IllegalState = "java.lang.IllegalStateException"
	UnknownTopic = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
)

// Instruction is the instruction text for the failOnDataLoss setting.
func Instruction(failOnDataLoss bool) string {
	if failOnDataLoss {
		return InstructionTrue
	}
	return InstructionFalse
}

// Driver is KafkaMicroBatchStream.reportDataLoss's text: msg + ". " + the instruction, thrown
// (failOnDataLoss) or logged.
func Driver(msg string, failOnDataLoss bool) string { return msg + ". " + Instruction(failOnDataLoss) }

// Executor is KafkaDataConsumer.reportDataLoss's text: msg, then "(GroupId: g, TopicPartition:
// t-p). " and the instruction.
func Executor(msg, groupID, tp string, failOnDataLoss bool) string {
	return msg + " " + ExecutorSuffix(groupID, tp, failOnDataLoss)
}

// ExecutorSuffix is what KafkaDataConsumer appends to its data-loss messages:
// "(GroupId: g, TopicPartition: t-p). " and the instruction.
func ExecutorSuffix(groupID, tp string, failOnDataLoss bool) string {
	return "(GroupId: " + groupID + ", TopicPartition: " + tp + "). " + Instruction(failOnDataLoss)
}

// TP is Kafka's TopicPartition.toString, which Spark's messages use: "topic-partition".
func TP(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// Set prints partition names (TP) as a Scala Set does: "Set(t-0, t-1)". Callers sort; Spark's
// order is a hash order when the set holds more than four partitions.
func Set(tps []string) string { return "Set(" + strings.Join(tps, ", ") + ")" }

// PartitionSet prints partitions as a Scala Set[TopicPartition] does: "Set(t-0, t-1)", sorted
// by topic and partition (Spark's order, insertion order for small sets and hash order for
// larger ones, can differ when a set holds several partitions).
func PartitionSet(tps []logformat.TopicPartition) string {
	tps = slices.Clone(tps)
	slices.SortFunc(tps, func(a, b logformat.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	parts := make([]string, len(tps))
	for i, tp := range tps {
		parts[i] = TP(tp.Topic, tp.Partition)
	}
	return Set(parts)
}

// CannotFindEarliest: partitions new since the last batch vanished before their earliest offsets
// could be listed (before Driver's suffix).
func CannotFindEarliest(set string) string {
	return "Cannot find earliest offsets of " + set + ". Some data may have been missed"
}

// AddedPartition: a new partition's earliest offset is not 0 (before Driver's suffix).
func AddedPartition(tp string, earliest int64) string {
	return fmt.Sprintf("Added partition %s starts from %d instead of 0. Some data may have been missed", tp, earliest)
}

// Gone: partitions of the start offsets no longer exist (before Driver's suffix, which adds a
// second period: Spark's doubled ".."). With a kafka.group.id Spark says CustomGroupID instead
// of "Some data may have been missed.".
func Gone(set string, groupID bool) string {
	if groupID {
		return set + " are gone. " + CustomGroupID
	}
	return set + " are gone. Some data may have been missed."
}

// OffsetChanged: a partition's end offset is below its start offset (before Driver's suffix).
func OffsetChanged(tp string, from, to int64) string {
	return fmt.Sprintf("Partition %s's offset was changed from %d to %d, some data may have been missed", tp, from, to)
}

// CannotFetch: the executor's fetch at offset is out of range (before Executor's suffix).
func CannotFetch(offset int64) string { return fmt.Sprintf("Cannot fetch offset %d", offset) }

// AvailableRange is Spark's AvailableOffsetRange(earliest,latest).
func AvailableRange(earliest, latest int64) string {
	return fmt.Sprintf("AvailableOffsetRange(%d,%d)", earliest, latest)
}

// Skipped is the executor's warning when the rest of a range is out of range:
// KafkaDataConsumer's "The current available offset range is … will be skipped" text, with
// ExecutorSuffix as additional.
func Skipped(rangeText string, offset, until int64, additional string) string {
	return fmt.Sprintf("\nThe current available offset range is %s.\n Offset %d is out of range, and records in [%d, %d) will be\n skipped %s\n        ",
		rangeText, offset, offset, until, additional)
}

// SkippedShort is Skipped on one line, as ckpt quotes it in its own explanations.
func SkippedShort(rangeText string, offset, until int64) string {
	return fmt.Sprintf("The current available offset range is %s. Offset %d is out of range, and records in [%d, %d) will be skipped", rangeText, offset, offset, until)
}

// Disappeared: the executor found a record gone inside a range it reads (before Executor's
// suffix as additional).
func Disappeared(offset int64, additional string) string {
	return fmt.Sprintf("Found a disappeared offset %d. Some data may be lost %s", offset, additional)
}

// UnknownTopicMessage is UnknownTopicOrPartitionException's message for missing topics.
func UnknownTopicMessage(topics []string) string {
	return fmt.Sprintf("Topic %s not found.", strings.Join(topics, ", "))
}

// Spark 4.0 and later (SPARK-47135) raise the driver's data-loss failures as a
// KafkaIllegalStateException whose message is the KAFKA_DATA_LOSS error condition of
// connector/kafka-0-10-sql/src/main/resources/error/kafka-error-conditions.json, rendered by
// ErrorClassesJsonReader.getErrorMessage: the main message's lines joined by newlines, a space,
// then the sub-condition's lines, with no "[CONDITION]" prefix and no SQLSTATE (22000) in the
// text. With failOnDataLoss=false the driver still logs the 3.5 text (Driver, false).
const (
	KafkaIllegalState = "org.apache.spark.sql.kafka010.KafkaIllegalStateException"

	// Condition4 is KAFKA_DATA_LOSS's main message.
	Condition4 = "Some data may have been lost because they are not available in Kafka any more;\n" +
		"either the data was aged out by Kafka or the topic may have been deleted before all the data in the\n" +
		"topic was processed.\n" +
		"If you don't want your streaming query to fail on such cases, set the source option failOnDataLoss to false.\n" +
		"Reason:"

	// The sub-conditions ckpt predicts.
	CondPartitionsDeleted      = "KAFKA_DATA_LOSS.PARTITIONS_DELETED"
	CondPartitionOffsetChanged = "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED"
)

// PartitionsDeleted4 is KAFKA_DATA_LOSS.PARTITIONS_DELETED for a Set (Set), without a
// kafka.group.id.
func PartitionsDeleted4(set string) string {
	return Condition4 + " Partitions " + set + " have been deleted."
}

// PartitionOffsetChanged4 is KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED: the Reason line, then, on
// its own line, the sub-condition's hint when the release has one ("" for none: 4.0.0 prints the
// Reason line alone; 4.1.1 adds HintOffsetChanged41).
func PartitionOffsetChanged4(tp string, from, to int64, hint string) string {
	s := fmt.Sprintf("%s Partition %s offset was changed from %d to %d.", Condition4, tp, from, to)
	if hint != "" {
		s += "\n" + hint
	}
	return s
}

// HintOffsetChanged41 is the second line of PARTITION_OFFSET_CHANGED in Spark 4.1.1 (seen in
// the oracle's goldens). The master source read for ckpt has an earlier wording of SPARK-52096
// ("This could either be a user error that the start offset is set too high and this is the
// first batch, or …"); 4.1.1's text is the later one.
const HintOffsetChanged41 = "This could be either 1) a user error that the start offset is set beyond available offset when starting query, " +
	"or 2) the kafka topic-partition is deleted and re-created."
