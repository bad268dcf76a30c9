package journal

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Overlay is a checkpoint with a plan's actions applied in memory: what the plan would leave,
// for the planner, without changing the store or listing it again (checkpoint.Overlay).
type Overlay struct {
	ov *checkpoint.Overlay
	// cp is the overlay loaded since the last Add (nil: load it again).
	cp *checkpoint.Checkpoint
}

// NewOverlay starts an overlay of cp, whose listings and reads it shares.
func NewOverlay(cp *checkpoint.Checkpoint) *Overlay {
	return &Overlay{ov: cp.Overlay(nil)}
}

// newStoreOverlay starts an overlay of the store as it is now (Apply's check under the lock).
func newStoreOverlay(s storage.Store) *Overlay {
	return &Overlay{ov: checkpoint.NewOverlay(s, nil)}
}

// Add fills a's digests and size from the overlay as it is (Fill), then applies a to it. Only
// actions on the checkpoint's own files can be added (Store "").
func (o *Overlay) Add(ctx context.Context, a *Action) error {
	if a.Store != "" {
		return fmt.Errorf("journal: %s %s is in the store %q, not the checkpoint's", a.Op, a.Path, a.Store)
	}
	if err := Fill(ctx, o.ov, a); err != nil {
		return err
	}
	var data []byte
	if a.Op == OpCopy {
		var err error
		if data, err = readFile(ctx, o.ov, a.From); err != nil {
			return err
		}
	}
	o.apply(*a, data)
	return nil
}

// Placed applies a filled copy whose bytes the planner never reads (a staged state file: the
// planner lists state files, it does not read them); the overlay gets the name without them.
func (o *Overlay) Placed(a Action) {
	o.cp = nil
	o.ov.Set(a.Path, nil)
}

// apply applies a to the overlay; data are the bytes a copy writes.
func (o *Overlay) apply(a Action, data []byte) {
	o.cp = nil
	switch a.Op {
	case OpDelete:
		o.ov.Hide(a.Path)
	case OpCopy:
		o.ov.Set(a.Path, data)
	case OpWrite, OpReplace:
		o.ov.Set(a.Path, a.Data)
	}
}

// Load is the checkpoint as the overlay has it, loaded once between two Adds.
func (o *Overlay) Load(ctx context.Context) (*checkpoint.Checkpoint, error) {
	if o.cp == nil {
		cp, err := checkpoint.Load(ctx, o.ov)
		if err != nil {
			return nil, err
		}
		o.cp = cp
	}
	return o.cp, nil
}

// Predict is the recovery planner's restart for the checkpoint as the overlay has it: the one
// prediction of every plan, checked again under the lock by Apply and verified after it.
func (o *Overlay) Predict(ctx context.Context, opts recovery.Options) (*recovery.Result, error) {
	cp, err := o.Load(ctx)
	if err != nil {
		return nil, err
	}
	return recovery.Plan(ctx, cp, opts)
}

// Predict adds actions, in order, to an overlay of cp (each filled as the ones before it leave
// the checkpoint: Overlay.Add) and returns the planner's restart for the result.
func Predict(ctx context.Context, cp *checkpoint.Checkpoint, actions []Action, opts recovery.Options) (*recovery.Result, error) {
	o := NewOverlay(cp)
	for i := range actions {
		if err := o.Add(ctx, &actions[i]); err != nil {
			return nil, err
		}
	}
	return o.Predict(ctx, opts)
}
