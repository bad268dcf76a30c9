package recovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

type rawJSON = json.RawMessage

var jsonNull = rawJSON("null")

// offsetJSON embeds a source offset as a JSON value: the raw text when it
// is valid JSON (Kafka offsets, {"logOffset":n}, a bare long), else the text
// as a JSON string so a corrupt line cannot break the document.
func offsetJSON(s logformat.SourceOffset) rawJSON {
	if s.Void {
		return jsonNull
	}
	if json.Valid([]byte(s.JSON)) {
		return rawJSON(s.JSON)
	}
	q, _ := json.Marshal(s.JSON)
	return rawJSON(q)
}

// kafkaRange adds the per-partition view of source i's re-run when its end
// offset is a Kafka offset. hasStart is false when the source starts from
// its initial offsets (sources/<i>/0), which this reads.
func (p *planner) kafkaRange(i int, start logformat.SourceOffset, hasStart bool, end logformat.SourceOffset) error {
	if end.Void {
		return nil
	}
	endOffs, err := logformat.ParseKafkaOffsets(p.cp.Offsets.Path(p.L), end.JSON)
	if err != nil {
		return nil // not a Kafka source
	}
	var from map[logformat.TopicPartition]int64
	fromWhat := ""
	switch {
	case hasStart:
		so, err := logformat.ParseKafkaOffsets(p.cp.Offsets.Path(p.startID), start.JSON)
		if err != nil {
			return nil // checkStart fails the restart first
		}
		from = so.Map()
	default:
		rel := checkpoint.InitialOffsetsPath(i)
		ini, err := p.cp.ReadKafkaInitialOffsets(p.ctx, i)
		var le *logformat.Error
		switch {
		case errors.Is(err, fs.ErrNotExist) && p.cfg.broker != nil:
			// KafkaMicroBatchStream.getOrCreateInitialPartitionOffsets resolves startingOffsets
			// on the broker again: with the default, "latest", the partitions' ends now.
			from = p.brokerLatest(endOffs.Map())
			fromWhat = "startingOffsets \"latest\" resolved on the broker again (" + rel + " is missing)"
			p.warn("source %d starts from its initial offsets but %s is missing: Spark resolves startingOffsets again, which ckpt takes to be the default \"latest\": the broker's latest offsets now, so the re-run starts there", i, rel)
		case errors.Is(err, fs.ErrNotExist):
			p.warn("source %d starts from its initial offsets but %s is missing: Spark resolves startingOffsets again (default \"latest\"), which skips every record not yet read", i, rel)
			fromWhat = "startingOffsets resolved again (" + rel + " is missing)"
		case errors.As(err, &le):
			f := kafkaInitialFailure(p.rel, p.cp.SparkPath(rel), err)
			reason := ReasonCorruptInitialOffsets
			if f.unsupported {
				reason = ReasonUnsupportedInitialOffsetsVersion
			}
			return p.fail(reason, rel, f.sparkFailure)
		case err != nil:
			return fmt.Errorf("read %s: %w", rel, err)
		default:
			from = ini.Offsets.Map()
			fromWhat = "initial offsets (" + rel + ")"
		}
	}
	endMap := endOffs.Map()
	if p.cfg.availableNowPrefetch() {
		if err := p.prefetchCheck(i, from, endMap); err != nil {
			return err
		}
	}
	tps := make([]logformat.TopicPartition, 0, len(endMap))
	for tp := range endMap {
		tps = append(tps, tp)
	}
	for tp := range from {
		if _, ok := endMap[tp]; !ok {
			tps = append(tps, tp)
		}
	}
	sort.Slice(tps, func(a, b int) bool {
		if tps[a].Topic != tps[b].Topic {
			return tps[a].Topic < tps[b].Topic
		}
		return tps[a].Partition < tps[b].Partition
	})
	var gone []string
	var back []PartitionRange
	for _, tp := range tps {
		pr := PartitionRange{Source: i, Topic: tp.Topic, Partition: tp.Partition}
		e, inEnd := endMap[tp]
		s, inStart := from[tp]
		if inEnd {
			pr.End = ptr(e)
		}
		if inStart {
			pr.Start = ptr(s)
		}
		switch {
		case !inEnd:
			pr.Note = NotePartitionGone
			gone = append(gone, dataloss.TP(tp.Topic, tp.Partition))
		case from == nil:
			pr.Note = fromWhat
		case !inStart:
			pr.Note = "new partition: read from its earliest offset"
		case e < s:
			pr.Note = NoteOffsetBackwards
			back = append(back, pr)
		default:
			pr.Records = ptr(e - s)
			if fromWhat != "" {
				pr.Note = fromWhat
			}
		}
		p.res.Kafka = append(p.res.Kafka, pr)
	}
	return p.kafkaDataLoss(i, gone, back)
}

