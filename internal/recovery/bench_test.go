package recovery_test

import (
	"context"
	"os"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// big is a local checkpoint with offsets and commits 0..99999 (batch 99999 not committed),
// generated once per test binary; CKPT_BENCH_DIR reuses a generated tree across runs.
var big = &scenario.BenchCheckpoint{
	Linear: scenario.Linear{Name: "bench-100k", Batches: 100_000, Committed: 99_999, Linked: true},
	Prefix: "ckpt-bench-100k-",
	Reuse:  true,
}

// big1m is the same at a million batches (two million files, hard links of a few).
var big1m = &scenario.BenchCheckpoint{
	Linear: scenario.Linear{Name: "bench-1m", Batches: 1_000_000, Committed: 999_999, Linked: true},
	Prefix: "ckpt-bench-1m-",
	Reuse:  true,
}

func big100k(b *testing.B) string {
	dir, err := big.Dir()
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	big.Remove()
	big1m.Remove()
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

// BenchmarkReplayVsLs is `ckpt replay`'s work (Load, then Plan) against the bare `ls -f` of
// root, offsets/ and commits/ (scenario.ReadDirNames), alternating in one loop; x-floor is the
// ratio (goal: at most 2).
func BenchmarkReplayVsLs(b *testing.B) {
	for _, c := range []struct {
		name string
		ck   *scenario.BenchCheckpoint
	}{{"100k", big}, {"1M", big1m}} {
		b.Run(c.name, func(b *testing.B) {
			dir, err := c.ck.Dir()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			st, err := storage.NewLocal(dir)
			if err != nil {
				b.Fatal(err)
			}
			want := c.ck.Batches - 1
			var rt scenario.RatioTimer
			b.ResetTimer()
			for b.Loop() {
				if err := rt.Floor(func() error { _, err := scenario.ReadDirNames(dir); return err }); err != nil {
					b.Fatal(err)
				}
				if err := rt.Op(func() error {
					cp, err := checkpoint.Load(ctx, st)
					if err != nil {
						return err
					}
					res, err := recovery.Plan(ctx, cp, recovery.Options{})
					if err != nil {
						return err
					}
					if res.RerunBatch == nil || *res.RerunBatch != want {
						b.Fatalf("unexpected plan: %s", res.Verdict())
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			rt.Report(b)
		})
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
