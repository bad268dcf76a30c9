package journal

import (
	"context"
	"path"
	"sort"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// newPlan is the plan repair makes for the scenarios these tests use, built here so that the
// engine is tested on its own: the leftovers (temporary files, checksums of missing batches) by
// path, then the commits above the latest offsets, newest first; predicted by the planner.
func newPlan(ctx context.Context, s storage.Store) (*Plan, error) {
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	var leftovers []string
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		for _, e := range l.Temps {
			leftovers = append(leftovers, e.Path)
		}
		for _, e := range l.Checksums {
			n := logformat.ParseName(path.Base(e.Path))
			if n.HasBatch && !l.Has(n.Batch) {
				leftovers = append(leftovers, e.Path)
			}
		}
	}
	sort.Strings(leftovers)
	var as []Action
	for _, p := range leftovers {
		as = append(as, Action{Op: OpDelete, Path: p, Reason: "leftover"})
	}
	L, _ := cp.Offsets.Latest()
	ids := cp.Commits.IDs()
	for i := len(ids) - 1; i >= 0 && ids[i] > L; i-- {
		as = append(as, Action{Op: OpDelete, Path: cp.Commits.FilePath(ids[i]), Reason: "commit ahead of the offsets"})
	}
	res, err := Predict(ctx, cp, as, recovery.Options{})
	if err != nil {
		return nil, err
	}
	return &Plan{Actions: as, After: res}, nil
}
