package engine

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// benchAggregator is the aggregator of a query grouping by string(key) with aggs, its state
// empty, written in parts partitions with lz4 by provider to st.
func benchAggregator(b *testing.B, aggs string, parts int, provider string, st storage.Store) *aggregator {
	q := &query.Query{Checkpoint: "mem://x", Sink: "noop", OutputMode: "update", GroupBy: []string{"string(key) AS k"}, Agg: []string{aggs}}
	r, err := q.Validate()
	if err != nil {
		b.Fatal(err)
	}
	a, err := newAggregator(r, "")
	if err != nil {
		b.Fatal(err)
	}
	a.partitions, a.codec, a.version = parts, "lz4", 0
	a.provider, err = newProvider(provider, storeConf{st: st, dir: "state/0", partitions: parts, codec: "lz4", line: "3.5",
		minDeltas: query.DefaultMinDeltasForSnapshot, retain: 100})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkAggregationBatch folds a batch of 100k rows over 10k keys into the state (count,
// sum, min, max, avg) and commits it (200 partitions' deltas, lz4, to memory): the engine's
// cost per batch of a stateful query without the Kafka read.
func BenchmarkAggregationBatch(b *testing.B) { benchAggregation(b, query.HDFSStateProvider) }

// benchAggs are the benchmarks' aggregates: count, sum, min, max (a string) and avg.
const benchAggs = "count(*) AS n, sum(int(string(value))) AS s, min(int(string(value))) AS lo, max(string(value)) AS hi, avg(int(string(value))) AS mean"

func benchAggregation(b *testing.B, provider string) {
	st := storage.NewMem()
	a := benchAggregator(b, benchAggs, 200, provider, st)
	rows := make([]transform.Row, 100_000)
	for i := range rows {
		rows[i] = transform.Row{Key: []byte("key-" + strconv.Itoa(i%10_000)), Value: []byte(strconv.Itoa(i))}
	}
	e := &Engine{opts: Options{Store: st}}
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

// BenchmarkAggCommitVsFloor times the state commit of a batch of an aggregation (every
// partition's delta written to a local checkpoint as `ckpt run` writes it: encoded, lz4, each
// file made durable and published without overwrite, its directory fsynced) against the floor:
// the same bytes written to the same number of files in as many directories with the minimal
// durable atomic write (temporary file, write, fsync, rename, directory fsync), one file after
// the other as the commit does. The two alternate (commit, floor, floor, commit, ...) so that
// they see the same load; x-floor is the ratio of their mean times (goal <= 1.2), median-ratio
// the median of the pairs' ratios, x-floor-cpu the ratio of the process's CPU time (user and
// system) in each; store-x-floor and store-x-floor-cpu are the same ratios for the commit's
// files written again through storage.Local.WriteFile alone, after the floor. The apply of a batch and the read of the commit's files for the floor are
// outside both times. CKPT_BENCH_COMMIT_PARTITIONS (200) and CKPT_BENCH_COMMIT_KEYS (10,000 groups updated per batch) change the shape; CKPT_BENCH_DIR
// the directory (default: a temporary one; fsync costs depend on the file system).
func BenchmarkAggCommitVsFloor(b *testing.B) {
	parts, keys := benchEnvInt(b, "CKPT_BENCH_COMMIT_PARTITIONS", 200), benchEnvInt(b, "CKPT_BENCH_COMMIT_KEYS", 10_000)
	rows := make([]transform.Row, keys)
	for i := range rows {
		rows[i] = transform.Row{Key: []byte("key-" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
	}
	root := b.TempDir()
	if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
		var err error
		if root, err = os.MkdirTemp(d, "commit-"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(root)
	}
	st, err := storage.NewLocal(filepath.Join(root, "ckpt"))
	if err != nil {
		b.Fatal(err)
	}
	a := benchAggregator(b, "count(*) AS n, sum(int(string(value))) AS s", parts, query.HDFSStateProvider, st)
	e := &Engine{opts: Options{Store: st}}
	ctx := context.Background()
	plain, err := storage.NewLocal(filepath.Join(root, "store"))
	if err != nil {
		b.Fatal(err)
	}
	var storeSum, storeCPU time.Duration
	floorDir := func(p int) string { return filepath.Join(root, "floor", strconv.Itoa(p)) }
	for p := 0; p < parts; p++ {
		if err := os.MkdirAll(floorDir(p), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// Batch 0 (untimed) writes the schema and makes the partitions' directories.
	commit := func(id int64) (time.Duration, time.Duration) {
		if err := a.apply(id, rows); err != nil {
			b.Fatal(err)
		}
		runtime.GC() // the apply's garbage is not the commit's
		t0, c0 := time.Now(), processCPU()
		if err := a.commit(ctx, e, id); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0), processCPU() - c0
	}
	// The floor writes what commit id wrote, under new names.
	floors := 0
	floor := func(id int64) (time.Duration, time.Duration) {
		floors++
		name := strconv.Itoa(floors) + ".delta"
		files := make([][]byte, parts)
		for p := range files {
			var err error
			if files[p], err = os.ReadFile(filepath.Join(root, "ckpt", "state", "0", strconv.Itoa(p), strconv.FormatInt(id+1, 10)+".delta")); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		t0, c0 := time.Now(), processCPU()
		for p, data := range files {
			durableWrite(b, floorDir(p), name, data)
		}
		f, fc := time.Since(t0), processCPU()-c0
		// The same files through storage.Local.WriteFile: the store's share of the commit.
		t0, c0 = time.Now(), processCPU()
		for p, data := range files {
			if err := plain.WriteFile(ctx, path.Join(strconv.Itoa(p), name), data); err != nil {
				b.Fatal(err)
			}
		}
		storeSum, storeCPU = storeSum+time.Since(t0), storeCPU+processCPU()-c0
		return f, fc
	}
	commit(0)
	floor(0)
	storeSum, storeCPU = 0, 0
	var commitSum, floorSum, commitCPU, floorCPU time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := int64(i + 1)
		var c, cc, f, fc time.Duration
		if i%2 == 0 {
			c, cc = commit(id)
			f, fc = floor(id)
		} else {
			// Every other pair the floor goes first, with the previous commit's files.
			f, fc = floor(id - 1)
			c, cc = commit(id)
		}
		commitSum, floorSum, commitCPU, floorCPU = commitSum+c, floorSum+f, commitCPU+cc, floorCPU+fc
		ratios = append(ratios, c.Seconds()/f.Seconds())
	}
	b.StopTimer()
	var bytes int64
	for p := 0; p < parts; p++ {
		fi, err := os.Stat(filepath.Join(floorDir(p), "1.delta"))
		if err != nil {
			b.Fatal(err)
		}
		bytes += fi.Size()
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(commitSum.Microseconds())/float64(b.N)/1000, "commit-ms")
	b.ReportMetric(float64(floorSum.Microseconds())/float64(b.N)/1000, "floor-ms")
	b.ReportMetric(commitSum.Seconds()/floorSum.Seconds(), "x-floor")
	b.ReportMetric(float64(commitCPU.Microseconds())/float64(b.N)/1000, "commit-cpu-ms")
	b.ReportMetric(float64(floorCPU.Microseconds())/float64(b.N)/1000, "floor-cpu-ms")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(commitCPU.Seconds()/floorCPU.Seconds(), "x-floor-cpu")
	b.ReportMetric(storeSum.Seconds()/floorSum.Seconds(), "store-x-floor")
	b.ReportMetric(storeCPU.Seconds()/floorCPU.Seconds(), "store-x-floor-cpu")
	b.ReportMetric(float64(bytes)/float64(parts), "bytes/file")
}

// durableWrite is the minimal durable atomic write of a new file: a temporary file written and
// fsynced, renamed to name, and the directory fsynced.
func durableWrite(b *testing.B, dir, name string, data []byte) {
	tmp := filepath.Join(dir, "."+name+".tmp")
	createSyncedB(b, tmp, data)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		b.Fatal(err)
	}
	syncDirB(b, dir)
}

func benchEnvInt(b *testing.B, name string, def int) int {
	n, err := scenario.EnvInt(name, def)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkAggStateMemory is the memory the in-memory state (the HDFS-backed provider's
// shape: every group held) takes: CKPT_BENCH_GROUPS groups (1,000,000) of string(key) (keys
// "key-<i>", 5 to 11 bytes) folded in by batches of 100,000 rows, then the heap in use after a
// collection, and the process's resident set, both against before, per group. The aggregates:
// CKPT_BENCH_AGGS (default count(*) AS n; "all" for count, sum, min, max and avg).
func BenchmarkAggStateMemory(b *testing.B) {
	groups := benchEnvInt(b, "CKPT_BENCH_GROUPS", 1_000_000)
	aggs := "count(*) AS n"
	if os.Getenv("CKPT_BENCH_AGGS") == "all" {
		aggs = benchAggs
	}
	for i := 0; i < b.N; i++ {
		a := benchAggregator(b, aggs, 200, query.HDFSStateProvider, storage.NewMem())
		heap0, rss0 := heapInUse(), residentSet()
		rows := make([]transform.Row, 100_000)
		for start := 0; start < groups; start += len(rows) {
			n := min(len(rows), groups-start)
			for j := range rows[:n] {
				rows[j] = transform.Row{Key: []byte("key-" + strconv.Itoa(start+j)), Value: []byte(strconv.Itoa(j))}
			}
			if err := a.apply(0, rows[:n]); err != nil {
				b.Fatal(err)
			}
		}
		rows = nil
		heap, rss := heapInUse()-heap0, residentSet()-rss0
		if len(a.entries) != groups {
			b.Fatalf("%d groups, want %d", len(a.entries), groups)
		}
		b.ReportMetric(float64(heap)/float64(groups), "heap-B/group")
		b.ReportMetric(float64(rss)/float64(groups), "rss-B/group")
		b.ReportMetric(float64(heap)/(1<<20)*1e6/float64(groups), "heap-MiB/1M-groups")
		b.ReportMetric(float64(rss)/(1<<20)*1e6/float64(groups), "rss-MiB/1M-groups")
		runtime.KeepAlive(a)
	}
}

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// residentSet is the process's resident set (VmRSS), 0 where /proc is not there.
func residentSet() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
