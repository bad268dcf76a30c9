package repair

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/repair"
)

// readBroker reads the broker's offsets for every topic the checkpoint's restart can read
// (recovery.CheckpointTopics): the plan's strategies restart from different batches.
func readBroker(ctx context.Context, cp *checkpoint.Checkpoint, opts *Options) (*recovery.BrokerState, error) {
	return opts.Broker.ReadCheckpoint(ctx, nil, cp)
}

// addBrokerWarnings adds to the plan what the restart after it meets on the broker (Spark's
// default failOnDataLoss=true): repair cannot fix records deleted by retention or a recreated
// topic, and the user must know before applying. The offsets come from the predicted restart
// (its re-run range, or the offsets it starts from), read in the checkpoint as it is.
func addBrokerWarnings(ctx context.Context, cp *checkpoint.Checkpoint, p *repair.Plan, st *recovery.BrokerState) error {
	if p.After == nil {
		return nil
	}
	_, issues, err := recovery.CheckRestart(ctx, cp, p.After, st, true)
	if err != nil {
		return err
	}
	for _, is := range issues {
		p.Warnings = append(p.Warnings, "after the plan, "+is.Code+": "+is.Warning()+" See ckpt doctor.")
	}
	return nil
}
