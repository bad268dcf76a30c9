package transfer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// benchTree writes a checkpoint of n batches (offsets, commits, a file source log entry per
// batch) and a sink with one 4 KiB data file and one log entry per batch, compacted every 10.
func benchTree(b *testing.B, n int) (ck, out storage.Store) {
	b.Helper()
	dir := b.TempDir()
	ck, _ = storage.NewLocal(filepath.Join(dir, "ck"))
	out, _ = storage.NewLocal(filepath.Join(dir, "out"))
	w := func(s storage.Store, p string, data []byte) {
		if err := s.WriteFile(ctx, p, data); err != nil {
			b.Fatal(err)
		}
	}
	w(ck, "metadata", []byte(metadata))
	var all []logformat.SinkFileStatus
	data := []byte(strings.Repeat("x", 4096))
	for i := 0; i < n; i++ {
		w(ck, fmt.Sprintf("offsets/%d", i), []byte(fmt.Sprintf("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"logOffset\":%d}", 1700000000000+i, i)))
		w(ck, fmt.Sprintf("commits/%d", i), []byte("v1\n{\"nextBatchWatermarkMs\":0}"))
		w(ck, fmt.Sprintf("sources/0/%d", i), []byte(fmt.Sprintf("v1\n{\"path\":\"file:///old/in/f-%d.json\",\"timestamp\":1700000000000,\"batchId\":%d}", i, i)))
		name := fmt.Sprintf("part-%05d.json", i)
		w(out, name, data)
		e := logformat.SinkFileStatus{Path: "file:/old/out/" + name, Size: 4096, ModificationTime: 1, BlockReplication: 1, BlockSize: 1, Action: "add"}
		all = append(all, e)
		own, p := []logformat.SinkFileStatus{e}, fmt.Sprintf("_spark_metadata/%d", i)
		if (i+1)%10 == 0 {
			own, p = all, p+".compact"
		}
		w(out, p, (&logformat.SinkLog{Version: 1, Entries: own}).Marshal())
	}
	return ck, out
}

// BenchmarkCopy compares `ckpt cp` (with rewrites, the existence checks, sink verification and
// doctor --deep) with a bare copy of the same files through the same stores, one after the other
// in each iteration so both see the same load, both 4 files at a time. It reports the ratio of
// the sums (x-bare).
func BenchmarkCopy(b *testing.B) {
	n := 300
	if v := os.Getenv("CKPT_BENCH_CP_BATCHES"); v != "" {
		fmt.Sscan(v, &n)
	}
	ck, out := benchTree(b, n)
	var ours, bare float64
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		d1, _ := storage.NewLocal(filepath.Join(dir, "b-ck"))
		d2, _ := storage.NewLocal(filepath.Join(dir, "b-out"))
		start := nowNano()
		for _, pr := range [][2]storage.Store{{ck, d1}, {out, d2}} {
			es, err := pr[0].Walk(ctx, "")
			if err != nil {
				b.Fatal(err)
			}
			// The same parallelism as Copy's default: the local store's durable writes
			// (fsync) dominate, and they overlap.
			work := make(chan string)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for p := range work {
						data, err := pr[0].ReadFile(ctx, p)
						if err == nil {
							err = pr[1].WriteFile(ctx, p, data)
						}
						if err != nil {
							b.Error(err)
						}
					}
				}()
			}
			for _, e := range es {
				if !e.IsDir {
					work <- e.Path
				}
			}
			close(work)
			wg.Wait()
		}
		bare += float64(nowNano() - start)

		o1, _ := storage.NewLocal(filepath.Join(dir, "o-ck"))
		o2, _ := storage.NewLocal(filepath.Join(dir, "o-out"))
		start = nowNano()
		res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, o1}, {KindSink, out, o2}}, Options{
			Rewrites: []Rewrite{{"file:/old/out", "file:" + filepath.Join(dir, "o-out")}, {"file:///old/in", "file:///new/in"}},
			Exists:   exists(map[string]bool{}),
		})
		if err != nil {
			b.Fatal(err)
		}
		ours += float64(nowNano() - start)
		if res.RewrittenEntries == 0 || res.Sink == nil || !res.Sink.OK() {
			b.Fatalf("copy: %d rewritten, sink %+v", res.RewrittenEntries, res.Sink)
		}
	}
	b.ReportMetric(ours/bare, "x-bare")
	b.ReportMetric(ours/float64(b.N)/1e6, "ms/cp")
	b.ReportMetric(bare/float64(b.N)/1e6, "ms/bare")
}

func nowNano() int64 { return time.Now().UnixNano() }
