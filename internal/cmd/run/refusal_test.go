package run

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/engine"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// TestRefusalText renders the engine's refusals: the command, not the engine, words the advice.
func TestRefusalText(t *testing.T) {
	ctx := context.Background()
	s, _ := scenario.Get("async-trap-0-3-7")
	st := storage.NewMem()
	if err := s.WriteTo(ctx, st); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	a, err := recovery.Assess(ctx, cp, recovery.Options{Mode: recovery.ModeSync})
	if err != nil || a.Trap == nil {
		t.Fatalf("no trap: %v", err)
	}
	trap := &engine.RefusedError{Plan: a.Plan, Checkpoint: "ck", Trap: a.Trap, Offsets: cp.Offsets.IDs(), Commits: cp.Commits.IDs()}
	got := refusalText(trap)
	for _, want := range []string{"Spark would refuse to restart this checkpoint, so ckpt does too:\n  java.lang.IllegalStateException: batch 6 doesn't exist\n",
		"async progress tracking (offsets 0, 3, 7, commits 0, 3, 7)", "needs offsets/6 to restart from batch 7", "the restart resumes at batch 8",
		"Nothing was written", "run the same command with --async-switch-off", "until 2 batches have persisted",
		"ckpt repair ck (it shows the plan it recommends", "--sink-option asyncProgressTrackingEnabled=true", "Diagnose with:  ckpt doctor ck"} {
		if !strings.Contains(got, want) {
			t.Errorf("trap refusal lacks %q:\n%s", want, got)
		}
	}
	trap.NoSwitchOff = query.AsyncTriggerRefusal(query.TriggerAvailableNow)
	if got := refusalText(trap); !strings.Contains(got, "needs a query that may use async progress tracking, and Async progress tracking cannot be used with AvailableNow trigger: run it once with a processing-time trigger") {
		t.Errorf("availableNow trap refusal:\n%s", got)
	}
	plain := &engine.RefusedError{Plan: a.Plan, Checkpoint: "ck"}
	if got := refusalText(plain); !strings.HasSuffix(got, "batch 6 doesn't exist\nDiagnose with:  ckpt doctor ck\nRepair with:    ckpt repair ck") {
		t.Errorf("plain refusal:\n%s", got)
	}
}
