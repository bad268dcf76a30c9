package doctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

const benchBatches = 100_000

var (
	bigOnce sync.Once
	bigDir  string
	bigErr  error
)

// bigCheckpoint writes a committed 100k-batch checkpoint to a temporary directory once per test
// binary. Files are written directly (no atomic rename, no fsync): only their listing matters.
func bigCheckpoint(b *testing.B) string {
	bigOnce.Do(func() {
		bigDir, bigErr = os.MkdirTemp("", "ckpt-doctor-bench-")
		if bigErr != nil {
			return
		}
		sb := scenario.NewBuilder("bench")
		for _, d := range []string{"offsets", "commits", "sources/0"} {
			if bigErr = os.MkdirAll(filepath.Join(bigDir, d), 0o755); bigErr != nil {
				return
			}
		}
		write := func(rel, data string) {
			if bigErr == nil {
				bigErr = os.WriteFile(filepath.Join(bigDir, rel), []byte(data), 0o644)
			}
		}
		write("metadata", `{"id":"`+sb.QueryID()+`"}`)
		write("sources/0/0", "\x00v1\n"+scenario.KafkaOffsets("events", 0, 0, 0))
		for id := int64(0); id < benchBatches && bigErr == nil; id++ {
			write(fmt.Sprintf("offsets/%d", id), sb.OffsetsJSON(id, scenario.Kafka("events", id, 3)))
			write(fmt.Sprintf("commits/%d", id), "v1\n{\"nextBatchWatermarkMs\":0}")
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		_ = os.RemoveAll(bigDir)
	}
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
		if !deep && (reads > 5 || lists > 3) {
			t.Errorf("default run: %d reads and %d listings, want at most 5 and 3 (counts %v)", reads, lists, f.Counts())
		}
		if deep && reads < 2400 {
			t.Errorf("--deep: %d reads, want every offsets and commits file", reads)
		}
	}
}
