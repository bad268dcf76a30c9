package position

import (
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// SourceKind is what an offsets line holds.
type SourceKind string

// The source kinds position tells apart.
const (
	KindKafka SourceKind = "kafka"
	KindFile  SourceKind = "file" // {"logOffset":n}: a file source, whose offsets are not Kafka's
	KindVoid  SourceKind = "void" // "-": no offset yet
	KindOther SourceKind = "other"
)

// source is one line of an offsets file, parsed.
type source struct {
	index int
	kind  SourceKind
	kafka logformat.KafkaOffsets
}

func sourcesOf(file string, seq *logformat.OffsetSeq) []source {
	out := make([]source, 0, len(seq.Sources))
	for i, s := range seq.Sources {
		src := source{index: i, kind: KindOther}
		switch {
		case s.Void:
			src.kind = KindVoid
		default:
			if ko, err := logformat.ParseKafkaOffsets(file, s.JSON); err == nil {
				src.kind, src.kafka = KindKafka, ko
			} else if _, err := logformat.ParseFileSourceOffset(file, s.JSON); err == nil {
				src.kind = KindFile
			}
		}
		out = append(out, src)
	}
	return out
}

// topicsOf lists the topics of the Kafka sources, each once, in first-seen order.
func topicsOf(srcs []source) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range srcs {
		for _, t := range s.kafka.Topics {
			if !seen[t.Topic] {
				seen[t.Topic] = true
				out = append(out, t.Topic)
			}
		}
	}
	return out
}

func hasTopic(ko logformat.KafkaOffsets, topic string) bool {
	for _, t := range ko.Topics {
		if t.Topic == topic {
			return true
		}
	}
	return false
}
