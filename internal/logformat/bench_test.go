package logformat

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// sinkLogGen generates a _spark_metadata compact file of n entries on the
// fly, so tests and benchmarks can stream a million entries without ever
// holding the file in memory.
type sinkLogGen struct {
	n, i    int
	buf     []byte // reused for every line
	pending []byte // unread part of buf
	started bool
	size    int64 // bytes produced so far
}

func newSinkLogGen(n int) *sinkLogGen { return &sinkLogGen{n: n} }

const (
	genPathPrefix = "/warehouse/events/date=2024-06-25/part-"
	genPathSuffix = "-5b3a1f0e-0b5c-4f43-9a1b-2f7f1ad0c9e1.c000.snappy.parquet"
	genModTime    = 1719290664278
)

func genEntry(i int) SinkFileStatus {
	action := "add"
	if i%97 == 0 {
		action = "delete"
	}
	return SinkFileStatus{
		Path:             genPathPrefix + strconv.Itoa(i) + genPathSuffix,
		Size:             int64(1000 + i%5000),
		ModificationTime: genModTime + int64(i),
		BlockReplication: 1,
		BlockSize:        33554432,
		Action:           action,
	}
}

func (g *sinkLogGen) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(g.pending) == 0 {
			switch {
			case !g.started:
				g.buf = append(g.buf[:0], "v1"...)
				g.pending = g.buf
				g.started = true
			case g.i < g.n:
				// The same bytes as AppendSinkFileStatusJSON(genEntry(i)),
				// built without allocating so measurements see only the
				// reader.
				b := append(g.buf[:0], "\n{\"path\":\""+genPathPrefix...)
				b = strconv.AppendInt(b, int64(g.i), 10)
				b = append(b, genPathSuffix+`","size":`...)
				b = strconv.AppendInt(b, int64(1000+g.i%5000), 10)
				b = append(b, `,"isDir":false,"modificationTime":`...)
				b = strconv.AppendInt(b, genModTime+int64(g.i), 10)
				b = append(b, `,"blockReplication":1,"blockSize":33554432,"action":`...)
				if g.i%97 == 0 {
					b = append(b, `"delete"}`...)
				} else {
					b = append(b, `"add"}`...)
				}
				g.buf, g.pending = b, b
				g.i++
			default:
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
		}
		c := copy(p[n:], g.pending)
		g.pending = g.pending[c:]
		n += c
		g.size += int64(c)
	}
	return n, nil
}

// heapSampler tracks the peak in-use heap across a run.
type heapSampler struct{ peak uint64 }

func (h *heapSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > h.peak {
		h.peak = ms.HeapInuse
	}
}

func TestSinkLogReaderStreams(t *testing.T) {
	const n = 200_000
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var hs heapSampler
	gen := newSinkLogGen(n)
	r, err := NewSinkLogReader("_spark_metadata/199999.compact", gen)
	if err != nil {
		t.Fatal(err)
	}
	count, deletes := 0, 0
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if count%50_000 == 0 {
			hs.sample()
			if want := genEntry(count); e != want {
				t.Fatalf("entry %d = %+v, want %+v", count, e, want)
			}
		}
		if e.Action == "delete" {
			deletes++
		}
		count++
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if count != n || deletes != (n+96)/97 || r.Line() != n+1 || r.TrailingNewline() || r.Version() != 1 {
		t.Fatalf("count %d deletes %d line %d trailing %v", count, deletes, r.Line(), r.TrailingNewline())
	}
	allocs := float64(after.Mallocs-before.Mallocs) / n
	if allocs > 1.5 {
		t.Errorf("%.2f allocations per entry, want about 1 (the path string)", allocs)
	}
	if grow := int64(hs.peak) - int64(before.HeapInuse); grow > 32<<20 {
		t.Errorf("heap grew by %d MiB while streaming %d MiB", grow>>20, gen.size>>20)
	}
	t.Logf("%d entries, %d MiB streamed, %.2f allocs/entry, peak heap in use %d MiB",
		n, gen.size>>20, allocs, hs.peak>>20)
}

func BenchmarkParseOffsets(b *testing.B) {
	path := filepath.Join(conformanceDir(b), "structured-streaming", "checkpoint-version-4.0.0-checkpoint-v2",
		"rocksdb", "dedup", "offsets", "3")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseOffsets("offsets/3", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseCommit(b *testing.B) {
	path := filepath.Join(conformanceDir(b), "structured-streaming", "checkpoint-version-4.0.0-checkpoint-v2",
		"rocksdb", "dedup", "commits", "3")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCommit("commits/3", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalOffsets(b *testing.B) {
	path := filepath.Join(conformanceDir(b), "structured-streaming", "checkpoint-version-4.0.0-checkpoint-v2",
		"rocksdb", "dedup", "offsets", "3")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	o, err := ParseOffsets("offsets/3", data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		o.Marshal()
	}
}

// BenchmarkSinkLogReader streams a generated 1,000,000-entry compact file
// per iteration and reports the peak heap in use, which must stay far below
// the file size.
func BenchmarkSinkLogReader(b *testing.B) {
	const n = 1_000_000
	b.ReportAllocs()
	var hs heapSampler
	var size int64
	runtime.GC()
	for b.Loop() {
		gen := newSinkLogGen(n)
		r, err := NewSinkLogReader("_spark_metadata/999999.compact", gen)
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			count++
			if count%100_000 == 0 {
				hs.sample()
			}
		}
		if count != n {
			b.Fatalf("%d entries", count)
		}
		size = gen.size
	}
	b.SetBytes(size)
	b.ReportMetric(float64(hs.peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
}

// TestSinkLogGenMatchesWriter keeps the allocation-free generator honest.
func TestSinkLogGenMatchesWriter(t *testing.T) {
	data, err := io.ReadAll(newSinkLogGen(300))
	if err != nil {
		t.Fatal(err)
	}
	l := &SinkLog{Version: 1}
	for i := 0; i < 300; i++ {
		l.Entries = append(l.Entries, genEntry(i))
	}
	if string(data) != string(l.Marshal()) {
		t.Fatalf("generator output differs from SinkLog.Marshal")
	}
}
