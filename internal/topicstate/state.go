// Package topicstate reads what a Kafka broker holds for a checkpoint's topics: each
// partition's log start and end offsets (Read, the facts recovery.Plan takes as
// Options.Broker), the records a re-run range really holds (CountRange, CountExact), and record
// timestamps for lag in time (RecordTimestamps). It is the Kafka-client side of the broker
// checks; what a restart makes of these facts is the recovery planner's (recovery.CheckBroker,
// recovery.CheckRestart).
//
// The broker is only read. Everything here returns plain data with JSON tags; nothing prints.
package topicstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// DefaultTimeout is how long one broker operation may take by default (cli.BrokerFlags'
// --broker-timeout, lag's refreshes).
const DefaultTimeout = 30 * time.Second

// Read lists the topics' partitions (metadata), then their log start and end offsets: three
// requests however many partitions there are. A topic that does not exist is listed in Missing,
// not an error; any other failure (unreachable broker, authorization, a partition without a
// leader) is an error naming the topic and partition. ctx bounds the whole read: without a
// deadline an unreachable broker is retried until ctx ends.
func Read(ctx context.Context, adm *kadm.Client, topics []string) (*recovery.BrokerState, error) {
	topics = uniqueSorted(topics)
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{}, Missing: []string{}}
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
		t := recovery.BrokerTopic{Topic: name, Partitions: []recovery.BrokerPartition{}}
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
			t.Partitions = append(t.Partitions, recovery.BrokerPartition{Partition: p, Start: s.Offset, End: e.Offset})
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

// sparkTP is Kafka's TopicPartition.toString, which Spark's messages use: "topic-partition".
func sparkTP(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }
