// Package topicstate connects a checkpoint's Kafka offsets to the broker: it reads each
// partition's log start and end offsets (Read), classifies what a restart of the query will hit
// with Spark's own messages (Check), counts the records a re-run range really holds (CountRange,
// CountExact), fetches record timestamps for lag in time (RecordTimestamps), and holds the broker
// flags every command shares (Flags).
//
// The broker is only read. Everything here returns plain data with JSON tags; nothing prints.
// Spark's rules and texts come from KafkaMicroBatchStream and KafkaOffsetReaderAdmin (see
// ../shared/research/spark-semantics.md §7).
package topicstate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// DefaultTimeout is how long one broker operation may take by default (cli.BrokerFlags'
// --broker-timeout, lag's refreshes).
const DefaultTimeout = 30 * time.Second

// State is what the broker says about a set of topics at one moment.
type State struct {
	// Topics are the requested topics that exist, sorted by name.
	Topics []Topic `json:"topics"`
	// Missing are the requested topics the broker does not have, sorted.
	Missing []string `json:"missing"`
	// ReadAt is when the offsets were listed (the time Read returned).
	ReadAt time.Time `json:"readAt"`
}

// Topic is one existing topic.
type Topic struct {
	// Topic is the topic's name.
	Topic string `json:"topic"`
	// ID is the topic id (base64, as kadm prints it), empty when the broker does not report ids. A topic deleted and
	// recreated gets a new id; the checkpoint does not record it, so Check cannot use it.
	ID string `json:"id"`
	// Partitions are sorted by partition number.
	Partitions []Partition `json:"partitions"`
}

// Partition is one partition's log: the offsets [Start, End) exist.
type Partition struct {
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
func (p Partition) Records() int64 { return p.End - p.Start }

// Topic returns the named topic, or nil when it is missing or was not read.
func (s *State) Topic(name string) *Topic {
	if s == nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(s.Topics, name, func(t Topic, n string) int { return cmp.Compare(t.Topic, n) })
	if !ok {
		return nil
	}
	return &s.Topics[i]
}

// Lookup returns one partition's log offsets.
func (s *State) Lookup(topic string, partition int32) (Partition, bool) {
	t := s.Topic(topic)
	if t == nil {
		return Partition{}, false
	}
	return t.Partition(partition)
}

// Partition returns partition p of the topic.
func (t *Topic) Partition(p int32) (Partition, bool) {
	i, ok := slices.BinarySearchFunc(t.Partitions, p, func(x Partition, p int32) int { return cmp.Compare(x.Partition, p) })
	if !ok {
		return Partition{}, false
	}
	return t.Partitions[i], true
}

// IsMissing reports whether the topic was requested and does not exist.
func (s *State) IsMissing(topic string) bool {
	if s == nil {
		return false
	}
	_, ok := slices.BinarySearch(s.Missing, topic)
	return ok
}

// Read lists the topics' partitions (metadata), then their log start and end offsets: three
// requests however many partitions there are. A topic that does not exist is listed in Missing,
// not an error; any other failure (unreachable broker, authorization, a partition without a
// leader) is an error naming the topic and partition. ctx bounds the whole read: without a
// deadline an unreachable broker is retried until ctx ends.
func Read(ctx context.Context, adm *kadm.Client, topics []string) (*State, error) {
	topics = uniqueSorted(topics)
	st := &State{Topics: []Topic{}, Missing: []string{}}
	if len(topics) == 0 {
		st.ReadAt = time.Now()
		return st, nil
	}
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", err)
	}
	var present []string
	for _, name := range topics {
		td, ok := details[name]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			st.Missing = append(st.Missing, name)
		case td.Err != nil:
			return nil, fmt.Errorf("kafka: describe topic %s: %w", name, td.Err)
		default:
			present = append(present, name)
		}
	}
	if len(present) == 0 {
		st.ReadAt = time.Now()
		return st, nil
	}
	starts, err := adm.ListStartOffsets(ctx, present...)
	if err != nil && !partial(err) {
		return nil, fmt.Errorf("kafka: list earliest offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, present...)
	if err != nil && !partial(err) {
		return nil, fmt.Errorf("kafka: list latest offsets: %w", err)
	}
	for _, name := range present {
		td := details[name]
		t := Topic{Topic: name, Partitions: []Partition{}}
		if td.ID != (kadm.TopicID{}) {
			t.ID = td.ID.String()
		}
		// The topic can vanish between the metadata and the offset requests: then it is missing.
		if gone(starts, name) || gone(ends, name) {
			st.Missing = append(st.Missing, name)
			continue
		}
		for _, p := range td.Partitions.Numbers() {
			s, okS := starts.Lookup(name, p)
			e, okE := ends.Lookup(name, p)
			switch {
			case !okS || !okE:
				return nil, fmt.Errorf("kafka: %s-%d: the broker listed no offsets for the partition", name, p)
			case s.Err != nil:
				return nil, fmt.Errorf("kafka: %s-%d: list earliest offset: %w", name, p, s.Err)
			case e.Err != nil:
				return nil, fmt.Errorf("kafka: %s-%d: list latest offset: %w", name, p, e.Err)
			}
			t.Partitions = append(t.Partitions, Partition{Partition: p, Start: s.Offset, End: e.Offset})
		}
		st.Topics = append(st.Topics, t)
	}
	slices.Sort(st.Missing)
	st.ReadAt = time.Now()
	return st, nil
}

// partial reports whether err is kadm's per-shard error: the per-partition errors then say
// which partitions failed, and are checked one by one.
func partial(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se) && !se.AllFailed
}

// gone reports whether kadm marked the topic unknown in an offset listing (its partition -1).
func gone(l kadm.ListedOffsets, topic string) bool {
	o, ok := l.Lookup(topic, -1)
	return ok && errors.Is(o.Err, kerr.UnknownTopicOrPartition)
}

func uniqueSorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Source is one Kafka source of an offsets file: the source's index (its line) and its offsets.
type Source struct {
	// Index is the source's line in the offsets file, its sources/<Index>/ directory.
	Index int `json:"index"`
	// Offsets are the source's Kafka offsets (next offset to read per partition).
	Offsets logformat.KafkaOffsets `json:"-"`
}

// KafkaSources returns the sources of one offsets file whose offset parses as Kafka offsets
// ({"topic":{"0":42}}), in line order. Other sources (files, rate, "-") are skipped. This is how
// ckpt tells which source index is Kafka: Spark records no source type.
func KafkaSources(seq *logformat.OffsetSeq) []Source {
	if seq == nil {
		return nil
	}
	var out []Source
	for i, s := range seq.Sources {
		if s.Void {
			continue
		}
		k, err := logformat.ParseKafkaOffsets("", s.JSON)
		if err != nil {
			continue
		}
		out = append(out, Source{Index: i, Offsets: k})
	}
	return out
}

// Topics returns the topics named in any of the offsets, sorted and without duplicates: the
// argument Read needs.
func Topics(offsets ...logformat.KafkaOffsets) []string {
	var out []string
	for _, o := range offsets {
		for _, t := range o.Topics {
			out = append(out, t.Topic)
		}
	}
	return uniqueSorted(out)
}

// sparkTP is Kafka's TopicPartition.toString, which Spark's messages use: "topic-partition".
func sparkTP(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }
