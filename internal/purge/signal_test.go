package purge

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// A signal during the planning loop stops it there: before, 600,000 actions were built (seconds)
// before the next read noticed.
func TestPlanStopsAtSignal(t *testing.T) {
	storetest.StopBefore(t, build(t, 300, 300), "open commits/0", func(ctx context.Context, st storage.Store) error {
		_, err := NewPlan(ctx, st, Options{Keep: 100})
		return err
	})
}
