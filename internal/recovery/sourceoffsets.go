// The committed batch's source offsets, as the restart deserializes them.

package recovery

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// sourceFormat is the offset format a source reads, as far as the checkpoint shows it.
type sourceFormat int

const (
	formatUnknown sourceFormat = iota
	formatKafka                // KafkaSourceOffset: JsonUtils.partitionOffsets
	formatLong                 // LongOffset (rate, memory): json.toLong
	formatFile                 // FileStreamSourceOffset {"logOffset":n}: a v1 Source, not judged
)

// formatOf tells a source's offset format from one of its offsets: a Kafka offset map, or a
// bare decimal long. Anything else is unknown (file sources, Delta, a damaged line).
func formatOf(file string, s logformat.SourceOffset) sourceFormat {
	if s.Void {
		return formatUnknown
	}
	if _, err := logformat.ParseKafkaOffsets(file, s.JSON); err == nil {
		return formatKafka
	}
	if _, err := strconv.ParseInt(s.JSON, 10, 64); err == nil {
		return formatLong
	}
	if _, err := logformat.ParseFileSourceOffset(file, s.JSON); err == nil {
		return formatFile
	}
	return formatUnknown
}

// sourceFormatFor is source i's format from the evidence other than offsets/L: the previous
// offsets file the restart read (offsets/L-1), then a Kafka source's initial offsets
// (sources/<i>/0, which only the Kafka source writes). formatUnknown when neither tells.
func (p *planner) sourceFormatFor(i int) (sourceFormat, string) {
	if p.start != nil && i < len(p.start.Sources) {
		file := p.cp.Offsets.Path(p.startID)
		if f := formatOf(file, p.start.Sources[i]); f != formatUnknown {
			return f, file
		}
	}
	// Only a sources/<i>/0 that parses as Kafka's initial offsets tells: the file source keeps
	// its own log under the same name.
	if _, err := p.cp.ReadKafkaInitialOffsets(p.ctx, i); err == nil {
		return formatKafka, fmt.Sprintf("sources/%d/0", i)
	}
	return formatUnknown, ""
}

// checkCommittedOffsets applies the first thing the resumed query does with the latest
// committed batch's offsets: constructNextBatch hands each MicroBatchStream its start offset
// through deserializeOffset (availableOffsets are offsets/L's), before it asks the source for
// new data. Checked against Spark 3.5.7, 4.0.0 and 4.1.1 with a Kafka source whose line in
// offsets/L is truncated JSON or not JSON: java.lang.IllegalArgumentException "Expected e.g.
// {...}, got <line>" and no batch. A v1 Source (the file source) gets the serialized offset
// and parses it only when data arrives, so it is not judged here.
func (p *planner) checkCommittedOffsets() error {
	path := p.cp.Offsets.Path(p.L)
	for i, s := range p.latest.Sources {
		if s.Void {
			continue // no offset: the source starts from its initial offsets
		}
		if formatOf(path, s) != formatUnknown {
			continue
		}
		kind, evidence := p.sourceFormatFor(i)
		what := fmt.Sprintf("%q", s.JSON)
		if s.JSON == "" {
			what = "an empty line"
		}
		switch kind {
		case formatKafka:
			_, err := logformat.ParseKafkaOffsets(path, s.JSON)
			var le *logformat.Error
			if !errors.As(err, &le) || le.Spark == "" {
				continue
			}
			p.warn("source %d is a Kafka source (%s holds its Kafka offsets), but its offset in %s, the latest committed batch, is %s: the resumed query deserializes it before planning batch %d and fails",
				i, evidence, path, what, p.L+1)
			return p.fail(ReasonInvalidSourceOffset, path, sparkFailure{exception: excIllegalArgument, message: le.Spark, exact: true})
		case formatLong:
			p.warn("source %d reads long offsets (%s holds one), but its offset in %s, the latest committed batch, is %s: the resumed query deserializes it before planning batch %d and fails",
				i, evidence, path, what, p.L+1)
			return p.fail(ReasonInvalidSourceOffset, path, sparkFailure{exception: "java.lang.NumberFormatException", message: "For input string: \"" + s.JSON + "\"", exact: false})
		}
	}
	return nil
}
