package engine

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

type crashed struct{}

// crashAt runs r on store until the engine's crash point phase of batch id, where it stops
// as a kill -9 would (no further write of this run).
func crashAt(t *testing.T, ctx context.Context, r *query.Resolved, store storage.Store, sink Sink, id int64, phase string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil && r != (crashed{}) {
			panic(r)
		}
	}()
	e, err := New(ctx, Options{Query: r, Store: store, Sink: sink, Log: io.Discard,
		FailAt: &FailAt{Batch: id, Phase: phase}, Exit: func(int) { panic(crashed{}) }, PollingDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.Run(ctx)
	t.Fatal("no crash")
}

// checkNoFindings fails when the planner (replay, rewind) warns about cp or does not resume
// it, or doctor --deep (state checks included) finds anything.
func checkNoFindings(t *testing.T, ctx context.Context, cp *checkpoint.Checkpoint) {
	t.Helper()
	plan, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion})
	if err != nil || plan.Outcome != recovery.OutcomeResume || len(plan.Warnings) > 0 {
		t.Errorf("planner: %v %s, warnings %v", err, plan.Verdict(), plan.Warnings)
	}
	rep, err := doctor.Run(ctx, cp, doctor.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("doctor: %s %s %s", f.Code, f.Severity, f.Message)
	}
}

// sparkSchema reads and parses a state schema file Spark wrote (testdata); data is its bytes.
func sparkSchema(t *testing.T, f string) (s *statefmt.Schema, data []byte) {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = statefmt.ParseSchema(f, data); err != nil {
		t.Fatal(err)
	}
	return s, data
}
