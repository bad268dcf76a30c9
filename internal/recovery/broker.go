package recovery

import (
	"cmp"
	"slices"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// This file holds the broker facts the planner takes as plain data (Options.Broker): what a
// Kafka broker said about the checkpoint's topics, read by the Kafka-facing package
// (internal/topicstate) so that the planner needs no Kafka client.

// BrokerState is what the broker says about a set of topics at one moment.
type BrokerState struct {
	// Topics are the requested topics that exist, sorted by name.
	Topics []BrokerTopic `json:"topics"`
	// Missing are the requested topics the broker does not have, sorted.
	Missing []string `json:"missing"`
	// ReadAt is when the offsets were listed (the time Read returned).
	ReadAt time.Time `json:"readAt"`
}

// BrokerTopic is one existing topic.
type BrokerTopic struct {
	// Topic is the topic's name.
	Topic string `json:"topic"`
	// ID is the topic id (base64, as kadm prints it), empty when the broker does not report ids. A topic deleted and
	// recreated gets a new id; the checkpoint does not record it, so Check cannot use it.
	ID string `json:"id"`
	// Partitions are sorted by partition number.
	Partitions []BrokerPartition `json:"partitions"`
}

// BrokerPartition is one partition's log: the offsets [Start, End) exist.
type BrokerPartition struct {
	// Partition is the partition number.
	Partition int32 `json:"partition"`
	// Start is the log start offset (ListOffsets earliest): retention and DeleteRecords raise it.
	Start int64 `json:"start"`
	// End is the high watermark (ListOffsets latest): the offset the next record gets. Spark's
	// "latest" offsets are these (read_uncommitted, Spark's default isolation).
	End int64 `json:"end"`
}

// Records is End - Start: the offsets the log holds. Transactional control records and
// compaction gaps make it an upper bound on the data records.
func (p BrokerPartition) Records() int64 { return p.End - p.Start }

// Topic returns the named topic, or nil when it is missing or was not read.
func (s *BrokerState) Topic(name string) *BrokerTopic {
	if s == nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(s.Topics, name, func(t BrokerTopic, n string) int { return cmp.Compare(t.Topic, n) })
	if !ok {
		return nil
	}
	return &s.Topics[i]
}

// Lookup returns one partition's log offsets.
func (s *BrokerState) Lookup(topic string, partition int32) (BrokerPartition, bool) {
	t := s.Topic(topic)
	if t == nil {
		return BrokerPartition{}, false
	}
	return t.Partition(partition)
}

// Partition returns partition p of the topic.
func (t *BrokerTopic) Partition(p int32) (BrokerPartition, bool) {
	i, ok := slices.BinarySearchFunc(t.Partitions, p, func(x BrokerPartition, p int32) int { return cmp.Compare(x.Partition, p) })
	if !ok {
		return BrokerPartition{}, false
	}
	return t.Partitions[i], true
}

// IsMissing reports whether the topic was requested and does not exist.
func (s *BrokerState) IsMissing(topic string) bool {
	if s == nil {
		return false
	}
	_, ok := slices.BinarySearch(s.Missing, topic)
	return ok
}

// KafkaSource is one Kafka source of an offsets file: the source's index (its line) and its offsets.
type KafkaSource struct {
	// Index is the source's line in the offsets file, its sources/<Index>/ directory.
	Index int `json:"index"`
	// Offsets are the source's Kafka offsets (next offset to read per partition).
	Offsets logformat.KafkaOffsets `json:"-"`
}

// KafkaSources returns the sources of one offsets file whose offset parses as Kafka offsets
// ({"topic":{"0":42}}), in line order. Other sources (files, rate, "-") are skipped. This is how
// ckpt tells which source index is Kafka: Spark records no source type.
func KafkaSources(seq *logformat.OffsetSeq) []KafkaSource {
	if seq == nil {
		return nil
	}
	var out []KafkaSource
	for i, s := range seq.Sources {
		if s.Void {
			continue
		}
		k, err := logformat.ParseKafkaOffsets("", s.JSON)
		if err != nil {
			continue
		}
		out = append(out, KafkaSource{Index: i, Offsets: k})
	}
	return out
}

// KafkaTopics returns the topics named in any of the offsets, sorted and without duplicates: the
// argument Read needs.
func KafkaTopics(offsets ...logformat.KafkaOffsets) []string {
	var out []string
	for _, o := range offsets {
		for _, t := range o.Topics {
			out = append(out, t.Topic)
		}
	}
	return uniqueSorted(out)
}

func uniqueSorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
