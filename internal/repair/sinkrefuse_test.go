package repair

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestRefuseSinkCommitted(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	// offsets 0..3 and 5, commits 0..3: offsets/5 is an uncommitted orphan past a gap. Without a
	// sink, deleting it is the recommended repair.
	journaltest.BuildScenario(t, "missing-previous-offsets", m)
	p, err := NewPlan(ctx, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Strategy != StrategyDelete {
		t.Fatalf("without a sink: strategy %s", p.Strategy)
	}
	// The file sink committed batch 5: batch 5 ran and wrote its output, only its commit is
	// missing. Deleting offsets/5 would make Spark plan batch 5 again with new offsets, which the
	// sink would skip as already committed.
	sink := int64(5)
	p, err = NewPlan(ctx, m, Options{Planner: recovery.Options{SinkLatest: &sink}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Choices {
		if c.Strategy == StrategyDelete && (c.Feasible || !strings.Contains(c.Refusal, "file sink has already committed batch 5")) {
			t.Errorf("delete with the sink at 5: feasible=%v refusal=%q", c.Feasible, c.Refusal)
		}
		if c.Strategy == StrategySparkProcedure && c.Feasible {
			t.Errorf("spark-procedure with a file sink is feasible")
		}
	}
	// The plan that keeps output exactly-once: offsets/4 as a copy of offsets/5, so batch 5
	// re-runs over an empty range (the sink skips it anyway) and batch 6 continues after it.
	if p.Strategy != StrategyCopyPrevious || p.Refused != "" {
		t.Fatalf("with the sink: strategy %q refused %q", p.Strategy, p.Refused)
	}
	if p.After.Sink == nil || p.After.Sink.Status != recovery.SinkSkipsRerun {
		t.Errorf("sink verdict after the plan: %+v", p.After.Sink)
	}
	// --strategy delete is refused outright.
	p, err = NewPlan(ctx, m, Options{Planner: recovery.Options{SinkLatest: &sink}, Strategy: StrategyDelete})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused == "" || len(p.Actions) != 0 {
		t.Fatalf("--strategy delete with the sink at 5 was not refused: %+v", p.Actions)
	}

	// A single-way repair (a corrupt latest offsets file) with the sink past it is refused.
	c := storage.NewMem()
	journaltest.BuildScenario(t, "corrupt-latest-offsets-empty", c)
	sink = 7
	p, err = NewPlan(ctx, c, Options{Planner: recovery.Options{SinkLatest: &sink}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused == "" || len(p.Actions) != 0 {
		t.Fatalf("deleting offsets/7 with the sink at 7 was not refused")
	}
}
