package inspect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The benchmarks generate their inputs once per process under one temporary directory, removed
// by TestMain. Run them with:
//
//	go test ./internal/inspect -run '^$' -bench . -benchtime 3x
//
// Generating 200,000 files leaves the file system busy writing them back for a while, which
// distorts the first measurements; CKPT_BENCH_DIR=<dir> generates the inputs there once and keeps
// them for later runs.
const (
	benchBatches     = 100_000
	benchSinkEntries = 1_000_000
)

var (
	benchRoot     string
	benchRootOnce sync.Once
	benchRootErr  error

	ckptOnce sync.Once
	ckptDir  string
	ckptErr  error

	sinkOnce sync.Once
	sinkDir  string
	sinkErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

func benchTemp(b *testing.B) string {
	if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
		return d
	}
	benchRootOnce.Do(func() { benchRoot, benchRootErr = os.MkdirTemp("", "ckpt-inspect-bench-") })
	if benchRootErr != nil {
		b.Fatal(benchRootErr)
	}
	return benchRoot
}

// benchCheckpoint is a 100k-batch Kafka checkpoint (4 partitions) on local disk: offsets and
// commits for every batch, as Spark 4 writes them.
func benchCheckpoint(b *testing.B) string {
	root := benchTemp(b)
	ckptOnce.Do(func() {
		ckptDir = filepath.Join(root, "ckpt")
		if _, err := os.Stat(filepath.Join(ckptDir, "commits", fmt.Sprint(benchBatches-1))); err == nil {
			return // kept from an earlier run (CKPT_BENCH_DIR)
		}
		start := time.Now()
		ckptErr = writeCheckpoint(ckptDir, benchBatches)
		b.Logf("generated %d-batch checkpoint in %s", benchBatches, time.Since(start).Round(time.Millisecond))
	})
	if ckptErr != nil {
		b.Fatal(ckptErr)
	}
	return ckptDir
}

