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
	// 3.5: the planner itself predicts the failure after the wrapped batch (Spark 3.5.7 stops
	// listing offsets/). 4.0: Spark runs the wrapped batch, and repair refuses to lead a query
	// into negative batch ids.
	for _, tc := range []struct{ version, refusal string }{
		{"3.5", "More than Int.MaxValue elements."},
		{"4.0", "wrap to -9223372036854775808"},
	} {
		p, err := NewPlan(context.Background(), m, Options{Planner: recovery.Options{SparkVersion: tc.version}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[Strategy]Choice{}
		for _, c := range p.Choices {
			got[c.Strategy] = c
		}
		if c := got[StrategyCopyPrevious]; c.Feasible || !strings.Contains(c.Refusal, tc.refusal) {
			t.Errorf("%s: copy-previous: feasible %v, refusal %q; want refused with %q", tc.version, c.Feasible, c.Refusal, tc.refusal)
		}
		if c := got[StrategyDelete]; !c.Feasible || c.After == nil || c.After.NextBatch != 0 {
			t.Errorf("%s: delete: feasible %v, after %+v; want a new query at batch 0", tc.version, c.Feasible, c.After)
		}
		if p.Recommended != StrategyDelete {
			t.Errorf("%s: recommended %q, want delete", tc.version, p.Recommended)
		}
	}
}
