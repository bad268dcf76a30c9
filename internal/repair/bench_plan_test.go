package repair

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// BenchmarkPlanMissingPrevious is `ckpt repair`'s planning (NewPlan: doctor, every strategy's
// fix-point loop on an overlay, the restart predicted after each) on a local checkpoint of
// CKPT_BENCH_BATCHES batches (default 100,000) whose offsets/L-1 is missing, the case that
// builds every strategy. It reports the store's listings and reads per plan besides the time:
// docs/benchmarks.md's figures (issue 23 §2, issue 25).
func BenchmarkPlanMissingPrevious(b *testing.B) {
	n := int64(100000)
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_BATCHES"), 10, 64); err == nil && v > 10 {
		n = v
	}
	ctx := context.Background()
	dir := b.TempDir()
	if err := scenario.WriteLinear(dir, scenario.Linear{Name: "bench", Batches: n, Committed: n - 1, Initial: true}); err != nil {
		b.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "offsets", fmt.Sprint(n-2))); err != nil {
		b.Fatal(err)
	}
	local, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	f := storage.NewFaulty(local)
	var lists, reads int64
	var took time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.ResetCounts()
		t0 := time.Now()
		p, err := NewPlan(ctx, f, Options{})
		if err != nil {
			b.Fatal(err)
		}
		took += time.Since(t0)
		if len(p.Choices) == 0 {
			b.Fatalf("no strategies planned: %+v", p.Findings)
		}
		c := f.Counts()
		lists += c[storage.OpList] + c[storage.OpWalk]
		reads += c[storage.OpRead] + c[storage.OpOpen] + c[storage.OpStat]
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "plan-s")
	b.ReportMetric(float64(lists)/float64(b.N), "listings/op")
	b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
}
