package doctor_test

import (
	"context"
	"os"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// big is a committed 100k-batch checkpoint in a temporary directory, written once per test
// binary.
var big = &scenario.BenchCheckpoint{
	Linear: scenario.Linear{Name: "bench", Batches: 100_000, Committed: 100_000, Initial: true},
	Prefix: "ckpt-doctor-bench-",
}

func bigCheckpoint(b *testing.B) string {
	dir, err := big.Dir()
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// The trees of BenchmarkDoctorVsLs: the same as recovery's benchmarks (CKPT_BENCH_DIR shares
// them): offsets 0..N-1, commits 0..N-2, hard links of a few files.
var (
	vsLs100k = &scenario.BenchCheckpoint{
		Linear: scenario.Linear{Name: "bench-100k", Batches: 100_000, Committed: 99_999, Linked: true},
		Prefix: "ckpt-bench-100k-", Reuse: true,
	}
	vsLs1M = &scenario.BenchCheckpoint{
		Linear: scenario.Linear{Name: "bench-1m", Batches: 1_000_000, Committed: 999_999, Linked: true},
		Prefix: "ckpt-bench-1m-", Reuse: true,
	}
)

// BenchmarkDoctorVsLs is a default `ckpt doctor` (Load and Run) against the bare `ls -f` of
// root, offsets/ and commits/ (scenario.ReadDirNames), alternating in one loop; x-floor is the
// ratio (goal: at most 2).
func BenchmarkDoctorVsLs(b *testing.B) {
	for _, c := range []struct {
		name string
		ck   *scenario.BenchCheckpoint
	}{{"100k", vsLs100k}, {"1M", vsLs1M}} {
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
					rep, err := doctor.Run(ctx, cp, doctor.Options{})
					if err != nil {
						return err
					}
					if rep.Restart.Failed() {
						b.Fatal(rep.Restart.Verdict())
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

func TestMain(m *testing.M) {
	code := m.Run()
	big.Remove()
	vsLs100k.Remove()
	vsLs1M.Remove()
	os.Exit(code)
}

// BenchmarkList100k is the floor: the three listings checkpoint.Load makes (root, offsets/,
// commits/) of a 100k-batch local checkpoint.
func BenchmarkList100k(b *testing.B) {
	dir := bigCheckpoint(b)
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, d := range []string{"", "offsets", "commits"} {
			if _, err := st.List(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkDoctor100k is a whole default doctor run on the same checkpoint: it must stay within
// 2x of BenchmarkList100k, i.e. read no file per batch.
func BenchmarkDoctor100k(b *testing.B) {
	dir := bigCheckpoint(b)
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		cp, err := checkpoint.Load(ctx, st)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := doctor.Run(ctx, cp, doctor.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Restart.Failed() {
			b.Fatal(rep.Restart.Verdict())
		}
	}
}

// TestReadsOnlyWhatItNeeds pins the I/O of a default run: the three listings of Load and a
// constant number of reads, whatever the number of batches; --deep reads every file.
func TestReadsOnlyWhatItNeeds(t *testing.T) {
	ctx := context.Background()
	s, ok := scenario.Get("doctor-retention-unpurged") // 1,200 batches
	if !ok {
		t.Fatal("scenario missing")
	}
	mem := storage.NewMem()
	if err := s.WriteTo(ctx, mem); err != nil {
		t.Fatal(err)
	}
	for _, deep := range []bool{false, true} {
		f := storage.NewFaulty(mem)
		cp, err := checkpoint.Load(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := doctor.Run(ctx, cp, doctor.Options{Deep: deep}); err != nil {
			t.Fatal(err)
		}
		reads := f.Count(storage.OpRead) + f.Count(storage.OpOpen)
		lists := f.Count(storage.OpList) + f.Count(storage.OpWalk)
		if !deep && (reads > 5 || lists > 3 || f.Count(storage.OpStat) > 5) {
			t.Errorf("default run: %d reads, %d listings and %d stats, want at most 5, 3 and 5 (counts %v)", reads, lists, f.Count(storage.OpStat), f.Counts())
		}
		if deep && reads < 2400 {
			t.Errorf("--deep: %d reads, want every offsets and commits file", reads)
		}
	}
}
