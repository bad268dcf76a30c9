package state

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// opened is a checkpoint that a command writing state (repartition, edit) is about to plan on.
type opened struct {
	store storage.Store
	// cp is the checkpoint loaded; nil when it does not load (the plan then says why).
	cp       *checkpoint.Checkpoint
	detected *recovery.Detection
	planner  recovery.Options
}

// openToChange opens the checkpoint at uri for command, loads it, and fills the restart flags
// left unset from what the checkpoint shows (recovery.DetectDefaults).
func openToChange(ctx context.Context, open func(context.Context, string) (storage.Store, error), uri, command string,
	mode *recovery.Mode, sparkVersion *string, commitFormatVersion *int) (*opened, error) {
	store, err := open(ctx, uri)
	if err != nil {
		return nil, err
	}
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{Command: command})
	if err != nil {
		return nil, err
	}
	o := &opened{store: store}
	if cp, err := checkpoint.LoadAt(ctx, store, loc); err == nil {
		o.cp = cp
		o.detected = recovery.DetectDefaults(ctx, cp, mode, sparkVersion, commitFormatVersion)
	}
	o.planner = recovery.Options{Mode: *mode, SparkVersion: *sparkVersion, CommitFormatVersion: *commitFormatVersion}
	return o, nil
}

// withoutData is actions as the -o json document shows them: each new file named with its
// digest and size, its bytes (the state) left out.
func withoutData(actions []journal.Action) []journal.Action {
	shown := make([]journal.Action, len(actions))
	for i, a := range actions {
		a.Data = nil
		shown[i] = a
	}
	return shown
}
