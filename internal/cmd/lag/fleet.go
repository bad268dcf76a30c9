package lag

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/fleet"
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
		for _, rel := range rels {
			out = append(out, fleet.Join(parent, rel))
		}
	}
	if len(out) == 0 {
		return nil, exitcode.New(exitcode.Failure, fmt.Errorf("no checkpoint below %v (a checkpoint is a folder with offsets/, commits/ or a metadata file)", opts.Locations))
	}
	return out, nil
}
