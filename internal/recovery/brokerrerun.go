package recovery

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// CheckBrokerRerun is CheckBroker for a batch that runs again over a range the checkpoint recorded,
// (start, end]: the uncommitted latest batch a restart re-runs. Spark plans such a batch from
// the checkpoint alone (KafkaMicroBatchStream.planInputPartitions with the logged offsets: no
// latest offsets are listed), asks the broker only for the earliest offsets of partitions that
// are in end but not in start, and then the executors read [start, end) from the broker. So the
// problems differ from Check's:
//
//   - driver side, for partitions new in end: one of them missing on the broker
//     (partitions-removed, "Cannot find earliest offsets of Set(…)"), or starting above 0
//     (partitions-added, "Added partition … starts from X instead of 0");
//   - executor side, per partition: the range starts below the log start (offsets-out-of-range,
//     "Cannot fetch offset N"), or reaches beyond the log end (topic-recreated, "Cannot fetch
//     offset N" at the first offset that does not exist).
//
// Partitions in start but not in end, and ranges going backwards, are visible in the
// checkpoint alone (recovery.Plan warns about them) and are not repeated here. A partition of
// the range whose topic or partition is gone from the broker is left to CheckBroker(end, …): Spark
// has no data-loss check for it while re-running (its tasks wait for the partition until the
// Kafka consumer's timeouts expire), and the batch after the re-run reports it. Issues come in
// the order Spark meets them: the driver's, then the executors' by topic and partition.
func CheckBrokerRerun(start, end logformat.KafkaOffsets, st *BrokerState, failOnDataLoss bool) []BrokerIssue {
	from, until := start.Map(), end.Map()
	report := func(msg string) string { return dataloss.Driver(msg, failOnDataLoss) }
	executor := func(offset int64, tp logformat.TopicPartition) string {
		return dataloss.Executor(dataloss.CannotFetch(offset), dataloss.ExecutorGroupID, sparkTP(tp.Topic, tp.Partition), failOnDataLoss)
	}
	read := func(topic string) bool { return st.Topic(topic) != nil || st.IsMissing(topic) }

	// Driver: partitions new in end (KafkaOffsetReader.getOffsetRangesFromResolvedOffsets).
	var missingNew []logformat.TopicPartition
	var added []BrokerIssue
	for _, tp := range sortedKeys(until) {
		if _, ok := from[tp]; ok || !read(tp.Topic) || st.IsMissing(tp.Topic) {
			continue
		}
		p, ok := st.Lookup(tp.Topic, tp.Partition)
		if !ok {
			missingNew = append(missingNew, tp)
			continue
		}
		name := sparkTP(tp.Topic, tp.Partition)
		is := BrokerIssue{Code: ReasonPartitionsAdded, Topic: tp.Topic, Partition: tp.Partition,
			CheckpointOffset: Unknown, LogStart: p.Start, LogEnd: p.End, Class: dataloss.IllegalState}
		if p.Start == 0 {
			is.Message = fmt.Sprintf("%s is new in the re-run's end offsets: the re-run reads it from its earliest offset 0 up to %d", name, until[tp])
			is.FailOnDataLossFalse = "The same: the partition is read from offset 0 and nothing is lost."
		} else {
			is.Records, is.DataLoss, is.Fails = p.Start, true, failOnDataLoss
			is.Message = fmt.Sprintf("%s is new in the re-run's end offsets and its earliest offset is %d: offsets [0, %d) were removed before the query could read them", name, p.Start, p.Start)
			is.SparkMessage = report(dataloss.AddedPartition(name, p.Start))
			is.FailOnDataLossFalse = fmt.Sprintf("Spark logs the message as a warning and reads the partition from offset %d; offsets [0, %d) are never read.", p.Start, p.Start)
		}
		added = append(added, is)
	}
	var issues []BrokerIssue
	if len(missingNew) > 0 {
		msg := report(dataloss.CannotFindEarliest(dataloss.PartitionSet(missingNew)))
		for _, tp := range missingNew {
			t := st.Topic(tp.Topic)
			issues = append(issues, BrokerIssue{
				Code: ReasonPartitionsRemoved, Topic: tp.Topic, Partition: tp.Partition,
				CheckpointOffset: until[tp], LogStart: Unknown, LogEnd: Unknown, Records: Unknown,
				DataLoss: true, Fails: failOnDataLoss, Class: dataloss.IllegalState,
				Message: fmt.Sprintf("%s is new in the re-run's end offsets (up to offset %d) but topic %s has only %d partitions",
					sparkTP(tp.Topic, tp.Partition), until[tp], tp.Topic, len(t.Partitions)),
				SparkMessage:        msg,
				FailOnDataLossFalse: "Spark logs the message as a warning and the re-run does not read the partition; whatever it held is lost.",
			})
		}
	}
	issues = append(issues, added...)

	// Executors: read [from, until) of every partition (KafkaDataConsumer.get).
	for _, tp := range sortedKeys(until) {
		p, ok := st.Lookup(tp.Topic, tp.Partition)
		if !ok {
			continue
		}
		f, inStart := from[tp]
		if !inStart {
			f = p.Start // a new partition: from its earliest offset
		}
		u := until[tp]
		if f < 0 || u <= f {
			continue // nothing to read (Spark drops empty and negative ranges)
		}
		name := sparkTP(tp.Topic, tp.Partition)
		rangeText := dataloss.AvailableRange(p.Start, p.End)
		if f < p.Start {
			lost := min(u, p.Start) - f
			is := BrokerIssue{
				Code: ReasonOffsetsOutOfRange, Topic: tp.Topic, Partition: tp.Partition,
				CheckpointOffset: f, LogStart: p.Start, LogEnd: p.End, Records: lost,
				DataLoss: true, Fails: failOnDataLoss, Class: dataloss.IllegalState, Executor: true,
				Message: fmt.Sprintf("%s: the re-run reads offsets [%d, %d) but the log starts at %d: %d of them were deleted (retention or DeleteRecords) before the query read them",
					name, f, u, p.Start, lost),
				SparkMessage: executor(f, tp),
			}
			if u <= p.Start {
				is.FailOnDataLossFalse = fmt.Sprintf("Spark logs the message as a warning, then \"%s\": the re-run reads nothing from the partition.",
					dataloss.SkippedShort(rangeText, f, u))
			} else {
				is.FailOnDataLossFalse = fmt.Sprintf("Spark logs the message as a warning, skips offsets [%d, %d) (%d records) and reads [%d, %d).", f, p.Start, lost, p.Start, u)
			}
			issues = append(issues, is)
		}
		if u > p.End {
			at := max(f, p.Start, p.End) // the first offset of the range Kafka cannot serve
			gone := u - at
			msg := fmt.Sprintf("%s: the re-run reads offsets [%d, %d) but the log ends at %d: ", name, f, u, p.End)
			if at == f {
				msg += "none of them exist"
			} else {
				msg += fmt.Sprintf("[%d, %d) (%d offsets) no longer exist", at, u, gone)
			}
			msg += ": the topic was deleted and recreated (or the high watermark went backwards)"
			issues = append(issues, BrokerIssue{
				Code: ReasonTopicRecreated, Topic: tp.Topic, Partition: tp.Partition,
				CheckpointOffset: f, LogStart: p.Start, LogEnd: p.End, Records: gone,
				DataLoss: true, Fails: failOnDataLoss, Class: dataloss.IllegalState, Executor: true,
				Message:      msg,
				SparkMessage: executor(at, tp),
				FailOnDataLossFalse: fmt.Sprintf("Spark logs the message as a warning, then \"%s\": offsets [%d, %d) are never read.",
					dataloss.SkippedShort(rangeText, at, u), at, u),
			})
		}
	}
	return issues
}