func writeCheckpoint(dir string, n int) error {
	for _, d := range []string{"offsets", "commits", "sources/0", "state/0/0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata"), []byte(`{"id":"`+queryID+`"}`), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sources/0/0"), []byte(kafkaInit(`{"orders":{"0":0,"1":0,"2":0,"3":0}}`)), 0o644); err != nil {
		return err
	}
	const conf = `"conf":{"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider","spark.sql.streaming.stateStore.rocksdb.formatVersion":"5","spark.sql.streaming.statefulOperator.useStrictDistribution":"true","spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion":"2","spark.sql.streaming.multipleWatermarkPolicy":"min","spark.sql.streaming.aggregation.stateFormatVersion":"2","spark.sql.shuffle.partitions":"200","spark.sql.streaming.join.stateFormatVersion":"2","spark.sql.streaming.stateStore.compression.codec":"lz4"}`
	// Two writers halve the generation time on a small machine.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				o := fmt.Sprintf("v1\n{\"batchWatermarkMs\":%d,\"batchTimestampMs\":%d,%s}\n{\"orders\":{\"0\":%d,\"1\":%d,\"2\":%d,\"3\":%d}}",
					i*1000, 1719290664278+int64(i)*1000, conf, i*100, i*101, i*102, i*103)
				if err := os.WriteFile(filepath.Join(dir, "offsets", fmt.Sprint(i)), []byte(o), 0o644); err != nil {
					errs <- err
					return
				}
				c := fmt.Sprintf("v1\n{\"nextBatchWatermarkMs\":%d}", i*1000)
				if err := os.WriteFile(filepath.Join(dir, "commits", fmt.Sprint(i)), []byte(c), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// readAll is the baseline: list offsets/ and commits/ and read every file, sequentially, with
// the standard library: what any tool that looks at every file must pay.
func readAll(b testing.TB, dir string) int64 {
	var n int64
	for _, d := range []string{"offsets", "commits"} {
		es, err := os.ReadDir(filepath.Join(dir, d))
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range es {
			data, err := os.ReadFile(filepath.Join(dir, d, e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			n += int64(len(data))
		}
	}
	return n
}

func localStore(b *testing.B, dir string) storage.Store {
	s, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// ratio accumulates wall and CPU time of the measured code and of the baseline.
type ratio struct{ wall, cpu, baseWall, baseCPU time.Duration }

func (r *ratio) measure(base bool, f func()) {
	w, c := time.Now(), cpuTime()
	f()
	dw, dc := time.Since(w), cpuTime()-c
	if base {
		r.baseWall += dw
		r.baseCPU += dc
	} else {
		r.wall += dw
		r.cpu += dc
	}
}

// report adds x-readall (wall time / baseline wall time) and cpu-x-readall (the same in CPU
// time, the steadier of the two on a shared machine).
func (r *ratio) report(b *testing.B) {
	b.ReportMetric(float64(r.wall)/float64(r.baseWall), "x-readall")
	if r.baseCPU > 0 {
		b.ReportMetric(float64(r.cpu)/float64(r.baseCPU), "cpu-x-readall")
	}
}

// BenchmarkReadAll100k is the baseline on its own.
func BenchmarkReadAll100k(b *testing.B) {
	dir := benchCheckpoint(b)
	b.ResetTimer()
	for b.Loop() {
		readAll(b, dir)
	}
}

// BenchmarkSummary100k is `ckpt inspect` (summary, JSON encoded) on 100k batches. It reports
// the ratio to the read-everything baseline, measured in the same run.
func BenchmarkSummary100k(b *testing.B) {
	dir := benchCheckpoint(b)
	s := localStore(b, dir)
	readAll(b, dir) // warm the page cache for both
	var r ratio
	b.ResetTimer()
	for b.Loop() {
		r.measure(false, func() {
			sum, err := Summarize(context.Background(), s)
			if err != nil {
				b.Fatal(err)
			}
			if err := json.NewEncoder(io.Discard).Encode(sum); err != nil {
				b.Fatal(err)
			}
			if sum.Offsets.Count != benchBatches {
				b.Fatalf("offsets = %d", sum.Offsets.Count)
			}
		})
		b.StopTimer()
		r.measure(true, func() { readAll(b, dir) })
		b.StartTimer()
	}
	r.report(b)
}

// BenchmarkBatches100kJSON is `ckpt inspect --batches -o json` on 100k batches: it reads and
// parses every offsets file (concurrently) and encodes every row.
func BenchmarkBatches100kJSON(b *testing.B) {
	dir := benchCheckpoint(b)
	s := localStore(b, dir)
	readAll(b, dir)
	var r ratio
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r.measure(false, func() {
			l, err := Batches(context.Background(), s, BatchesOptions{})
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(io.Discard)
			if err := json.NewEncoder(w).Encode(l); err != nil {
				b.Fatal(err)
			}
			if len(l.Batches) != benchBatches || l.Batches[benchBatches-1].Records == nil {
				b.Fatalf("rows = %d", len(l.Batches))
			}
		})
		b.StopTimer()
		r.measure(true, func() { readAll(b, dir) })
		b.StartTimer()
	}
	r.report(b)
}

// benchSinkLog is a _spark_metadata directory whose 999999.compact holds 1,000,000 entries with
// realistic part-file paths, followed by one more batch.
func benchSinkLog(b *testing.B) string {
	root := benchTemp(b)
	sinkOnce.Do(func() {
		sinkDir = filepath.Join(root, "out", "_spark_metadata")
		if _, err := os.Stat(filepath.Join(sinkDir, "1000000")); err == nil {
			return // kept from an earlier run (CKPT_BENCH_DIR)
		}
		if sinkErr = os.MkdirAll(sinkDir, 0o755); sinkErr != nil {
			return
		}
		start := time.Now()
		f, err := os.Create(filepath.Join(sinkDir, "999999.compact"))
		if err != nil {
			sinkErr = err
			return
		}
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString("v1")
		for i := range benchSinkEntries {
			fmt.Fprintf(w, "\n{\"path\":\"file:///data/out/orders/part-%05d-0e5fa2b4-4e0c-4f0a-8a3c-%012d.c000.snappy.parquet\",\"size\":%d,\"isDir\":false,\"modificationTime\":1719290664278,\"blockReplication\":1,\"blockSize\":33554432,\"action\":\"add\"}", i%200, i, 1000+i%5000)
		}
		if err := w.Flush(); err != nil {
			sinkErr = err
			return
		}
		if sinkErr = f.Close(); sinkErr != nil {
			return
		}
		sinkErr = os.WriteFile(filepath.Join(sinkDir, "1000000"), []byte("v1\n{\"path\":\"file:///data/out/orders/part-x.parquet\",\"size\":7,\"isDir\":false,\"modificationTime\":1,\"blockReplication\":1,\"blockSize\":1,\"action\":\"add\"}"), 0o644)
		fi, _ := os.Stat(filepath.Join(sinkDir, "999999.compact"))
		b.Logf("generated %d-entry compact file (%d MB) in %s", benchSinkEntries, fi.Size()>>20, time.Since(start).Round(time.Millisecond))
	})
	if sinkErr != nil {
		b.Fatal(sinkErr)
	}
	return sinkDir
}

// BenchmarkSinkLogSummarize1M streams a 1,000,000-entry compact file and reports the peak heap
// in use (sampled every millisecond) next to the bytes allocated. The goal is peak-heap-MB <= 64.
func BenchmarkSinkLogSummarize1M(b *testing.B) {
	dir := benchSinkLog(b)
	s := localStore(b, dir)
	b.ReportAllocs()
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		sum, err := sinklog.Summarize(context.Background(), s, "")
		if err != nil {
			b.Fatal(err)
		}
		if sum.Files != benchSinkEntries+1 || len(sum.Errors) != 0 {
			b.Fatalf("files = %d, errors %v", sum.Files, sum.Errors)
		}
	}
	b.StopTimer()
	close(done)
	wg.Wait()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(benchSinkEntries)/b.Elapsed().Seconds()*float64(b.N), "entries/s")
}

// BenchmarkBatches100kProgress is `ckpt inspect --batches` on a terminal: the same listing and
// reads with a progress meter in the context (drawing to io.Discard at its default throttle).
// x-no-progress is its wall time over the same work without a meter, measured in the same run.
func BenchmarkBatches100kProgress(b *testing.B) {
	dir := benchCheckpoint(b)
	s := localStore(b, dir)
	readAll(b, dir)
	run := func(ctx context.Context) {
		l, err := Batches(ctx, s, BatchesOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Batches) != benchBatches {
			b.Fatalf("rows = %d", len(l.Batches))
		}
	}
	var with, without time.Duration
	b.ResetTimer()
	for b.Loop() {
		m := progress.New(io.Discard, progress.Options{Delay: -1})
		t := time.Now()
		run(progress.With(context.Background(), m))
		with += time.Since(t)
		m.End()
		b.StopTimer()
		t = time.Now()
		run(context.Background())
		without += time.Since(t)
		b.StartTimer()
	}
	b.ReportMetric(float64(with)/float64(without), "x-no-progress")
}
