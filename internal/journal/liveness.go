package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/liveness"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// RunningError is returned when the liveness record of `ckpt run` shows the engine alive.
type RunningError struct {
	Record liveness.Record
	Reason string
}

// Error names the engine and the ways out.
func (e *RunningError) Error() string {
	return fmt.Sprintf("the query is running: %s.\nStop it first (a change under a running query races its writes), or pass --force if you are sure it is stopped", e.Reason)
}

// CheckLive decides whether the checkpoint is in use. A liveness record of `ckpt run` (liveness.Path)
// answers at once: alive is refused whatever the window; dead means the engine's own files do
// not count, and only files written after it last showed life (by Spark, say) go through the
// file-age window. Without a record, or with one that cannot tell, the window decides (CheckIdle),
// as for any checkpoint Spark writes.
func CheckLive(ctx context.Context, s storage.Store, cp *checkpoint.Checkpoint, now time.Time, window time.Duration, ignore map[string]bool) error {
	rec, err := liveness.Read(ctx, cp) // read once for the command's checks on cp
	if err != nil || rec == nil {
		return CheckIdle(ctx, cp, now, window, ignore)
	}
	v := liveness.Judge(rec, now, hostname())
	switch v.State {
	case liveness.Alive:
		return &RunningError{Record: *rec, Reason: v.Reason}
	case liveness.Dead:
		// Files the dead engine wrote are no sign of life: it wrote them before Since, or within one
		// heartbeat after it (plus a little for coarse modification times).
		interval := rec.Interval
		if interval <= 0 {
			interval = liveness.DefaultInterval
		}
		cutoff := v.Since.Add(interval + 2*time.Second)
		own := map[string]bool{}
		for p := range ignore {
			own[p] = true
		}
		recent, err := recentFiles(ctx, cp)
		if err != nil {
			return err
		}
		for _, e := range recent {
			if !e.ModTime.After(cutoff) {
				own[e.Path] = true
			}
		}
		return CheckIdle(ctx, cp, now, window, own)
	}
	return CheckIdle(ctx, cp, now, window, ignore)
}
