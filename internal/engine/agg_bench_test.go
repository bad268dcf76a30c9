package engine

import (
	"context"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// BenchmarkAggregationBatch folds a batch of 100k rows over 10k keys into the state (count,
// sum, min, max, avg) and commits it (200 partitions' deltas, lz4, to memory): the engine's
// cost per batch of a stateful query without the Kafka read.
func BenchmarkAggregationBatch(b *testing.B) {
	q := &query.Query{Checkpoint: "mem://x", Sink: "noop", OutputMode: "update", GroupBy: []string{"string(key) AS k"},
		Agg: []string{"count(*) AS n, sum(int(string(value))) AS s, min(int(string(value))) AS lo, max(string(value)) AS hi, avg(int(string(value))) AS mean"}}
	r, err := q.Validate()
	if err != nil {
		b.Fatal(err)
	}
	a, err := newAggregator(r, "")
	if err != nil {
		b.Fatal(err)
	}
	a.partitions, a.codec, a.version = 200, "lz4", 0
	rows := make([]transform.Row, 100_000)
	for i := range rows {
		rows[i] = transform.Row{Key: []byte("key-" + strconv.Itoa(i%10_000)), Value: []byte(strconv.Itoa(i))}
	}
	e := &Engine{opts: Options{Store: storage.NewMem()}}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		id := int64(i)
		if err := a.apply(id, rows); err != nil {
			b.Fatal(err)
		}
		if err := a.commit(context.Background(), e, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
	// CPU time, which a loaded machine disturbs less than the wall time (GC workers included).
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(len(rows)*b.N)/cpu.Seconds(), "rows/cpu-s")
	}
}
