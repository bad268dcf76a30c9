package state

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"

	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// TestMergeSSTs: per user key the entry with the highest sequence number wins, whichever file
// holds it; a deletion hides older values; keys come out in byte order.
func TestMergeSSTs(t *testing.T) {
	type e struct {
		k    string
		seq  uint64
		kind sstable.Kind
		v    string
	}
	tables := [][]e{
		{{"a", 1, sstable.KindValue, "a1"}, {"b", 2, sstable.KindValue, "b2"}, {"c", 3, sstable.KindValue, "c3"}, {"f", 4, sstable.KindValue, "f4"}},
		{{"a", 5, sstable.KindDeletion, ""}, {"b", 6, sstable.KindValue, "b6"}, {"d", 7, sstable.KindValue, "d7"}, {"f", 3, sstable.KindSingleDeletion, ""}},
		{{"e", 9, sstable.KindValue, "e9"}, {"e", 8, sstable.KindDeletion, ""}, {"g", 11, sstable.KindDeletion, ""}, {"g", 10, sstable.KindValue, "g10"}},
	}
	var its []*sstable.Iter
	for _, es := range tables {
		w := &sstable.Writer{}
		for _, x := range es {
			w.Add([]byte(x.k), x.seq, x.kind, []byte(x.v))
		}
		tb, err := OpenSST("t.sst", w.Finish())
		if err != nil {
			t.Fatal(err)
		}
		it := tb.Iter()
		if !it.Next() {
			t.Fatal(it.Err())
		}
		its = append(its, it)
	}
	var got []string
	err := mergeSSTs(its, func(k, v []byte, _ string) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := strings.Join(got, " "), "b=b6 c=c3 d=d7 e=e9 f=f4"; g != want {
		t.Errorf("merged %s, want %s", g, want)
	}
}

// TestReadCorruptSST: a damaged SST file of the version read fails the read with an error
// naming the file, the offset and the block; a missing one names the zip that lists it.
func TestReadCorruptSST(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(path string) error
		want string
	}{
		{"flipped", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[7] ^= 0x20
			return os.WriteFile(p, b, 0o644)
		}, ": offset 0 (data block 0): expected the block checksum"},
		{"missing", os.Remove, "state/0/0/5.zip lists state/0/0/SSTs/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../../testdata/spark-state/4.1.4/agg-rocksdb")); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "checkpoint/state/0/0/5.zip"))
			if err != nil {
				t.Fatal(err)
			}
			zcp, err := statefmt.ParseRocksDBZip("5.zip", data)
			if err != nil || len(zcp.SSTFiles) == 0 {
				t.Fatalf("fixture: %v", err)
			}
			sst := "state/0/0/SSTs/" + zcp.SSTFiles[0].DFSName()
			if err := c.edit(filepath.Join(dir, "checkpoint", sst)); err != nil {
				t.Fatal(err)
			}
			cp, l := openFixture(t, dir)
			r, err := NewReader(context.Background(), cp, l, ReadOptions{Operator: 0, Partition: 0})
			if err != nil {
				t.Fatal(err)
			}
			err = r.Each(context.Background(), func(*Row) error { return nil })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), sst) {
				t.Fatalf("got %v, want an error naming %s with %q", err, sst, c.want)
			}
		})
	}
}

// noWholeSST is a store that refuses to read an SST file whole (ReadFile) and, when plain is
// set, opens files as bare streams (no io.ReaderAt), as remote stores do.
type noWholeSST struct {
	storage.Store
	plain bool
}

func (s noWholeSST) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if strings.HasSuffix(path, ".sst") {
		return nil, fmt.Errorf("%s read whole", path)
	}
	return s.Store.ReadFile(ctx, path)
}

func (s noWholeSST) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	rc, err := s.Store.Open(ctx, path)
	if err != nil || !s.plain {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{rc, rc}, nil
}

// TestSSTRowsStreamed: a RocksDB version is read from its SST files a block at a time (the
// local file, or a temporary copy of a store's stream), never read whole into memory, with
// the same rows. Failed before SST files were opened with sstable.OpenReaderAt.
func TestSSTRowsStreamed(t *testing.T) {
	ctx := context.Background()
	dir := "../../testdata/spark-state/4.1.4/agg-rocksdb"
	cp, l := openFixture(t, dir)
	read := func(st storage.Store) []string {
		cp2, err := checkpoint.Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(ctx, cp2, l, ReadOptions{Operator: 0, Partition: -1})
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		if err := r.Each(ctx, func(row *Row) error { rows = append(rows, string(row.AppendJSON(nil))); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(rows)
		return rows
	}
	want := readLines(t, filepath.Join(dir, "oracle", "0-default.jsonl"))
	for _, plain := range []bool{false, true} {
		got := read(noWholeSST{Store: cp.Store, plain: plain})
		norm := func(ls []string) []string {
			out := make([]string, len(ls))
			for i, x := range ls {
				out[i] = normalize(t, []byte(x))
			}
			slices.Sort(out)
			return out
		}
		if g, w := norm(got), norm(want); len(g) == 0 || !slices.Equal(g, w) {
			t.Errorf("plain=%v: %d rows, not Spark's reader's %d", plain, len(g), len(w))
		}
	}
}
