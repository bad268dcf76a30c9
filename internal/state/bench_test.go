package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The 1 GB state partition of the read benchmarks: the aggregation checkpoint real Spark 4.0
// wrote (testdata/spark-state/4.0.2/agg-hdfs; its schema, offsets and commits), with partition
// 0 of operator 0 replaced by a 1 GiB (on disk, lz4) chain Spark's HDFS-backed provider would
// load for version 5: 3.snapshot holding the bulk, then 4.delta and 5.delta (updates, deletes
// and new keys). Values are the real rows' UnsafeRows with their counters varied, so that
// lz4 compresses them about as much as real state. CKPT_BENCH_DIR keeps it across runs.
const (
	benchStateBytes   = 1 << 30
	benchDeltaUpdates = 20_000
	benchDeltaDeletes = 5_000
	benchDeltaNew     = 5_000
)

var benchState struct {
	once    sync.Once
	dir     string
	rows    int64 // rows of version 5
	tmp     bool
	err     error
	binOnce sync.Once
	bin     string
	binErr  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchState.tmp {
		os.RemoveAll(benchState.dir)
	}
	if benchState.bin != "" {
		os.RemoveAll(filepath.Dir(benchState.bin))
	}
	os.Exit(code)
}

func benchStateDir(b *testing.B) (string, int64) {
	b.Helper()
	benchState.once.Do(func() {
		dir := ""
		if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
			dir = filepath.Join(d, "state-1g")
			if data, err := os.ReadFile(filepath.Join(dir, "rows")); err == nil {
				_, benchState.err = fmt.Sscan(string(data), &benchState.rows)
				benchState.dir = dir
				return
			}
			os.RemoveAll(dir)
		} else {
			d, err := os.MkdirTemp("", "ckpt-bench-state-")
			if err != nil {
				benchState.err = err
				return
			}
			dir, benchState.tmp = d, true
		}
		benchState.dir = dir
		benchState.rows, benchState.err = writeBenchState(filepath.Join(dir, "checkpoint"), benchStateBytes)
		if benchState.err == nil {
			benchState.err = os.WriteFile(filepath.Join(dir, "rows"), fmt.Appendf(nil, "%d\n", benchState.rows), 0o644)
		}
	})
	if benchState.err != nil {
		b.Fatal(benchState.err)
	}
	return benchState.dir, benchState.rows
}

// benchKey is the UnsafeRow of the aggregation's key (k string, b int) for row i: a user id
// that is unique per row (a bijection of i below 10^11) but not sequential, as hashed ids are.
func benchKey(dst []byte, i int64) []byte {
	k := fmt.Appendf(nil, "user-%011d", (i*2654435761)%100_000_000_000) // 16 bytes: no padding
	dst = append(dst[:0], make([]byte, 24+len(k))...)
	binary.LittleEndian.PutUint64(dst[8:], uint64(24)<<32|uint64(len(k)))
	binary.LittleEndian.PutUint64(dst[16:], uint64(i%2))
	copy(dst[24:], k)
	return dst
}

// benchValue varies the fixed-width fields of a real value row: count (slot 0), sum(x)
// (slot 1), sum(d) (slot 2), count(d) (slot 3), min(ts) (slot 5), max(day) (slot 6).
func benchValue(dst, tmpl []byte, i, seed int64) []byte {
	dst = append(dst[:0], tmpl...)
	x := uint64(i)*0x9E3779B97F4A7C15 + uint64(seed)
	y := x*0xBF58476D1CE4E5B9 ^ x>>31
	n := 1 + x%1000
	binary.LittleEndian.PutUint64(dst[8:], n)
	binary.LittleEndian.PutUint64(dst[16:], (x>>20)%10_000_000_000)
	binary.LittleEndian.PutUint64(dst[24:], math.Float64bits(float64(y>>11)/1024))
	binary.LittleEndian.PutUint64(dst[32:], n)
	binary.LittleEndian.PutUint64(dst[48:], 1_600_000_000_000_000+y%200_000_000_000_000)
	binary.LittleEndian.PutUint64(dst[56:], 18_000+y%3000)
	return dst
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeStateFile writes one lz4 state file at path, filled by fill; it returns its size.
func writeStateFile(path string, fill func(*statefmt.RecordWriter) error) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &countingWriter{w: bw}
	z := statefmt.NewLZ4Writer(cw, 0)
	rw := statefmt.NewRecordWriter(z)
	if err := fill(rw); err != nil {
		return 0, err
	}
	if err := rw.Close(); err != nil {
		return 0, err
	}
	if err := z.Close(); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return cw.n, f.Close()
}

