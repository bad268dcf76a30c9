package purge

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// BenchmarkPurgeLocal is `ckpt purge --execute` and its undo on a local checkpoint of
// CKPT_BENCH_BATCHES batches (default 20,000: 40,000 files), keeping 100: the figures of
// docs/benchmarks.md. The plan is not timed; journal.Apply (lock, checks, backups, changes, verify)
// and Undo are, separately.
func BenchmarkPurgeLocal(b *testing.B) {
	n := int64(20000)
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_BATCHES"), 10, 64); err == nil && v > 100 {
		n = v
	}
	ctx := context.Background()
	src := storage.NewMem()
	sb := scenario.NewBuilder("bench").Metadata()
	sb.OffsetsRange(0, n-1, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
	sb.Commits(0, n-1)
	if err := sb.WriteTo(ctx, src); err != nil {
		b.Fatal(err)
	}
	files, err := src.Walk(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	var exec, undo time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		old := time.Now().Add(-time.Hour)
		for _, e := range files {
			data, _ := src.ReadFile(ctx, e.Path)
			p := filepath.Join(dir, filepath.FromSlash(e.Path))
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
			_ = os.Chtimes(p, old, old)
		}
		s, err := storage.NewLocal(dir)
		if err != nil {
			b.Fatal(err)
		}
		p, err := NewPlan(ctx, s, Options{Keep: 100})
		if err != nil || len(p.Actions) == 0 {
			b.Fatalf("plan: %v, %d actions", err, len(p.Actions))
		}
		b.StartTimer()
		t0 := time.Now()
		j, err := journal.Apply(ctx, s, p.JournalPlan(), journal.Options{Tool: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := journal.Undo(ctx, s, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}, journal.Options{Tool: "bench"}); err != nil {
			b.Fatal(err)
		}
		exec += t1.Sub(t0)
		undo += time.Since(t1)
	}
	b.ReportMetric(exec.Seconds()/float64(b.N), "execute-s")
	b.ReportMetric(undo.Seconds()/float64(b.N), "undo-s")
}

// BenchmarkPurgeRoundTrip is BenchmarkPurgeS3 on a store where every request takes
// CKPT_BENCH_RTT (default 5ms), as a round trip to a remote object store does, with no server
// of its own competing for the CPU: what parallel requests gain where the latency, not the
// server, is the limit.
func BenchmarkPurgeRoundTrip(b *testing.B) {
	rtt := 5 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("CKPT_BENCH_RTT")); err == nil {
		rtt = d
	}
	benchPurgeRemote(b, func() (storage.Store, storage.Store) {
		m := storage.NewMem()
		f := storage.NewFaulty(m)
		for _, op := range []storage.Op{storage.OpRead, storage.OpOpen, storage.OpWrite, storage.OpDelete, storage.OpStat, storage.OpList} {
			f.SetLatency(op, rtt)
		}
		return m, f
	})
}

// BenchmarkPurgeS3 is the same on the S3 emulator (`eval "$(bash .ci/s3.sh start)"`): a checkpoint
// of CKPT_BENCH_S3_BATCHES batches (default 1,000: 2,000 files), keeping 100, each file a round
// trip for the backup, the delete, and undo's checks and restores.
func BenchmarkPurgeS3(b *testing.B) {
	client, bucket := storetest.S3Bucket(b)
	benchPurgeRemote(b, func() (storage.Store, storage.Store) {
		s := storage.NewS3FromClient(client, bucket, storetest.RandomName("bench-"))
		return s, s
	})
}

// benchPurgeRemote times the purge and undo on newStore's second store, filled through its first.
func benchPurgeRemote(b *testing.B, newStore func() (fill, timed storage.Store)) {
	n := int64(1000)
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_S3_BATCHES"), 10, 64); err == nil && v > 100 {
		n = v
	}
	ctx := context.Background()
	src := storage.NewMem()
	sb := scenario.NewBuilder("bench").Metadata()
	sb.OffsetsRange(0, n-1, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
	sb.Commits(0, n-1)
	if err := sb.WriteTo(ctx, src); err != nil {
		b.Fatal(err)
	}
	files, err := src.Walk(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	var exec, undo time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fill, s := newStore()
		for _, e := range files {
			data, _ := src.ReadFile(ctx, e.Path)
			if err := fill.WriteFile(ctx, e.Path, data); err != nil {
				b.Fatal(err)
			}
		}
		p, err := NewPlan(ctx, s, Options{Keep: 100})
		if err != nil || len(p.Actions) == 0 {
			b.Fatalf("plan: %v, %d actions", err, len(p.Actions))
		}
		b.StartTimer()
		t0 := time.Now()
		j, err := journal.Apply(ctx, s, p.JournalPlan(), journal.Options{Tool: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := journal.Undo(ctx, s, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}, journal.Options{Tool: "bench"}); err != nil {
			b.Fatal(err)
		}
		exec += t1.Sub(t0)
		undo += time.Since(t1)
	}
	b.ReportMetric(exec.Seconds()/float64(b.N), "execute-s")
	b.ReportMetric(undo.Seconds()/float64(b.N), "undo-s")
}
