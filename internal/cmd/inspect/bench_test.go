package inspect

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// bench1M is the million-batch tree of the recovery and doctor benchmarks (CKPT_BENCH_DIR
// shares it): offsets 0..999999, commits 0..999998, hard links of a few files.
var bench1M = &scenario.BenchCheckpoint{
	Linear: scenario.Linear{Name: "bench-1m", Batches: 1_000_000, Committed: 999_999, Linked: true},
	Prefix: "ckpt-bench-1m-", Reuse: true,
}

func TestMain(m *testing.M) {
	code := m.Run()
	bench1M.Remove()
	os.Exit(code)
}

// BenchmarkBatchesJSON1M is `ckpt inspect --batches -o json` of a million-batch checkpoint,
// streamed to io.Discard. It reports the peak heap in use (sampled every 5 ms) and the peak
// resident set of the process during the run (Linux: VmHWM, reset before the run through
// /proc/self/clear_refs). The goal is peak RSS under 64 MB.
func BenchmarkBatchesJSON1M(b *testing.B) {
	dir, err := bench1M.Dir()
	if err != nil {
		b.Fatal(err)
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		b.Fatal(err)
	}
	var out countWriter
	runtime.GC()
	resetPeakRSS()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
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
		out.n = 0
		if err := writeBatchesJSON(context.Background(), &out, st, inspect.BatchesOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(done)
	wg.Wait()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	if rss := peakRSS(); rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
	}
	b.ReportMetric(float64(out.n)/(1<<20), "json-MB")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

// resetPeakRSS resets VmHWM to the current RSS (Linux 4.0+); elsewhere a no-op.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS returns VmHWM in bytes, 0 when unknown.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