// benchFixture copies the aggregation checkpoint Spark 4.0.2 wrote into dir, all but the
// files of partition 0/0, and returns a real value row of it as a template.
func benchFixture(dir string) ([]byte, error) {
	src := "../../testdata/spark-state/4.0.2/agg-hdfs/checkpoint"
	if err := copyBut00(src, dir); err != nil {
		return nil, err
	}
	snap := filepath.Join(src, "state/0/0/3.snapshot")
	data, err := os.ReadFile(snap)
	if err != nil {
		return nil, err
	}
	dr, err := statefmt.Decompress(snap, statefmt.CodecLZ4, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	rec, err := statefmt.NewRecordReader(snap, statefmt.Snapshot, dr).Next()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(rec.Value[:len(rec.Value)/8*8]), nil
}

func writeBenchState(dir string, size int64) (int64, error) {
	tmpl, err := benchFixture(dir)
	if err != nil {
		return 0, err
	}

	part := filepath.Join(dir, "state/0/0")
	var key, val []byte
	var n int64
	_, err = writeStateFile(filepath.Join(part, "3.snapshot"), func(rw *statefmt.RecordWriter) error {
		// Write until the compressed file reaches its share of 1 GiB: check every 4096 rows
		// through the file's size after the buffered writer.
		for ; ; n++ {
			key, val = benchKey(key, n), benchValue(val, tmpl, n, 3)
			if err := rw.Put(key, val); err != nil {
				return err
			}
			if n%4096 == 0 {
				if fi, err := os.Stat(filepath.Join(part, "3.snapshot")); err == nil && fi.Size() >= size-min(size/64, 8<<20) {
					n++
					return nil
				}
			}
		}
	})
	if err != nil {
		return 0, err
	}
	for v, seed := range []int64{4, 5} {
		_, err := writeStateFile(filepath.Join(part, fmt.Sprintf("%d.delta", seed)), func(rw *statefmt.RecordWriter) error {
			base := int64(v) * 1_000_003
			for i := int64(0); i < benchDeltaUpdates; i++ {
				k := (base + i*7919) % n
				if err := rw.Put(benchKey(key, k), benchValue(val, tmpl, k, seed)); err != nil {
					return err
				}
			}
			for i := int64(0); i < benchDeltaDeletes; i++ {
				if err := rw.Delete(benchKey(key, (base+i*104729+1)%n)); err != nil {
					return err
				}
			}
			for i := int64(0); i < benchDeltaNew; i++ {
				k := n + int64(v)*benchDeltaNew + i
				if err := rw.Put(benchKey(key, k), benchValue(val, tmpl, k, seed)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	// The rows of version 5: every snapshot row, less the deletes that hit snapshot keys
	// (updates only replace), plus the new keys; counted by reading it once.
	return countRows(dir)
}

func countRows(dir string) (int64, error) {
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		return 0, err
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		return 0, err
	}
	l, err := Scan(ctx, st)
	if err != nil {
		return 0, err
	}
	r, err := NewReader(ctx, cp, l, ReadOptions{Operator: 0, Partition: 0})
	if err != nil {
		return 0, err
	}
	var n int64
	err = r.Each(context.Background(), func(*Row) error { n++; return nil })
	return n, err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRead32MB is BenchmarkRead1GB on a 32 MiB partition (made in a temporary directory
// each run): quick enough to profile the decoding.
func BenchmarkRead32MB(b *testing.B) {
	root := b.TempDir()
	want, err := writeBenchState(filepath.Join(root, "checkpoint"), 32<<20)
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, root, want)
}

// BenchmarkRead1GB reads version 5 of the 1 GiB partition in process and writes every row
// as JSON (Reader.WriteJSON, what `ckpt state read -o json` runs) to a line counter. rows/s is wall time;
// rows/cpu-s divides by the CPU time the process spent (all goroutines), which is what the
// per-core goal is about and what a loaded machine does not distort.
func BenchmarkRead1GB(b *testing.B) {
	dir, want := benchStateDir(b)
	benchRead(b, dir, want)
}

func benchRead(b *testing.B, dir string, want int64) {
	benchReadOpts(b, dir, want, ReadOptions{Operator: 0, Partition: 0})
}

func benchReadOpts(b *testing.B, dir string, want int64, opts ReadOptions) {
	cp, l := openFixture(b, dir)
	runtime.GC()
	var peak atomic.Uint64
	stop := sampleHeap(&peak)
	var rows int64
	var out int64
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReader(context.Background(), cp, l, opts)
		if err != nil {
			b.Fatal(err)
		}
		lc := &lineCounter{}
		if err := r.WriteJSON(context.Background(), lc); err != nil {
			b.Fatal(err)
		}
		n := lc.n
		out += lc.bytes
		if n != want {
			b.Fatalf("read %d rows, want %d", n, want)
		}
		rows += n
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	stop()
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(out)/float64(b.N)/(1<<20), "json-MB")
}

// BenchmarkReadBinary1GB runs the real binary, `ckpt state read CP --operator 0 --partition 0
// -o json`, on the 1 GiB partition and reports its peak RSS (the child's rusage maxrss) and
// its rows per CPU second (the child's user+system time). The goals: RSS under 64 MB, at
// least 1M rows per CPU second.
func BenchmarkReadBinary1GB(b *testing.B) {
	dir, want := benchStateDir(b)
	benchBinary(b, dir, want)
}

// BenchmarkReadBinarySST runs the binary as BenchmarkReadBinary1GB does on version 5 of a
// RocksDB partition held only in SST files (CKPT_BENCH_SST_ROWS rows, default 3,000,000):
// the SST files are read a block at a time, so RSS does not grow with them.
// CKPT_BENCH_SST_LZ4_INDEX=1 compresses the index blocks as Spark's RocksDB does (they are
// then decoded as a stream into their block handles; uncompressed ones are read at offsets),
// and CKPT_BENCH_SST_FILES=k writes the
// keys in k files of consecutive key ranges instead of one (RocksDB's compactions write
// files of about 64 MB).
func BenchmarkReadBinarySST(b *testing.B) {
	n := int64(3_000_000)
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_SST_ROWS"), 10, 64); err == nil && v > 0 {
		n = v
	}
	lz4Index := os.Getenv("CKPT_BENCH_SST_LZ4_INDEX") == "1"
	// Written by a child process: the SST writer holds the table in memory, and a child
	// started by this process would report this process's peak RSS as its own (Linux keeps
	// the high-water mark of the address space the child shares until exec).
	// CKPT_BENCH_DIR keeps the files across runs (20M rows take minutes to write).
	root := b.TempDir()
	if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
		root = filepath.Join(d, fmt.Sprintf("sst-%d", n))
		if lz4Index {
			root += "-lz4-index"
		}
		if k := os.Getenv("CKPT_BENCH_SST_FILES"); k != "" {
			root += "-files" + k
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "rows"))
	if err != nil {
		if err := os.RemoveAll(root); err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteBenchSSTChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CKPT_BENCH_SST_OUT="+root, "CKPT_BENCH_SST_ROWS="+strconv.FormatInt(n, 10))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("writing the SST files: %v: %s", err, out)
		}
		data, err = os.ReadFile(filepath.Join(root, "rows"))
	}
	if err != nil {
		b.Fatal(err)
	}
	want, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	benchBinary(b, root, want)
}

// TestWriteBenchSSTChild is BenchmarkReadBinarySST's writer, run in a child process; it does
// nothing in a normal test run.
func TestWriteBenchSSTChild(t *testing.T) {
	out := os.Getenv("CKPT_BENCH_SST_OUT")
	n, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_SST_ROWS"), 10, 64)
	if out == "" || err != nil {
		t.Skip("run by BenchmarkReadBinarySST")
	}
	k, _ := strconv.Atoi(os.Getenv("CKPT_BENCH_SST_FILES"))
	rows, err := writeBenchSST(filepath.Join(out, "checkpoint"), n, os.Getenv("CKPT_BENCH_SST_LZ4_INDEX") == "1", max(k, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "rows"), []byte(strconv.FormatInt(rows, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// benchBinary runs `ckpt state read DIR/checkpoint --operator 0 --partition 0 -o json` and
// reports the child's peak RSS and rows per CPU second.
func benchBinary(b *testing.B, dir string, want int64, args ...string) {
	bin := ckptBinary(b)
	var maxRSS int64
	var cpu time.Duration
	var rows int64
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin, append([]string{"state", "read", filepath.Join(dir, "checkpoint"), "--operator", "0", "--partition", "0", "-o", "json"}, args...)...)
		lc := &lineCounter{}
		cmd.Stdout = lc
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %s", err, stderr.String())
		}
		if lc.n != want {
			b.Fatalf("binary wrote %d rows, want %d", lc.n, want)
		}
		rows += lc.n
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		maxRSS = max(maxRSS, ru.Maxrss*1024)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.StopTimer()
	b.ReportMetric(float64(maxRSS)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

type lineCounter struct{ n, bytes int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	c.bytes += int64(len(p))
	return len(p), nil
}

// ckptBinary builds the binary once per run; CKPT_BENCH_BIN names a prebuilt one instead (to
// compare two builds interleaved on the same data).
func ckptBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("CKPT_BENCH_BIN"); bin != "" {
		return bin
	}
	benchState.binOnce.Do(func() {
		d, err := os.MkdirTemp("", "ckpt-bench-bin-")
		if err != nil {
			benchState.binErr = err
			return
		}
		benchState.bin = filepath.Join(d, "ckpt")
		out, err := exec.Command("go", "build", "-o", benchState.bin, "github.com/ckpt-dev/ckpt/cmd/ckpt").CombinedOutput()
		if err != nil {
			benchState.binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if benchState.binErr != nil {
		b.Fatal(benchState.binErr)
	}
	return benchState.bin
}

// sampleHeap records the peak heap (live and unswept objects, runtime/metrics, which does
// not stop the world as ReadMemStats does) every 10 ms until the returned stop is called.
func sampleHeap(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(sample)
				if v := sample[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// writeBenchSST makes a RocksDB store of n rows for version 5: the aggregation checkpoint
// Spark 4.1.4 wrote without changelogs (testdata/spark-state/4.1.4/agg-rocksdb), with
// partition 0's 5.zip listing two SST files as Spark's RocksDB leaves them after a few
// batches: a large one with every key (lz4 blocks of 4 KiB) and a newer small one with 1%
// of the keys updated and 0.2% deleted (higher sequence numbers). lz4Index compresses the
// index blocks too; the large one is split into k files of consecutive keys. It returns the
// rows.
func writeBenchSST(dir string, n int64, lz4Index bool, k int) (int64, error) {
	src := "../../testdata/spark-state/4.1.4/agg-rocksdb/checkpoint"
	if err := copyBut00(src, dir); err != nil {
		return 0, err
	}
	// A real value row as the template: the first entry of one of Spark's SST files.
	ssts, _ := filepath.Glob(filepath.Join(src, "state/0/0/SSTs/*.sst"))
	if len(ssts) == 0 {
		return 0, fmt.Errorf("no SST files under %s", src)
	}
	data, err := os.ReadFile(ssts[0])
	if err != nil {
		return 0, err
	}
	t, err := OpenSST(ssts[0], data)
	if err != nil {
		return 0, err
	}
	it := t.Iter()
	if !it.Next() {
		return 0, fmt.Errorf("%s: no entries: %v", ssts[0], it.Err())
	}
	tmpl := bytes.Clone(it.Value[1:])

	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = append([]byte{0}, benchKey(nil, int64(i))...)
	}
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortFunc(order, func(a, b int64) int { return bytes.Compare(keys[a], keys[b]) })
	lz := statefmt.SSTLZ4
	var val []byte
	var big []*sstable.Writer
	for range k {
		big = append(big, &sstable.Writer{Compression: sstable.LZ4Compression, Compress: lz, CompressIndex: lz4Index})
	}
	small := &sstable.Writer{Compression: sstable.LZ4Compression, Compress: lz, CompressIndex: lz4Index}
	rows := n
	for j, i := range order {
		val = append(append(val[:0], 0), benchValue(nil, tmpl, i, 3)...)
		if err := big[int64(j)*int64(k)/n].Add(keys[i], uint64(i+1), sstable.KindValue, val); err != nil {
			return 0, err
		}
		switch {
		case i%500 == 7:
			err = small.Add(keys[i], uint64(n+i+1), sstable.KindDeletion, nil)
			rows--
		case i%100 == 3:
			val = append(append(val[:0], 0), benchValue(nil, tmpl, i, 5)...)
			err = small.Add(keys[i], uint64(n+i+1), sstable.KindValue, val)
		}
		if err != nil {
			return 0, err
		}
	}
	part := filepath.Join(dir, "state/0/0")
	if err := os.MkdirAll(filepath.Join(part, "SSTs"), 0o755); err != nil {
		return 0, err
	}
	var files []statefmt.RocksDBFile
	var tables []statefmt.RocksDBSST
	last := uint64(0)
	for i, w := range append(big, small) {
		m := w.Meta()
		b := w.Finish()
		name := fmt.Sprintf("%06d-bench.sst", 100+i)
		if err := os.WriteFile(filepath.Join(part, "SSTs", name), b, 0o644); err != nil {
			return 0, err
		}
		files = append(files, statefmt.RocksDBFile{LocalFileName: fmt.Sprintf("%06d.sst", 100+i), DFSSSTFileName: name, SizeBytes: int64(len(b))})
		tables = append(tables, statefmt.RocksDBSST{Number: uint64(100 + i), Size: uint64(len(b)), Meta: m})
		last = max(last, m.LargestSeq)
	}
	var zb bytes.Buffer
	if err := statefmt.WriteRocksDBZip(&zb, "4.1", files, rows, 5, statefmt.RocksDBManifest(tables, last, uint64(100+len(tables)))); err != nil {
		return 0, err
	}
	return rows, os.WriteFile(filepath.Join(part, "5.zip"), zb.Bytes(), 0o644)
}

// BenchmarkReadSST reads version 5 of a RocksDB partition held only in SST files (300,000
// rows, 2 files, lz4), merged and rendered as JSON like BenchmarkRead32MB: compare the two in
// one run.
func BenchmarkReadSST(b *testing.B) {
	root := b.TempDir()
	want, err := writeBenchSST(filepath.Join(root, "checkpoint"), 300_000, false, 1)
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, root, want)
}

// copyBut00 copies the fixture checkpoint src into dir, all but the version files of state
// partition 0/0, which a benchmark writes at its own size.
func copyBut00(src, dir string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if r := filepath.ToSlash(rel); strings.HasPrefix(r, "state/0/0/") && !strings.Contains(r, "_metadata") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

// writeBenchDelta makes version 1 of partition 0 one delta of about size bytes (lz4), as
// Spark's HDFS-backed provider leaves it before its first snapshot: the aggregation
// checkpoint Spark 4.0.2 wrote (testdata/spark-state/4.0.2/agg-hdfs), partition 0 replaced by
// 1.delta. Every block of 64 keys is put in order, with updates of earlier keys, removes of
// earlier keys and of keys never put, and puts of removed keys again, so that the live rows
// are known without holding them: of n keys, n/32 are removed and n/64 of those put again.
// It returns the rows of version 1.
func writeBenchDelta(dir string, size int64) (int64, error) {
	tmpl, err := benchFixture(dir)
	if err != nil {
		return 0, err
	}
	path := filepath.Join(dir, "state/0/0/1.delta")
	var n int64
	_, err = writeStateFile(path, func(rw *statefmt.RecordWriter) error {
		var key, val []byte
		for {
			for i := n; i < n+64; i++ {
				if err := rw.Put(benchKey(key, i), benchValue(val, tmpl, i, 1)); err != nil {
					return err
				}
				var err error
				switch i % 64 {
				case 15, 31, 47, 63:
					err = rw.Put(benchKey(key, i-8), benchValue(val, tmpl, i-8, 2)) // an update
				}
				if err == nil && i%32 == 31 {
					err = rw.Delete(benchKey(key, i-16)) // i-16 ≡ 15 (mod 32): removed once
				}
				if err == nil && i%64 == 47 {
					err = rw.Put(benchKey(key, i-32), benchValue(val, tmpl, i-32, 3)) // removed at i-16
				}
				if err == nil && i%64 == 63 {
					err = rw.Delete(benchKey(key, 10_000_000_000+i)) // never put
				}
				if err != nil {
					return err
				}
			}
			n += 64
			if n%4096 == 0 {
				if fi, err := os.Stat(path); err == nil && fi.Size() >= size-min(size/64, 8<<20) {
					return nil
				}
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return n - n/32 + n/64, nil
}

// BenchmarkReadDelta32MB reads version 1 of a partition that is one 32 MiB delta in process
// (Reader.WriteJSON to a line counter), past the default memory budget: for profiling the
// spill and the merge.
func BenchmarkReadDelta32MB(b *testing.B) {
	root := b.TempDir()
	want, err := writeBenchDelta(filepath.Join(root, "checkpoint"), 32<<20)
	if err != nil {
		b.Fatal(err)
	}
	benchReadOpts(b, root, want, ReadOptions{Operator: 0, Partition: 0, Version: 1})
}

// BenchmarkReadBinaryDelta runs the binary as BenchmarkReadBinary1GB does on version 1 of a
// partition that is one delta (no snapshot yet) of CKPT_BENCH_DELTA_BYTES bytes (default
// 32 MiB; the case is 1.08 GB): its records past the memory budget are spilled to
// sorted runs and merged. CKPT_BENCH_DIR keeps the delta across runs.
func BenchmarkReadBinaryDelta(b *testing.B) {
	size := int64(32 << 20)
	if v, err := strconv.ParseInt(os.Getenv("CKPT_BENCH_DELTA_BYTES"), 10, 64); err == nil && v > 0 {
		size = v
	}
	root := b.TempDir()
	if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
		root = filepath.Join(d, fmt.Sprintf("delta-%d", size))
	}
	var want int64
	if data, err := os.ReadFile(filepath.Join(root, "rows")); err == nil {
		if want, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
			b.Fatal(err)
		}
	} else {
		os.RemoveAll(root)
		if want, err = writeBenchDelta(filepath.Join(root, "checkpoint"), size); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "rows"), []byte(strconv.FormatInt(want, 10)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchBinary(b, root, want, "--version", "1")
}
