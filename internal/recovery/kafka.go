package recovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
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
			p.warn("source %d: the start offset in %s is not a Kafka offset while the end offset is: %v", i, p.cp.Offsets.Path(p.startID), err)
			return nil
		}
		from = so.Map()
	default:
		rel := fmt.Sprintf("%s/%d/0", checkpoint.DirSources, i)
		data, err := p.cp.ReadFile(p.ctx, rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			p.warn("source %d starts from its initial offsets but %s is missing: Spark resolves startingOffsets again (default \"latest\"), which skips every record not yet read", i, rel)
			fromWhat = "startingOffsets resolved again (" + rel + " is missing)"
		case err != nil:
			return fmt.Errorf("read %s: %w", rel, err)
		default:
			ini, perr := logformat.ParseKafkaInitialOffsets(rel, data)
			if perr != nil {
				return p.fail(reasonBadInitial, kafkaInitialFailure(p.rel, p.cp.SparkPath(rel), perr))
			}
			from = ini.Offsets.Map()
			fromWhat = "initial offsets (" + rel + ")"
		}
	}
	endMap := endOffs.Map()
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
			pr.Note = "partition gone from the end offsets"
			p.warn("source %d: %s-%d is in the start offsets but not in the end offsets: Spark reports it as data loss (failOnDataLoss)", i, tp.Topic, tp.Partition)
		case from == nil:
			pr.Note = fromWhat
		case !inStart:
			pr.Note = "new partition: read from its earliest offset"
		case e < s:
			pr.Note = "offset went backwards"
			p.warn("source %d: %s-%d goes from offset %d back to %d: Spark reports \"Partition %s-%d's offset was changed from %d to %d, some data may have been missed\" (fails unless failOnDataLoss=false)",
				i, tp.Topic, tp.Partition, s, e, tp.Topic, tp.Partition, s, e)
		default:
			pr.Records = ptr(e - s)
			if fromWhat != "" {
				pr.Note = fromWhat
			}
		}
		p.res.Kafka = append(p.res.Kafka, pr)
	}
	return nil
}

// kafkaInitialFailure maps a parse error of sources/<i>/0 to what
// KafkaSourceInitialOffsetWriter.deserialize raises when the re-run asks
// the source for its initial offsets.
func kafkaInitialFailure(r release, sparkPath string, err error) sparkFailure {
	var le *logformat.Error
	if !errors.As(err, &le) {
		return sparkFailure{message: err.Error()}
	}
	switch {
	case le.Spark == "requirement failed":
		// require(content.nonEmpty): an IllegalArgumentException, not wrapped.
		return sparkFailure{excIllegalArgument, "requirement failed", true}
	case le.Kind == logformat.KindUnsupportedVersion:
		return sparkFailure{excIllegalState, wrapRead(sparkPath, tooNew(r, le.Version, logformat.KafkaInitialOffsetsMaxVersion)), true}
	case le.Spark == kafkaNoVersionLine:
		// Thrown by the writer itself, not by MetadataVersionUtil: no condition.
		return sparkFailure{excIllegalState, wrapRead(sparkPath, le.Spark), true}
	case le.Kind == logformat.KindMalformedVersion:
		return sparkFailure{excIllegalState, wrapRead(sparkPath, malformed(r, le.Spark)), true}
	case le.Spark != "":
		exc, msg := splitException(le.Spark)
		return sparkFailure{exc, msg, true}
	}
	return sparkFailure{"", "cannot parse " + sparkPath + ": expected " + le.Expected + ", got " + le.Got, false}
}

const kafkaNoVersionLine = "Log file was malformed: failed to detect the log file version line."
