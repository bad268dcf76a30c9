package doctor

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/migrate"
)

// migration adds to a restart blocked by a log file too new for the release what
// `ckpt migrate --to-spark` can do about it (migrate.Assess, which reads no state): the command
// when it rewrites the checkpoint in the release's formats, or exactly why it cannot.
func (r *runner) migration(ctx context.Context) error {
	to, err := migrate.Target(r.res.SparkVersion)
	if err != nil {
		return nil // not a release ckpt migrates to
	}
	for i := range r.findings {
		f := &r.findings[i]
		if f.Code != CodeUnsupportedLogVersion {
			continue
		}
		items, err := migrate.Assess(ctx, r.cp, r.listing, to)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil // no base for a migration (a last batch that did not commit), or nothing it knows
		}
		for _, it := range items {
			if it.Refused != "" {
				f.Fix += fmt.Sprintf(" `ckpt migrate --to-spark %s` cannot rewrite it for Spark %s: %s: %s.", to, to, it.What, it.Refused)
				return nil
			}
		}
		f.Fix += fmt.Sprintf(" Or, to stay on Spark %s, rewrite the checkpoint in its formats (planned, journaled, undoable): the last command below shows the plan.", to)
		f.Commands = append(f.Commands, r.cmd("migrate", "--to-spark", to))
		return nil
	}
	return nil
}
