package recovery_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

var (
	bigOnce sync.Once
	bigDir  string
	bigKeep bool // CKPT_BENCH_DIR: reuse a generated tree across runs
	bigErr  error
)

// big100k is a local checkpoint with offsets and commits 0..99999 (batch
// 99999 not committed), generated once per test binary.
func big100k(b *testing.B) string {
	bigOnce.Do(func() {
		if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
			bigDir, bigKeep = d, true
			if _, err := os.Stat(filepath.Join(d, "offsets", "99999")); err == nil {
				return
			}
		} else {
			d, err := os.MkdirTemp("", "ckpt-bench-100k-")
			if err != nil {
				bigErr = err
				return
			}
			bigDir = d
		}
		dir := bigDir
		sb := scenario.NewBuilder("bench-100k")
		for _, d := range []string{"offsets", "commits", "sources/0"} {
			if bigErr = os.MkdirAll(filepath.Join(dir, d), 0o755); bigErr != nil {
				return
			}
		}
		if bigErr = os.WriteFile(filepath.Join(dir, "metadata"), []byte(`{"id":"`+sb.QueryID()+`"}`), 0o644); bigErr != nil {
			return
		}
		for id := int64(0); id < 100000; id++ {
			off := sb.OffsetsJSON(id, scenario.Kafka("events", id, 3))
			if bigErr = os.WriteFile(filepath.Join(dir, "offsets", fmt.Sprint(id)), []byte(off), 0o644); bigErr != nil {
				return
			}
			if id == 99999 {
				continue
			}
			if bigErr = os.WriteFile(filepath.Join(dir, "commits", fmt.Sprint(id)), []byte(`v1`+"\n"+`{"nextBatchWatermarkMs":0}`), 0o644); bigErr != nil {
				return
			}
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" && !bigKeep {
		os.RemoveAll(bigDir)
	}
	os.Exit(code)
}

// BenchmarkListOnly100k is the floor: the three directory listings Load
// makes, and nothing else.
func BenchmarkListOnly100k(b *testing.B) {
	dir := big100k(b)
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, d := range []string{"", "offsets", "commits"} {
			if _, err := st.List(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLoadAndPlan100k is what `ckpt replay` does: Load, then Plan
// (including the per-release comparison), from a cold checkpoint each time.
func BenchmarkLoadAndPlan100k(b *testing.B) {
	dir := big100k(b)
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cp, err := checkpoint.Load(ctx, st)
		if err != nil {
			b.Fatal(err)
		}
		res, err := recovery.Plan(ctx, cp, recovery.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.RerunBatch == nil || *res.RerunBatch != 99999 {
			b.Fatalf("unexpected plan: %s", res.Verdict())
		}
	}
}

// listCache serves listings from memory, so BenchmarkPlanOnly100k measures
// what Plan adds to the listing: a cold Checkpoint's reads and the planning.
type listCache struct {
	storage.Store
	lists map[string][]storage.Entry
}

func (l listCache) List(_ context.Context, dir string) ([]storage.Entry, error) {
	return l.lists[dir], nil
}

// BenchmarkPlanOnly100k is Load (listings from memory) and Plan on the
// 100k-batch checkpoint: the cost the planner adds to the three listings.
func BenchmarkPlanOnly100k(b *testing.B) {
	dir := big100k(b)
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	lc := listCache{Store: st, lists: map[string][]storage.Entry{}}
	for _, d := range []string{"", "offsets", "commits"} {
		if lc.lists[d], err = st.List(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cp, err := checkpoint.Load(ctx, lc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := recovery.Plan(ctx, cp, recovery.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
