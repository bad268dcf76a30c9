package lag

import (
	"context"
	"fmt"
	"sort"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/fleet"
	"github.com/ckpt-dev/ckpt/internal/lag"
)

// expandRecursive replaces each parent location with the checkpoints below it.
func expandRecursive(ctx context.Context, opts *Options) ([]string, error) {
	var out []string
	for _, parent := range opts.Locations {
		s, err := opts.OpenStore(ctx, parent)
		if err != nil {
			return nil, err
		}
		rels, err := fleet.Find(ctx, s, fleet.Options{})
		if err != nil {
			return nil, err
		}
		if len(rels) == 0 && len(opts.Locations) == 1 {
			return nil, cli.NoCheckpointBelow(ctx, s, parent)
		}
		for _, rel := range rels {
			out = append(out, fleet.Join(parent, rel))
		}
	}
	if len(out) == 0 {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("no checkpoint below %v (a checkpoint is a folder with offsets/, commits/ or a metadata file)", opts.Locations))
	}
	return out, nil
}

// worstFirst orders the checkpoints of --recursive as doctor --recursive does: unreadable ones,
// then those with corrupt commits or broker issues, then by lag in records, most first.
func worstFirst(rep *lag.Report) {
	rank := func(c lag.CheckpointLag) int {
		switch {
		case c.Error != "":
			return 0
		case len(c.CorruptCommits) > 0 || len(c.Issues) > 0:
			return 1
		}
		return 2
	}
	sort.SliceStable(rep.Checkpoints, func(i, j int) bool {
		a, b := rep.Checkpoints[i], rep.Checkpoints[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		return a.LagRecords > b.LagRecords
	})
}
