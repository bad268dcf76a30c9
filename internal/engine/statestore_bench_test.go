package engine

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// BenchmarkAggregationBatchRocksDB is BenchmarkAggregationBatch with the RocksDB provider
// (changelog checkpointing off): each commit writes every partition's whole state as an SST
// file and its zip.
func BenchmarkAggregationBatchRocksDB(b *testing.B) { benchAggregation(b, query.RocksDBStateProvider) }

// BenchmarkAggregationStateMemory measures what the state costs in memory: 1,000,000 groups
// (count, sum, min, max, avg over a 10-byte key) held by the aggregator (heap bytes per group
// after a GC), and the bytes a commit of all of them allocates per group with each provider
// (HDFS: one delta per partition; RocksDB: an SST and a zip per partition, built one partition
// at a time).
func BenchmarkAggregationStateMemory(b *testing.B) {
	for _, provider := range []string{query.HDFSStateProvider, query.RocksDBStateProvider} {
		b.Run(provider[len("org.apache.spark.sql.execution.streaming.state."):], func(b *testing.B) {
			const groups = 1_000_000
			rows := make([]transform.Row, groups)
			for i := range rows {
				rows[i] = transform.Row{Key: []byte("key-" + strconv.Itoa(1_000_000+i)), Value: []byte(strconv.Itoa(i))}
			}
			for b.Loop() {
				st := storage.NewMem()
				a := benchAggregator(b, benchAggs, 200, provider, st)
				var m0, m1, m2 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				if err := a.apply(0, rows); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				if err := a.commit(context.Background(), &Engine{opts: Options{Store: st}}, 0); err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&m2)
				b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/groups, "held-B/group")
				b.ReportMetric(float64(m2.TotalAlloc-m1.TotalAlloc)/groups, "commit-alloc-B/group")
			}
		})
	}
}
