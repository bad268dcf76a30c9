package journal

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// CheckIdleBefore is Apply's liveness check on its own, for a command to run before it asks for
// confirmation: a query that looks alive is refused before the person answers, not after.
// Apply checks again (the answer may take a while). --force (opts.Force) skips it here.
func CheckIdleBefore(ctx context.Context, s storage.Store, opts Options) error {
	if opts.Force {
		return nil
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return err
	}
	return checkIdleOwn(ctx, s, cp, opts.now(), opts.ActiveWindow, opts.BackupRoot)
}
