package statefmt

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// BenchmarkAppendRowJSON renders the key and value rows of the aggregation Spark 4.0.2 wrote
// (testdata/spark-state/4.0.2/agg-hdfs: strings, ints, longs, doubles, a timestamp, a date, a
// decimal, booleans), the per-row work of `ckpt state read -o json` after decompression.
func BenchmarkAppendRowJSON(b *testing.B) {
	fam, keys, values := aggRows(b)
	var out []byte
	var err error
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		j := i % len(keys)
		out, err = AppendRowJSON(out[:0], keys[j], fam.Key)
		if err == nil {
			out, err = AppendRowJSON(out, values[j], fam.Value)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkFitRow checks the same rows against their schema (FitRow), the extra per-row work
// of a read that refuses rows of another schema.
func BenchmarkFitRow(b *testing.B) {
	fam, keys, values := aggRows(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		j := i % len(keys)
		if err := FitRow(keys[j], fam.Key); err != nil {
			b.Fatal(err)
		}
		if err := FitRow(values[j], fam.Value); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// aggRows are the key and value rows of 4.0.2/agg-hdfs's partition 0 snapshot and their schema.
func aggRows(b *testing.B) (*ColumnFamily, [][]byte, [][]byte) {
	b.Helper()
	dir := "../../testdata/spark-state/4.0.2/agg-hdfs/checkpoint/state/0/0/"
	sdata, err := os.ReadFile(dir + "_metadata/schema")
	if err != nil {
		b.Fatal(err)
	}
	s, err := ParseSchema("schema", sdata)
	if err != nil {
		b.Fatal(err)
	}
	fam := s.Family(DefaultColumnFamily)
	data, err := os.ReadFile(dir + "3.snapshot")
	if err != nil {
		b.Fatal(err)
	}
	dr, err := Decompress("3.snapshot", CodecLZ4, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	rr := NewRecordReader("3.snapshot", Snapshot, dr)
	var keys, values [][]byte
	for {
		rec, err := rr.Next()
		if err != nil {
			break
		}
		keys = append(keys, bytes.Clone(rec.Key))
		values = append(values, bytes.Clone(rec.Value[:len(rec.Value)/8*8]))
	}
	if len(keys) == 0 {
		b.Fatal("no rows")
	}
	return fam, keys, values
}

// BenchmarkAppendInt compares the in-place integer formatter with strconv's on the
// magnitudes of a state row's counters and sums.
func BenchmarkAppendInt(b *testing.B) {
	vals := []int64{7, 42, 913, 18_345, 1_600_000_123, -77, 9_876_543_210_123}
	var out []byte
	b.Run("strconv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			out = strconv.AppendInt(out[:0], vals[i%len(vals)], 10)
		}
	})
	b.Run("appendInt", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			out = appendInt(out[:0], vals[i%len(vals)])
		}
	})
}