// brokerLatest is the broker's latest offset of every partition of the topics of end
// (Options.Broker): what startingOffsets "latest" resolves to.
func (p *planner) brokerLatest(end map[logformat.TopicPartition]int64) map[logformat.TopicPartition]int64 {
	out := map[logformat.TopicPartition]int64{}
	seen := map[string]bool{}
	for tp := range end {
		if seen[tp.Topic] {
			continue
		}
		seen[tp.Topic] = true
		if bt := p.cfg.broker.Topic(tp.Topic); bt != nil {
			for _, bp := range bt.Partitions {
				out[logformat.TopicPartition{Topic: tp.Topic, Partition: bp.Partition}] = bp.End
			}
		}
	}
	return out
}

// prefetchCheck is 4.0.0's verifyEndOffsetForTriggerAvailableNow for the re-run of source i:
// under Trigger.AvailableNow the source fetched the broker's latest offsets when the query
// started, and planInputPartitions requires the batch's end offsets to name the same
// topic-partitions (MISMATCHED_TOPIC_PARTITIONS_BETWEEN_END_OFFSET_AND_PREFETCHED), before it
// looks for data loss in the range. The pre-fetched partitions are the broker's for the topics
// of the range (Options.Broker); without the broker, ckpt takes them to be the partitions the
// checkpoint records for the re-run (start and end offsets).
func (p *planner) prefetchCheck(i int, from, end map[logformat.TopicPartition]int64) error {
	topics := map[string]bool{}
	pre := map[logformat.TopicPartition]bool{}
	for tp := range end {
		topics[tp.Topic] = true
	}
	for tp := range from {
		topics[tp.Topic] = true
	}
	if b := p.cfg.broker; b != nil {
		for t := range topics {
			if bt := b.Topic(t); bt != nil {
				for _, bp := range bt.Partitions {
					pre[logformat.TopicPartition{Topic: t, Partition: bp.Partition}] = true
				}
			}
		}
	} else {
		for tp := range end {
			pre[tp] = true
		}
		for tp := range from {
			pre[tp] = true
		}
	}
	same := len(pre) == len(end)
	for tp := range end {
		if !pre[tp] {
			same = false
		}
	}
	if same {
		return nil
	}
	names := func(tps []logformat.TopicPartition) string {
		sortTPs(tps)
		out := make([]string, len(tps))
		for k, tp := range tps {
			out[k] = dataloss.TP(tp.Topic, tp.Partition)
		}
		return dataloss.Set(out)
	}
	var preTPs, endTPs []logformat.TopicPartition
	for tp := range pre {
		preTPs = append(preTPs, tp)
	}
	for tp := range end {
		endTPs = append(endTPs, tp)
	}
	where := "the partitions the checkpoint records for the re-run (no broker given)"
	if p.cfg.broker != nil {
		where = "the broker's partitions"
	}
	p.warn("source %d: Spark %s under Trigger.AvailableNow fetched the latest offsets of %s when the query started, and the re-run of batch %d ends at other topic-partitions (%s): it fails its pre-fetch check before the data-loss check of the range",
		i, p.cfg.exact(), where, p.L, p.cp.Offsets.Path(p.L))
	// A Scala Set prints in hash order past four elements.
	return p.fail(ReasonKafkaPrefetchMismatch, p.cp.Offsets.Path(p.L), sparkFailure{exception: excSpark, message: "Kafka data source in Trigger.AvailableNow should provide the same topic partitions in pre-fetched offset to end offset for each microbatch. " +
		"The error could be transient - restart your query, and report if you still see the same issue.\n" +
		"topic-partitions for pre-fetched offset: " + names(preTPs) + ", topic-partitions for end offset: " + names(endTPs) + ".", exact: len(preTPs) <= 4 && len(endTPs) <= 4})
}

