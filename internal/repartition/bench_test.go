package repartition

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// benchRows is the size of the benchmark's state: rows in partition 0's snapshot.
const benchRows = 1_000_000

// benchCheckpoint is the 4.2.0 agg-hdfs fixture with a snapshot of benchRows rows as
// partition 0's version 5 (key k string, b int; the fixture's first value row for each).
func benchCheckpoint(b *testing.B) (string, int64) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "ck")
	if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
		b.Fatal(err)
	}
	snap := filepath.Join(fixture, "state/0/0/3.snapshot")
	data, _ := os.ReadFile(snap)
	dr, err := statefmt.Decompress(snap, statefmt.CodecLZ4, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := statefmt.NewRecordReader(snap, statefmt.Snapshot, dr).Next()
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Clone(rec.Value)
	keyType := &statefmt.Type{Name: "struct", Fields: []statefmt.Field{{Name: "k", Type: &statefmt.Type{Name: "string"}}, {Name: "b", Type: &statefmt.Type{Name: "integer"}}}}
	f, err := os.Create(filepath.Join(dir, "state/0/0/5.snapshot"))
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	fw, err := statefmt.NewFileWriter(statefmt.CodecLZ4, bw)
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchRows {
		key, err := statefmt.EncodeRow(&statefmt.Object{Names: []string{"k", "b"}, Values: []any{fmt.Sprintf("user-%09d", i*7919%benchRows), int32(i % 2)}}, keyType)
		if err != nil {
			b.Fatal(err)
		}
		if err := fw.Put(key, value); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	_ = f.Close()
	return dir, fi.Size()
}

// BenchmarkPlanVsRead: the plan of a repartition 2→8 against `state read` of the same state
// (every row of every partition, decoded), in the same run; peak heap sampled.
func BenchmarkPlanVsRead(b *testing.B) {
	dir, size := benchCheckpoint(b)
	ctx := context.Background()
	s := open(&testing.T{}, dir)
	b.Logf("state: partition 0 snapshot of %d rows, %d bytes compressed", benchRows, size)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		cp, _ := checkpoint.Load(ctx, s)
		l, _ := state.Scan(ctx, s)
		r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Partition: -1})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := r.Each(ctx, func(row *state.Row) error { n++; _ = row.Key(); return nil }); err != nil {
			b.Fatal(err)
		}
		read := time.Since(t0)
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0 = time.Now()
		p, err := NewPlan(ctx, s, Options{Partitions: 8})
		if err != nil || p.Refused != "" {
			b.Fatal(err, p.Refused)
		}
		plan := time.Since(t0)
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		b.Logf("read %d rows in %v; plan %d rows, %d bytes of files in %v (%.2fx read's time); heap after plan %d MiB, total allocated %d MiB",
			n, read, p.Rows, p.Bytes, plan, float64(plan)/float64(read), m1.HeapAlloc>>20, (m1.TotalAlloc-m0.TotalAlloc)>>20)
	}
}
