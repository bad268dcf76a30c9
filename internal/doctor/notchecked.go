package doctor

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// NotChecked is a check doctor did not run because what it needs was not given: "no problems
// found" is then no more than the other checks say. Its JSON form is a public contract
// (docs/doctor.md): a script tells "healthy" from "not checked" by Check.
type NotChecked struct {
	// Check is a stable id: one of the Check* constants.
	Check string `json:"check"`
	// Message says what was not checked and what to pass, in one line.
	Message string `json:"message"`
}

// The checks doctor runs only when given what they need.
const (
	// CheckKafkaOffsets: the offsets the restart reads against the broker (--bootstrap-server),
	// for a checkpoint with Kafka sources: records gone from Kafka, a recreated topic, fewer
	// partitions.
	CheckKafkaOffsets = "kafka-offsets"
	// CheckSink: the file sink's log (or the Delta sink's txn) against the commit log (--sink,
	// --delta-sink).
	CheckSink = "sink"
	// CheckDeep: every offsets and commits file, not only those the restart reads (--deep).
	CheckDeep = "deep"
)

// notChecked lists the checks this run left out, most consequential first.
func notChecked(ctx context.Context, cp *checkpoint.Checkpoint, opts Options, sinkGiven bool) ([]NotChecked, error) {
	out := []NotChecked{}
	if opts.Broker == nil || opts.Broker.State == nil {
		// A file CheckpointTopics cannot read (a damaged or oddly named offsets file) is a
		// finding already; whether the query reads Kafka is then unknown, and not claimed.
		topics, err := recovery.CheckpointTopics(ctx, cp)
		if err == nil && len(topics) > 0 {
			out = append(out, NotChecked{CheckKafkaOffsets, "Kafka offsets not checked: pass --bootstrap-server"})
		}
	}
	if !sinkGiven {
		out = append(out, NotChecked{CheckSink, "sink not checked: pass --sink (file sink) or --delta-sink"})
	}
	if !opts.Deep {
		out = append(out, NotChecked{CheckDeep, "files the restart does not read not checked: pass --deep"})
	}
	return out, nil
}
