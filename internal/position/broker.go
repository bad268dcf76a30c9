package position

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Partition is one Kafka partition's log as the broker has it: offsets Start (the log start,
// "earliest") to End (the next offset to be written, "latest").
type Partition struct {
	Partition  int32
	Start, End int64
}

// Broker is what moving a position needs from Kafka. It is an interface so that the logic is
// tested against the embedded broker and plain data alike; NewBroker is the real one.
type Broker interface {
	// Partitions lists topic's partitions; ok is false when the topic does not exist.
	Partitions(topic string) (ps []Partition, ok bool)
	// OffsetsAt returns, per partition of topics, the first offset whose record timestamp is at
	// or after at (Kafka's ListOffsets by timestamp); the end offset when no record is that new.
	OffsetsAt(ctx context.Context, topics []string, at time.Time) (map[logformat.TopicPartition]int64, error)
}

// Access is how NewBroker reaches the cluster: the command's broker flags (cli.BrokerFlags), kept
// as an interface so this logic package does not import the CLI layer.
type Access interface {
	ReadCheckpoint(ctx context.Context, adm *kadm.Client, cp *checkpoint.Checkpoint) (*recovery.BrokerState, error)
	Client(ctx context.Context) (*kadm.Client, error)
	Context(ctx context.Context) (context.Context, context.CancelFunc)
}

// NewBroker reads the offsets of every topic a restart of cp can read through the broker flags
// once (cli.BrokerFlags.ReadCheckpoint); OffsetsAt connects again when asked. This file is the
// package's only use of topicstate.
func NewBroker(ctx context.Context, f Access, cp *checkpoint.Checkpoint) (Broker, error) {
	st, err := f.ReadCheckpoint(ctx, nil, cp)
	if err != nil {
		return nil, err
	}
	return &kafkaBroker{flags: f, st: st}, nil
}

type kafkaBroker struct {
	flags Access
	st    *recovery.BrokerState
}

func (b *kafkaBroker) Partitions(topic string) ([]Partition, bool) {
	t := b.st.Topic(topic)
	if t == nil {
		return nil, false
	}
	out := make([]Partition, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		out = append(out, Partition{Partition: p.Partition, Start: p.Start, End: p.End})
	}
	return out, true
}

// State is what the broker said, for the recovery planner's verification after a change.
func (b *kafkaBroker) State() *recovery.BrokerState { return b.st }

func (b *kafkaBroker) OffsetsAt(ctx context.Context, topics []string, at time.Time) (map[logformat.TopicPartition]int64, error) {
	adm, err := b.flags.Client(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	rctx, cancel := b.flags.Context(ctx)
	defer cancel()
	listed, err := adm.ListOffsetsAfterMilli(rctx, at.UnixMilli(), topics...)
	if err != nil {
		return nil, fmt.Errorf("list offsets by timestamp: %w", err)
	}
	out := map[logformat.TopicPartition]int64{}
	var first error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			if first == nil {
				first = fmt.Errorf("list offsets by timestamp of %s-%d: %w", o.Topic, o.Partition, o.Err)
			}
			return
		}
		out[logformat.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	})
	return out, first
}
