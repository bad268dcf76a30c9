package engine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// workSink takes a fixed time per batch (the batch's own work).
type workSink struct{ d time.Duration }

func (s workSink) Description() string { return "work" }
func (s workSink) Close() error        { return nil }
func (s workSink) AddBatch(context.Context, *Batch) error {
	time.Sleep(s.d)
	return nil
}

// runLatency runs batches with tickSource (one new record per trigger, so batches follow each
// other at once) and returns the median time between batches and the throughput.
func runLatency(b *testing.B, store storage.Store, work time.Duration, async bool, intervalMs string, batches int) (p50 time.Duration, perSec float64) {
	b.Helper()
	q := &query.Query{Sink: "noop", Checkpoint: "unused"}
	if async {
		q.SinkOptions = map[string]string{query.OptAsyncProgressTracking: "true", query.OptAsyncCheckpointInterval: intervalMs}
	}
	r := resolve(b, q)
	var (
		mu    sync.Mutex
		times []time.Duration
		last  time.Time
	)
	e, err := New(context.Background(), Options{Query: r, Store: store, Source: &tickSource{}, Sink: workSink{work},
		MaxBatches: batches + 1, Log: io.Discard, OnProgress: func(*Progress) {
			now := time.Now()
			mu.Lock()
			if !last.IsZero() {
				times = append(times, now.Sub(last))
			}
			last = now
			mu.Unlock()
		}})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if _, err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	el := time.Since(t0) // includes waiting for the queued writes at the end
	slices.Sort(times)
	return times[len(times)/2], float64(batches+1) / el.Seconds()
}

func slowStore(latency time.Duration) storage.Store {
	return storage.NewFaulty(storage.NewMem()).SetLatency(storage.OpWrite, latency).SetLatency(storage.OpDelete, latency)
}

// BenchmarkAsyncProgressTracking: a store with 50 ms per write (an object store), batches that
// take 20 ms of work. Median batch latency of the sync engine (waits for offsets/N and
// commits/N), of async progress tracking (default interval 1000 ms) on that store and on a
// zero-latency store (goal: ≤ 1.1×), and the throughput when every batch is persisted
// (interval 0) and writes are slower than batches: the writer's queue of 2 blocks the batches,
// so throughput is bounded by the store, as in Spark.
//
//	go test -run X -bench AsyncProgressTracking -benchtime 1x ./internal/engine
func BenchmarkAsyncProgressTracking(b *testing.B) {
	const (
		latency = 50 * time.Millisecond
		work    = 20 * time.Millisecond
		n       = 30
	)
	for i := 0; i < b.N; i++ {
		syncP50, syncRate := runLatency(b, slowStore(latency), work, false, "", n)
		asyncP50, asyncRate := runLatency(b, slowStore(latency), work, true, "1000", n)
		zeroP50, _ := runLatency(b, storage.NewMem(), work, true, "1000", n)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(syncP50), "sync-p50-ms")
		b.ReportMetric(ms(asyncP50), "async-p50-ms")
		b.ReportMetric(ms(zeroP50), "async-zero-latency-p50-ms")
		b.ReportMetric(float64(asyncP50)/float64(zeroP50), "async/zero-ratio")
		b.ReportMetric(syncRate, "sync-batches/s")
		b.ReportMetric(asyncRate, "async-batches/s")

		// Writes slower than batches: interval 0 persists every batch (2 writes = 100 ms per
		// batch of 5 ms work); the queue of 2 makes the engine wait for the store.
		_, slowRate := runLatency(b, slowStore(latency), 5*time.Millisecond, true, "0", n)
		_, slowSync := runLatency(b, slowStore(latency), 5*time.Millisecond, false, "", n)
		b.ReportMetric(slowRate, "async-interval0-batches/s")
		b.ReportMetric(slowSync, "sync-5ms-work-batches/s")
		if testing.Verbose() {
			fmt.Printf("sync p50 %v, async p50 %v, async zero-latency p50 %v; interval 0: %.1f batches/s (sync %.1f)\n", syncP50, asyncP50, zeroP50, slowRate, slowSync)
		}
	}
}
