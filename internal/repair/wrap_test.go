package repair

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// A way out whose next batch id passes Long.MaxValue is refused: the planner predicts a resume at
// the wrapped id, but Spark 3.5.7 fails that restart ("More than Int.MaxValue elements.",
// internal/sparkoracle's repair cases). delete, which starts over at batch 0, stays.
func TestRefuseWrappedBatchID(t *testing.T) {
	sc, ok := scenario.Get("max-batch-id")
	if !ok {
		t.Fatal("scenario max-batch-id is gone")
	}
	m := storage.NewMem()
	if err := sc.WriteTo(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), m, Options{Planner: recovery.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[Strategy]Choice{}
	for _, c := range p.Choices {
		got[c.Strategy] = c
	}
	if c := got[StrategyCopyPrevious]; c.Feasible || !strings.Contains(c.Refusal, "wrap to -9223372036854775808") {
		t.Errorf("copy-previous: feasible %v, refusal %q; want refused for the wrapped batch id", c.Feasible, c.Refusal)
	}
	if c := got[StrategyDelete]; !c.Feasible || c.After == nil || c.After.NextBatch != 0 {
		t.Errorf("delete: feasible %v, after %+v; want a new query at batch 0", c.Feasible, c.After)
	}
	if p.Recommended != StrategyDelete {
		t.Errorf("recommended %q, want delete", p.Recommended)
	}
}
