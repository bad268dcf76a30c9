package position

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// A signal during rewind's loop over the batches above the target stops it there: before, a
// rewind of 300,000 batches went on for seconds after SIGTERM.
func TestRewindPlanStopsAtSignal(t *testing.T) {
	two := int64(2)
	storetest.StopBefore(t, committed(t, 300, nil), "walk state", func(ctx context.Context, st storage.Store) error {
		_, err := PlanRewind(ctx, st, RewindOptions{ToBatch: &two})
		return err
	})
}
