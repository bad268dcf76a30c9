package replay

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// output is `ckpt replay -o json`: recovery.Result, whose fields it embeds unchanged, plus, with
// --bootstrap-server, the broker's counts on each Kafka partition of the re-run and the broker
// section. Without a broker it is exactly recovery.Result.
type output struct {
	*recovery.Result
	// Kafka replaces recovery.Result's kafka entries by the same entries with broker counts.
	Kafka []partitionRange `json:"kafka,omitempty"`
	// Broker is what the broker said; omitted without --bootstrap-server.
	Broker *brokerView `json:"broker,omitempty"`
	// Detected is what the checkpoint showed (runReplay); omitted when nothing was detected.
	Detected *recovery.Detection `json:"detected,omitempty"`
}

// partitionRange is recovery.PartitionRange (its fields unchanged) plus what the broker holds
// of the range. The broker fields are omitted without a broker.
type partitionRange struct {
	recovery.PartitionRange
	// BrokerRecords are the offsets of [start, end) that still exist on the broker (inside its
	// log start and end): what the re-run really reads. Data records only with --exact;
	// otherwise offsets, an upper bound on a transactional or compacted topic.
	BrokerRecords *int64 `json:"brokerRecords,omitempty"`
	// AgedOut are the offsets of the range below the log start (deleted by retention or
	// DeleteRecords); BeyondEnd those at or above the log end (the topic was recreated).
	AgedOut   *int64 `json:"agedOut,omitempty"`
	BeyondEnd *int64 `json:"beyondEnd,omitempty"`
	// LogStart and LogEnd are the partition's earliest and latest offsets; omitted when the
	// partition is not on the broker.
	LogStart *int64 `json:"logStart,omitempty"`
	LogEnd   *int64 `json:"logEnd,omitempty"`
	// Exact is true when BrokerRecords was counted by reading the records (--exact).
	Exact bool `json:"exact,omitempty"`
	// BrokerNote explains the broker's count when it differs from the offsets'.
	BrokerNote string `json:"brokerNote,omitempty"`
}

// brokerView is the broker section of the output.
type brokerView struct {
	// BootstrapServers is the broker asked.
	BootstrapServers string `json:"bootstrapServers"`
	// ReadAt is when the broker's offsets were listed.
	ReadAt time.Time `json:"readAt"`
	// FailOnDataLoss is the source option the prediction assumes (--fail-on-data-loss).
	FailOnDataLoss bool `json:"failOnDataLoss"`
	// Exact is --exact.
	Exact bool `json:"exact"`
	// PlannerOutcome is the planner's outcome from the checkpoint alone, before the broker.
	PlannerOutcome string `json:"plannerOutcome"`
	// RerunRecords is the sum of the re-run's records by subtracting offsets, BrokerRecords
	// the sum of what exists on the broker; null without a re-run of a Kafka source.
	RerunRecords  *int64 `json:"rerunRecords"`
	BrokerRecords *int64 `json:"brokerRecords"`
	// Issues are what the restart meets on the broker, in the order Spark meets them; each
	// is also one of the result's warnings, and the first that fails is its error.
	Issues []recovery.RestartIssue `json:"issues"`
}

// brokerConn is the broker read before planning: its state (for every topic the restart can
// read, recovery.CheckpointTopics) and the client --exact counts with.
type brokerConn struct {
	state *recovery.BrokerState
	cl    *kgo.Client
}

func (b *brokerConn) close() { b.cl.Close() }

// readBroker connects and reads the broker's offsets for the checkpoint's topics.
func readBroker(ctx context.Context, opts *Options, cp *checkpoint.Checkpoint) (*brokerConn, error) {
	cl, err := opts.Broker.KgoClient(ctx)
	if err != nil {
		return nil, err
	}
	st, err := opts.Broker.ReadCheckpoint(ctx, kadm.NewClient(cl), cp)
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &brokerConn{state: st, cl: cl}, nil
}

// withBroker adds to the planner's result, planned with the broker's state, the broker's counts
// of the re-run (CountExact with --exact) and the broker section. What the restart meets there
// is the planner's (res.Broker).
func withBroker(ctx context.Context, opts *Options, b *brokerConn, res *recovery.Result) (*output, error) {
	out := &output{Result: res}
	st := b.state
	verdict := res.Broker
	if verdict == nil {
		verdict = &recovery.BrokerVerdict{Restart: &recovery.KafkaRestart{}, Issues: []recovery.RestartIssue{}, CheckpointOutcome: res.Outcome}
	}
	counts := topicstate.CountRestart(verdict.Restart, st)
	if opts.Exact {
		bctx, cancel := opts.Broker.Context(ctx)
		defer cancel()
		for _, cs := range counts {
			if err := topicstate.CountExact(bctx, b.cl, cs, 0); err != nil {
				return nil, err
			}
		}
	}
	bv := &brokerView{
		BootstrapServers: opts.Broker.BootstrapServers,
		ReadAt:           st.ReadAt,
		FailOnDataLoss:   opts.FailOnDataLoss,
		Exact:            opts.Exact,
		PlannerOutcome:   verdict.CheckpointOutcome,
		Issues:           verdict.Issues,
	}
	for _, k := range res.Kafka {
		pr := partitionRange{PartitionRange: k}
		if k.Records != nil {
			bv.RerunRecords = ptr(deref(bv.RerunRecords) + *k.Records)
		}
		for _, c := range counts[k.Source] {
			if c.Topic != k.Topic || c.Partition != k.Partition {
				continue
			}
			pr.BrokerRecords, pr.Exact, pr.BrokerNote = ptr(c.Records), c.Exact, c.Note
			pr.AgedOut, pr.BeyondEnd = ptr(c.AgedOut), ptr(c.BeyondEnd)
			if c.LogStart != recovery.Unknown {
				pr.LogStart, pr.LogEnd = ptr(c.LogStart), ptr(c.LogEnd)
			}
			bv.BrokerRecords = ptr(deref(bv.BrokerRecords) + c.Records)
		}
		out.Kafka = append(out.Kafka, pr)
	}
	out.Broker = bv
	return out, nil
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