// kafkaDataLoss applies KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets to the re-run's
// recorded range, which needs no broker: partitions of the start offsets missing from the end
// offsets are reported first, then, partition by partition, an end below its start. With
// failOnDataLoss (the default) KafkaMicroBatchStream.reportDataLoss throws, failing the restart
// while Spark plans batch L; with false it logs a WARN and skips the data.
func (p *planner) kafkaDataLoss(i int, gone []string, back []PartitionRange) error {
	if len(gone) == 0 && len(back) == 0 {
		return nil
	}
	latest := p.cp.Offsets.Path(p.L)
	var f sparkFailure
	var msg3 string
	switch {
	case len(gone) > 0:
		// Spark prints a Scala Set, in hash order past four partitions.
		set := dataloss.Set(gone)
		msg3 = dataloss.Gone(set, false)
		f = sparkFailure{exception: dataloss.IllegalState, message: dataloss.Driver(msg3, true), exact: len(gone) <= 4}
		if p.rel.errorConditions() {
			f = sparkFailure{exception: dataloss.KafkaIllegalState, message: dataloss.PartitionsDeleted4(set), exact: len(gone) <= 4, errorClass: dataloss.CondPartitionsDeleted}
		}
		verb := "are"
		if len(gone) == 1 {
			verb = "is"
		}
		p.warn("source %d: %s in the start offsets %s not in %s: Spark reports data loss when it plans batch %d (a kafka.group.id option changes the text)",
			i, strings.Join(gone, ", "), verb, latest, p.L)
	default:
		// Spark checks the partitions in a Set's order; ckpt names the first by topic and number.
		b := back[0]
		tp := dataloss.TP(b.Topic, b.Partition)
		msg3 = dataloss.OffsetChanged(tp, *b.Start, *b.End)
		f = sparkFailure{exception: dataloss.IllegalState, message: dataloss.Driver(msg3, true), exact: len(back) == 1}
		if p.rel.errorConditions() {
			f = sparkFailure{exception: dataloss.KafkaIllegalState, message: dataloss.PartitionOffsetChanged4(tp, *b.Start, *b.End, p.rel.offsetChangedHint()), exact: len(back) == 1, errorClass: dataloss.CondPartitionOffsetChanged}
		}
		p.warn("source %d: %s goes from offset %d back to %d in the re-run of batch %d: Spark reports data loss when it plans the batch",
			i, tp, *b.Start, *b.End, p.L)
	}
	if !p.cfg.failOnDataLoss {
		p.res.DriverLog = append(p.res.DriverLog, "WARN KafkaMicroBatchStream: "+dataloss.Driver(msg3, false))
		return nil
	}
	return p.fail(ReasonKafkaRangeDataLoss, latest, f)
}

