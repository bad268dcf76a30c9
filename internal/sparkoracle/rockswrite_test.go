package sparkoracle

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// installed skips (or, in CI, fails) when Spark rel is not in the cache.
func installed(t *testing.T, rel string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sparkCache(), rel, "jars", ".complete")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Spark %s is not installed in %s", rel, sparkCache())
		}
		t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
	}
}

// TestSparkLiveSSTWriter: the RocksDB of each release's classpath (rocksdbjni 8.3 in 3.5, 9.x
// in 4.x) reads the SST files ckpt's writer makes (spark/RocksRead.java: SstFileReader with its
// checksums verified). Every SST file Spark wrote in testdata/spark-state, its entries
// rewritten by sstable.Writer (lz4 blocks, Spark's default), reads in RocksDB as the same live
// entries as Spark's own file; a table of many blocks, with deletions and several versions of
// a key, reads as the entries the newest version of each key leaves.
func TestSparkLiveSSTWriter(t *testing.T) {
	ssts, _ := filepath.Glob("../../testdata/spark-state/*/*/checkpoint/state/*/*/SSTs/*.sst")
	if len(ssts) == 0 {
		t.Fatal("no SST files in testdata/spark-state")
	}
	for _, rel := range releasesFromEnv(t) {
		t.Run(rel, func(t *testing.T) {
			installed(t, rel)
			work := t.TempDir()
			var reqs []string
			type rewritten struct{ src, spark, ckpt, want string }
			var files []rewritten
			for i, f := range ssts {
				b, want := rewriteSST(t, f)
				if b == nil {
					continue
				}
				ours := filepath.Join(work, fmt.Sprintf("%03d.sst", i))
				if err := os.WriteFile(ours, b, 0o644); err != nil {
					t.Fatal(err)
				}
				r := rewritten{f, filepath.Join(work, fmt.Sprintf("%03d-spark.txt", i)), ours + ".txt", want}
				reqs = append(reqs, "SST\t"+f+"\t"+r.spark, "SST\t"+ours+"\t"+r.ckpt)
				files = append(files, r)
			}
			many, manyWant := manyBlockSST(t)
			manyFile := filepath.Join(work, "many.sst")
			if err := os.WriteFile(manyFile, many, 0o644); err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, "SST\t"+manyFile+"\t"+manyFile+".txt")
			runJava(t, rel, "RocksRead", reqs)

			sparkRead := 0
			for _, r := range files {
				got, gerr := readOrError(r.ckpt)
				switch {
				case gerr != "":
					t.Errorf("%s rewritten: RocksDB: %s", r.src, gerr)
				case string(got) != r.want:
					t.Errorf("%s rewritten: RocksDB reads\n%s\nckpt's reader of Spark's file:\n%s", r.src, got, r.want)
				}
				// RocksDB 8.3 (Spark 3.5) does not read the format_version 6 files of 9.x.
				if spark, serr := readOrError(r.spark); serr == "" {
					sparkRead++
					if !bytes.Equal(spark, got) {
						t.Errorf("%s: RocksDB reads other entries from Spark's file than from its rewriting:\n%s", r.src, spark)
					}
				} else if !strings.Contains(serr, "format_version: 6") {
					t.Errorf("%s: RocksDB does not read Spark's own file: %s", r.src, serr)
				}
			}
			if sparkRead < len(files)/2 {
				t.Errorf("RocksDB read only %d of Spark's %d files", sparkRead, len(files))
			}
			for _, c := range []struct{ file, want string }{{manyFile, manyWant}} {
				got, err := readOrError(c.file + ".txt")
				if err != "" {
					t.Errorf("%s: RocksDB: %s", c.file, err)
				} else if string(got) != c.want {
					t.Errorf("%s: RocksDB reads %d bytes of entries, want %d:\n%s", c.file, len(got), len(c.want), lastBytes(string(got), 2000))
				}
			}
			if len(files) < len(ssts)/2 {
				t.Errorf("only %d of %d SST files rewritten", len(files), len(ssts))
			}
			t.Logf("%d of Spark's %d SST files rewritten and compared (%d read by RocksDB as Spark wrote them), one table of many blocks", len(files), len(ssts), sparkRead)
		})
	}
}

// rewriteSST writes every entry of Spark's SST file f (ckpt's reader) into a new table; nil for
// a file with entries the writer does not write (transformWithState's merge operands). want is
// RocksRead's output as ckpt's reader sees the file: the newest entry of each user key, unless
// it is a deletion, then the table's entry count.
func rewriteSST(t *testing.T, f string) ([]byte, string) {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := state.OpenSST(f, data)
	if err != nil {
		t.Fatal(err)
	}
	w := &sstable.Writer{Compression: sstable.LZ4Compression, Compress: statefmt.SSTLZ4, CompressIndex: true}
	var want strings.Builder
	var last []byte
	n := 0
	for it := tb.Iter(); ; n++ {
		if !it.Next() {
			if errors.Is(it.Err(), sstable.ErrUnsupported) {
				return nil, ""
			}
			if it.Err() != nil {
				t.Fatalf("%s: %v", f, it.Err())
			}
			break
		}
		if err := w.Add(it.UserKey, it.Seq, it.Kind, it.Value); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if n == 0 || !bytes.Equal(last, it.UserKey) {
			last = append(last[:0], it.UserKey...)
			if it.Kind == sstable.KindValue {
				fmt.Fprintf(&want, "%x\t%x\n", it.UserKey, it.Value)
			}
		}
	}
	fmt.Fprintf(&want, "# entries %d\n", n)
	out := w.Finish()
	if n > 0 && bytes.Equal(out, data) {
		t.Fatalf("%s: the writer made Spark's own bytes: the comparison would prove nothing", f)
	}
	return out, want.String()
}

// manyBlockSST is a table of 4,000 user keys in blocks of 256 bytes, uncompressed: every fifth
// key has an older version below its newest, every seventh's newest entry is a deletion. want
// is RocksRead's output: the newest value of each key not deleted.
func manyBlockSST(t *testing.T) ([]byte, string) {
	t.Helper()
	w := &sstable.Writer{BlockSize: 256}
	var want strings.Builder
	live := 0
	for i := range 4000 {
		k := []byte(fmt.Sprintf("user-key-%06d", i))
		v := []byte(strings.Repeat(fmt.Sprint(i%10), 1+i%40))
		seq := uint64(100_000 - 2*i)
		if i%7 == 3 {
			if err := w.Add(k, seq, sstable.KindDeletion, nil); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := w.Add(k, seq, sstable.KindValue, v); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&want, "%x\t%x\n", k, v)
			live++
		}
		if i%5 == 0 {
			if err := w.Add(k, seq-1, sstable.KindValue, []byte("older")); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := w.Meta()
	fmt.Fprintf(&want, "# entries %d\n", m.Entries)
	return w.Finish(), want.String()
}
