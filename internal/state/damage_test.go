package state

import (
	"bytes"
	"context"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// copyCheckpoint copies a fixture's checkpoint so that a test may damage it.
func copyCheckpoint(t *testing.T, fixture string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "checkpoint")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("../../testdata/spark-state", fixture, "checkpoint"))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// FileDamage tells the damages apart as Spark's readers do (the kinds that decide Spark's
// error), and compares Spark 4.1's checksum files.
func TestFileDamage(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		fixture, file string
		damage        func([]byte) []byte
		kind          string
		checksum      bool
	}{
		{"3.5.8/agg-hdfs", "state/0/1/5.delta", nil, "", false},
		{"3.5.8/agg-hdfs", "state/0/1/5.delta", func(b []byte) []byte { return b[:len(b)/2] }, recovery.DamageCodecTruncated, false},
		{"3.5.8/agg-hdfs", "state/0/1/5.delta", func(b []byte) []byte { return nil }, recovery.DamageEmpty, false},
		{"3.5.8/agg-rocksdb-changelog", "state/0/1/5.changelog", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }, recovery.DamageCodecCorrupt, false},
		{"3.5.8/agg-rocksdb", "state/0/1/5.zip", func(b []byte) []byte { return b[:len(b)/2] }, recovery.DamageZipTruncated, false},
		{"4.1.4/agg-hdfs", "state/0/1/5.delta", func(b []byte) []byte { return b[:len(b)/2] }, recovery.DamageCodecTruncated, true},
		{"4.1.4/agg-rocksdb-changelog", "state/0/1/5.changelog", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }, recovery.DamageCodecCorrupt, true},
	} {
		dir := copyCheckpoint(t, c.fixture)
		path := filepath.Join(dir, filepath.FromSlash(c.file))
		if c.damage != nil {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		st, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Scan(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		p := l.Operators[0].Stores[0].Partition(1)
		var f File
		for _, x := range p.Files {
			if x.Path == c.file {
				f = x
			}
		}
		d, err := FileDamage(ctx, st, p, f)
		if err != nil {
			t.Fatal(err)
		}
		var kind string
		if d != nil {
			kind = d.Kind
		}
		if kind != c.kind || (d != nil && d.Checksum != nil) != c.checksum {
			t.Errorf("%s %s: %+v; want kind %q, checksum mismatch %v", c.fixture, c.file, d, c.kind, c.checksum)
		}
	}
}

// FuzzStreamDamage: any bytes as a delta or changelog give a damage or none, never a panic or a
// store error.
func FuzzStreamDamage(f *testing.F) {
	for _, p := range []string{"3.5.8/agg-hdfs/checkpoint/state/0/1/5.delta", "4.1.4/agg-rocksdb-changelog/checkpoint/state/0/1/5.changelog", "3.5.8/agg-hdfs-zstd/checkpoint/state/0/1/5.delta"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/spark-state", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		f.Add(b[:len(b)/2], false)
	}
	f.Fuzz(func(t *testing.T, data []byte, changelog bool) {
		file := File{Path: "state/0/1/5.delta", Version: 5, Kind: KindDelta}
		if changelog {
			file = File{Path: "state/0/1/5.changelog", Version: 5, Kind: KindChangelog}
		}
		cr := &damageReader{r: bytes.NewReader(data), crc: crc32.New(castagnoli)}
		d, err := streamDamage(file, cr)
		if err != nil {
			t.Fatalf("a store error from bytes in memory: %v", err)
		}
		if d != nil && d.Kind == "" {
			t.Fatalf("a damage without a kind: %+v", d)
		}
	})
}
