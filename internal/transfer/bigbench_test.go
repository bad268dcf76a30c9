package transfer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// peakHeap runs f while sampling the Go heap in use every few milliseconds, and returns its
// peak above what was in use before f started, in MiB. The collector runs at GOGC=5 meanwhile,
// so that the peak is what f keeps, not the garbage the default pacing lets pile up.
func peakHeap(f func()) float64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	p := peak.Load()
	if p < base {
		return 0
	}
	return float64(p-base) / (1 << 20)
}

// BenchmarkCopyLargeFile copies a sink holding one large data file (1 GiB, or
// CKPT_BENCH_CP_BYTES) with `ckpt cp`'s Copy, and, in the same iteration, the way cp did before
// streaming (ReadFile, then WriteFile), on the local store and on the in-memory one. It reports
// the peak Go heap in use above the start of each, in MiB; on mem the copy's own file (its
// size) is subtracted, as the store keeps it in memory by design.
func BenchmarkCopyLargeFile(b *testing.B) {
	size := int64(1 << 30)
	if v := os.Getenv("CKPT_BENCH_CP_BYTES"); v != "" {
		fmt.Sscan(v, &size)
	}
	for _, kind := range []string{"local", "mem"} {
		b.Run(kind, func(b *testing.B) {
			mk := func(name string) storage.Store {
				if kind == "mem" {
					return storage.NewMem()
				}
				s, err := storage.NewLocal(filepath.Join(b.TempDir(), name))
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			out := mk("out")
			if err := out.Create(ctx, "part-00000", storetest.GeneratedSource(size, size, nil)); err != nil {
				b.Fatal(err)
			}
			e := logformat.SinkFileStatus{Path: "file:/out/part-00000", Size: size, ModificationTime: 1, BlockReplication: 1, BlockSize: 1, Action: "add"}
			if err := out.WriteFile(ctx, "_spark_metadata/0", (&logformat.SinkLog{Version: 1, Entries: []logformat.SinkFileStatus{e}}).Marshal()); err != nil {
				b.Fatal(err)
			}
			own := 0.0
			if kind == "mem" {
				own = float64(size) / (1 << 20)
			}
			var streamed, whole, secs float64
			for range b.N {
				d := mk("d")
				start := time.Now()
				streamed += peakHeap(func() {
					if _, err := Copy(ctx, []Pair{{KindSink, out, d}}, Options{}); err != nil {
						b.Fatal(err)
					}
				}) - own
				secs += time.Since(start).Seconds()
				if err := storetest.HoldsGenerated(ctx, d, "part-00000", size); err != nil {
					b.Fatal(err)
				}
				d = nil
				w := mk("w")
				whole += peakHeap(func() {
					data, err := out.ReadFile(ctx, "part-00000")
					if err == nil {
						err = w.WriteFile(ctx, "part-00000", data)
					}
					if err != nil {
						b.Fatal(err)
					}
				}) - own
			}
			n := float64(b.N)
			b.ReportMetric(streamed/n, "MiB-heap-cp")
			b.ReportMetric(whole/n, "MiB-heap-whole")
			b.ReportMetric(secs/n, "s/cp")
		})
	}
}

// BenchmarkRewriteCompact rewrites the paths of a sink's compact file of 1,000,000 entries (or
// CKPT_BENCH_CP_ENTRIES) as `cp --rewrite-prefix` does (one file's copy, without the copy's
// verification), and in the same iteration the way it did before streaming (ReadFile,
// ParseSinkLog, Marshal, WriteFile), on the in-memory store. It reports the peak Go heap in use
// above the start of each, less the rewritten file the destination keeps, in MiB.
func BenchmarkRewriteCompact(b *testing.B) {
	n := 1000000
	if v := os.Getenv("CKPT_BENCH_CP_ENTRIES"); v != "" {
		fmt.Sscan(v, &n)
	}
	out := storage.NewMem()
	lg := &logformat.SinkLog{Version: 1, TrailingNewline: true}
	for i := range n {
		lg.Entries = append(lg.Entries, logformat.SinkFileStatus{Path: fmt.Sprintf("file:/old/out/part-%07d.json", i), Size: 4096, ModificationTime: 1, BlockReplication: 1, BlockSize: 1, Action: "add"})
	}
	data := lg.Marshal()
	lg = nil
	const name = "_spark_metadata/999.compact"
	if err := out.WriteFile(ctx, name, data); err != nil {
		b.Fatal(err)
	}
	data = nil
	rw := []Rewrite{{Old: "file:/old/out", New: "file:/new/out"}}
	var streamed, whole float64
	for range b.N {
		d := storage.NewMem()
		c := &copier{rewrites: rw, res: &Result{}, opts: Options{SinkLocation: "file:/new/out"}}
		var size int64
		streamed += peakHeap(func() {
			if _, err := c.copyFile(ctx, Pair{KindSink, out, d}, file{path: name, size: mustSize(b, out, name)}); err != nil {
				b.Fatal(err)
			}
			size = mustSize(b, d, name)
		}) - float64(size)/(1<<20)
		d = nil
		w := storage.NewMem()
		whole += peakHeap(func() {
			raw, err := out.ReadFile(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			lg, err := logformat.ParseSinkLog(name, raw)
			if err != nil {
				b.Fatal(err)
			}
			for i := range lg.Entries {
				lg.Entries[i].Path = "file:/new/out" + lg.Entries[i].Path[len("file:/old/out"):]
			}
			if err := w.WriteFile(ctx, name, lg.Marshal()); err != nil {
				b.Fatal(err)
			}
		}) - float64(size)/(1<<20)
	}
	b.ReportMetric(streamed/float64(b.N), "MiB-heap-streamed")
	b.ReportMetric(whole/float64(b.N), "MiB-heap-whole")
	b.ReportMetric(float64(mustSize(b, out, name))/(1<<20), "MiB-file")
}

func mustSize(b *testing.B, s storage.Store, p string) int64 {
	e, err := s.Stat(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	return e.Size
}
