package sinklog

import (
	"fmt"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// BenchmarkVerify100k: `ckpt sink verify` of a sink with 100k live files (a 100k-entry
// compaction file and 9 batch files after it, in memory) against its floor, a listing of the
// output plus Summarize (one streamed read of the log). Both run in each iteration; x-floor is
// the ratio of the sums.
func BenchmarkVerify100k(b *testing.B) {
	s := storage.NewMem()
	const n = 100_000
	entries := make([]logformat.SinkFileStatus, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("day=%d/part-%06d.parquet", i%30, i)
		entries = append(entries, logformat.SinkFileStatus{Path: s.URI() + "/" + name, Size: 10, ModificationTime: 1, BlockReplication: 1, BlockSize: 1, Action: ActionAdd})
		if err := s.WriteFile(ctx, name, make([]byte, 10)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WriteFile(ctx, Dir+"/99989.compact", (&logformat.SinkLog{Version: 1, Entries: entries[:n-9]}).Marshal()); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		if err := s.WriteFile(ctx, fmt.Sprintf("%s/%d", Dir, 99990+i), (&logformat.SinkLog{Version: 1, Entries: entries[n-9+i : n-8+i]}).Marshal()); err != nil {
			b.Fatal(err)
		}
	}
	// One earlier compaction so the interval is 10.
	if err := s.WriteFile(ctx, Dir+"/99979.compact", []byte("v1")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var ours, floor time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := s.Walk(ctx, ""); err != nil {
			b.Fatal(err)
		}
		if _, err := Summarize(ctx, s, Dir); err != nil {
			b.Fatal(err)
		}
		floor += time.Since(t0)
		t0 = time.Now()
		v, err := Verify(ctx, s, VerifyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		if !v.OK() || v.Live != n {
			b.Fatalf("live %d, problems %v", v.Live, v.Counts)
		}
	}
	b.ReportMetric(float64(ours)/float64(floor), "x-floor")
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "ms/verify")
}