// kafkaInitialFailure maps a parse error of sources/<i>/0 to what
// KafkaSourceInitialOffsetWriter.deserialize raises when the re-run asks
// the source for its initial offsets.
func kafkaInitialFailure(r release, sparkPath string, err error) fileFailure {
	var le *logformat.Error
	if !errors.As(err, &le) {
		return fileFailure{sparkFailure: sparkFailure{message: err.Error()}}
	}
	f := func(exc, msg string) fileFailure {
		return fileFailure{sparkFailure: sparkFailure{exception: exc, message: msg, exact: true}}
	}
	switch {
	case le.Spark == "requirement failed":
		// require(content.nonEmpty): an IllegalArgumentException, not wrapped.
		return f(excIllegalArgument, "requirement failed")
	case le.Kind == logformat.KindUnsupportedVersion:
		if ve := checkVersion(r, LogKafkaInitialOffsets, le.Version, 1); ve != nil {
			return *versionFailure(sparkPath, ve)
		}
		return fileFailure{sparkFailure: wrapped(sparkPath, sparkFailure{exception: excIllegalState, message: le.Spark, exact: true})}
	case le.Spark == kafkaNoVersionLine:
		// Thrown by the writer itself, not by MetadataVersionUtil: no condition.
		return fileFailure{sparkFailure: wrapped(sparkPath, sparkFailure{exception: excIllegalState, message: le.Spark, exact: true})}
	case le.Kind == logformat.KindMalformedVersion:
		return fileFailure{sparkFailure: wrapped(sparkPath, sparkFailure{exception: versionException(r), message: malformed(r, le.Spark), exact: true})}
	case le.Spark != "":
		exc, msg := splitException(le.Spark)
		return f(exc, msg)
	}
	return fileFailure{sparkFailure: sparkFailure{exception: "", message: "cannot parse " + sparkPath + ": expected " + le.Expected + ", got " + le.Got, exact: false}}
}

// checkStart applies the source's deserializeOffset to the start offset
// the re-run hands it (runBatch). ckpt knows a source's kind only from its
// offsets: when the end offset in offsets/L is a Kafka offset, the start
// must be one too (KafkaMicroBatchStream.deserializeOffset →
// JsonUtils.partitionOffsets); an empty line (SerializedOffset("")) or
// another source's offset (a Kafka start for a non-Kafka end) is no offset
// any source reads. A source with no end offset ("-") is not run.
func (p *planner) checkStart(i int, start, end logformat.SourceOffset) *sparkFailure {
	if end.Void {
		return nil
	}
	startPath, endPath := p.cp.Offsets.Path(p.startID), p.cp.Offsets.Path(p.L)
	_, endErr := logformat.ParseKafkaOffsets(endPath, end.JSON)
	_, startErr := logformat.ParseKafkaOffsets(startPath, start.JSON)
	var le *logformat.Error
	switch {
	case endErr == nil && startErr != nil && errors.As(startErr, &le) && le.Spark != "":
		what := fmt.Sprintf("%q", start.JSON)
		if start.JSON == "" {
			what = "an empty line"
		}
		p.warn("source %d is a Kafka source (its offset in %s is a Kafka offset), but its start offset in %s is %s: the Kafka source fails to read it when batch %d runs",
			i, endPath, startPath, what, p.L)
		return &sparkFailure{exception: excIllegalArgument, message: le.Spark, exact: true}
	case start.JSON == "":
		return &sparkFailure{exception: "", message: fmt.Sprintf("source %d cannot read its start offset: line %d of %s is empty", i, i+3, startPath), exact: false}
	case endErr != nil && startErr == nil && formatOf(endPath, end) == formatUnknown && errors.As(endErr, &le) && le.Spark != "":
		// A damaged end offset, not another source's: the Kafka source deserializes it after the
		// start (checked on Spark 3.5.7 and 4.1.1 with "hello": the Kafka source's own message).
		p.warn("source %d is a Kafka source (its start offset in %s is a Kafka offset), but its end offset in %s is %q: the Kafka source fails to read it when batch %d runs",
			i, startPath, endPath, end.JSON, p.L)
		p.endOffsetFailed = true
		return &sparkFailure{exception: excIllegalArgument, message: le.Spark, exact: true}
	case endErr != nil && startErr == nil:
		p.warn("source %d's start offset in %s is a Kafka offset but its end offset in %s is not: the query's sources changed (their order, or a source was replaced), so the source fails to read the start offset when batch %d runs",
			i, startPath, endPath, p.L)
		return &sparkFailure{exception: "", message: fmt.Sprintf("source %d cannot read its start offset in %s, a Kafka offset, while its end offset in %s is not one", i, startPath, endPath), exact: false}
	}
	return nil
}

const kafkaNoVersionLine = "Log file was malformed: failed to detect the log file version line."
