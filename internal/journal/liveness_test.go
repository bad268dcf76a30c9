package journal

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/liveness"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// TestCheckLive: with ckpt run's liveness record the answer does not wait for the window. Files
// written a moment ago by an engine that is gone (kill -9) do not block; a live engine blocks
// even with the window off; a file written after a dead engine's last sign of life (by Spark)
// goes through the window as before.
func TestCheckLive(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	journaltest.BuildScenario(t, "async-trap-0-3-7", s) // written now: young files
	now := time.Now()
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var live *LiveError
	if err := CheckLive(ctx, s, cp, now, time.Minute, nil); !errors.As(err, &live) {
		t.Fatalf("no record, young files: %v, want the window's refusal", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	// A checkpoint view reads the record once (a command's checks share it): each new record is
	// seen by a view loaded after it.
	fresh := func() *checkpoint.Checkpoint {
		t.Helper()
		cp, err := checkpoint.Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	write := func(r liveness.Record) {
		t.Helper()
		_ = s.Delete(ctx, liveness.Path)
		data, _ := json.Marshal(r)
		if err := s.WriteFile(ctx, liveness.Path, data); err != nil {
			t.Fatal(err)
		}
	}
	write(liveness.Record{Host: hostname(), PID: cmd.Process.Pid, Start: now.Add(-time.Minute), Heartbeat: now, Interval: time.Second})
	if err := CheckLive(ctx, s, fresh(), now, time.Minute, nil); err != nil {
		t.Fatalf("dead engine: %v", err)
	}
	write(liveness.Record{Host: hostname(), PID: os.Getpid(), Start: now.Add(-time.Minute), Heartbeat: now, Interval: time.Second})
	var running *RunningError
	if err := CheckLive(ctx, s, fresh(), now, 0, nil); !errors.As(err, &running) {
		t.Fatalf("live engine, window off: %v, want RunningError", err)
	}
	// The engine died an hour ago; a file written now is someone else's.
	write(liveness.Record{Host: hostname(), PID: cmd.Process.Pid, Start: now.Add(-2 * time.Hour), Heartbeat: now.Add(-time.Hour), Interval: time.Second})
	if err := CheckLive(ctx, s, fresh(), now, time.Minute, nil); !errors.As(err, &live) {
		t.Fatalf("file newer than the dead engine: %v, want the window's refusal", err)
	}
}
