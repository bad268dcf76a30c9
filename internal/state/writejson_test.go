package state

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// TestWriteJSONEqualsRows: the block writer of `state read -o json` writes exactly the rows
// Each hands out, rendered by AppendJSON, a line each, over every partition and many blocks.
func TestWriteJSONEqualsRows(t *testing.T) {
	dir := t.TempDir()
	if _, err := writeBenchState(filepath.Join(dir, "checkpoint"), 1<<20); err != nil {
		t.Fatal(err)
	}
	cp, l := openFixture(t, dir)
	for _, opts := range []ReadOptions{{Operator: 0, Partition: -1}, {Operator: 0, Partition: 0, Version: 5, Changes: true}} {
		var want bytes.Buffer
		r, err := NewReader(context.Background(), cp, l, opts)
		if err != nil {
			t.Fatal(err)
		}
		err = r.Each(context.Background(), func(row *Row) error {
			want.Write(append(row.AppendJSON(nil), '\n'))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := r.WriteJSON(context.Background(), &got); err != nil {
			t.Fatal(err)
		}
		if want.Len() < 4<<20 {
			t.Fatalf("%+v: only %d bytes of rows: too few to span many blocks", opts, want.Len())
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%+v: WriteJSON wrote %d bytes, Each's rows are %d bytes (first difference at %d)",
				opts, got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
		}
	}
}

// TestWriteJSONStopsAtBadRowWithWholeLines: a row that does not fit the schema stops the read
// with an error naming the file; every row before it is written, as whole lines.
func TestWriteJSONStopsAtBadRowWithWholeLines(t *testing.T) {
	dir := t.TempDir()
	src := "../../testdata/spark-state/4.0.2/agg-hdfs/checkpoint"
	if err := copyBut00(src, filepath.Join(dir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	var tmpl []byte
	{
		snap := filepath.Join(src, "state/0/0/3.snapshot")
		data, err := os.ReadFile(snap)
		if err != nil {
			t.Fatal(err)
		}
		dr, err := statefmt.Decompress(snap, statefmt.CodecLZ4, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := statefmt.NewRecordReader(snap, statefmt.Snapshot, dr).Next()
		if err != nil {
			t.Fatal(err)
		}
		tmpl = bytes.Clone(rec.Value[:len(rec.Value)/8*8])
	}
	part := filepath.Join(dir, "checkpoint/state/0/0")
	const good = 5000
	_, err := writeStateFile(filepath.Join(part, "3.snapshot"), func(rw *statefmt.RecordWriter) error {
		var key, val []byte
		for i := range int64(good) {
			if err := rw.Put(benchKey(key, i), benchValue(val, tmpl, i, 1)); err != nil {
				return err
			}
		}
		return rw.Put(benchKey(key, good), make([]byte, 8)) // a value row needs far more
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"4.delta", "5.delta"} {
		if _, err := writeStateFile(filepath.Join(part, v), func(*statefmt.RecordWriter) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	cp, l := openFixture(t, dir)
	r, err := NewReader(context.Background(), cp, l, ReadOptions{Operator: 0, Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = r.WriteJSON(context.Background(), &out)
	if err == nil || !strings.Contains(err.Error(), "state/0/0/3.snapshot") {
		t.Fatalf("got %v, want an error naming state/0/0/3.snapshot", err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != good+1 || lines[good] != "" {
		t.Fatalf("wrote %d lines (last %q), want %d whole lines", len(lines)-1, lines[len(lines)-1], good)
	}
	for i, line := range lines[:good] {
		if !strings.HasPrefix(line, `{"key":{"k":"user-`) || !strings.HasSuffix(line, `,"partition_id":0}`) {
			t.Fatalf("line %d is not a whole row: %q", i, line)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
