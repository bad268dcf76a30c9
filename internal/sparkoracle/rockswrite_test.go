package sparkoracle

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
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
// a key, reads as the entries the newest version of each key leaves. Then a database directory
// holding only a MANIFEST, CURRENT and one SST file that statefmt wrote opens read-only and
// reads as the rows that were put.
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
			db, dbWant := rocksDBDir(t, filepath.Join(work, "db"), rel)
			reqs = append(reqs, "DB\t"+db+"\t"+db+".txt")
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
			for _, c := range []struct{ file, want string }{{manyFile, manyWant}, {db, dbWant}} {
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
			t.Logf("%d of Spark's %d SST files rewritten and compared (%d read by RocksDB as Spark wrote them), one table of many blocks, one database", len(files), len(ssts), sparkRead)
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

// rocksDBDir writes a RocksDB version of 500 rows with statefmt's writer and lays it out as
// Spark does before it opens the database: the zip's entries and the SST file in one directory.
// want is RocksRead's output: every row with RocksDB's encoding byte.
func rocksDBDir(t *testing.T, dir, rel string) (string, string) {
	t.Helper()
	w := statefmt.NewRocksDBWriter()
	var want strings.Builder
	for i := range 500 {
		k := []byte(fmt.Sprintf("key-%05d", i))
		v := []byte(strings.Repeat("v", i%30))
		if err := w.Put(k, v); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&want, "00%x\t00%x\n", k, v)
	}
	fmt.Fprintf(&want, "# entries %d\n", 500)
	v, err := w.Finish("0b3c2a4e-1f5d-4c6b-8a9e-7d2f1e0c3b4a", Line(rel))
	if err != nil {
		t.Fatal(err)
	}
	unzipTo(t, v.Zip, dir)
	if err := os.WriteFile(filepath.Join(dir, strings.SplitN(v.SSTName, "-", 2)[0]+".sst"), v.SST, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, want.String()
}

// unzipTo extracts a RocksDB checkpoint zip into dir, as Spark's RocksDBFileManager does.
func unzipTo(t *testing.T, data []byte, dir string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSparkLiveRocksDBWriter: for each release, the RocksDB aggregation fixture of its line
// (testdata/spark-state/<line>.x/agg-rocksdb, five batches) with its last version (5) of every
// partition replaced by statefmt's writing of the rows ckpt's reader reads there: one new SST
// file and a 5.zip naming it, Spark's own files of version 5 removed. Spark's statestore reader
// (4.0+; 3.5 has none) reads the same rows from it as from Spark's version 5, and the query
// restarted on it (spark/StateDamage.java, a new input file) runs batch 5 and writes a version
// 6 in which ckpt's reader sees the same rows as in the version 6 the same restart writes from
// Spark's own version 5: Spark loaded exactly the rows that were written.
func TestSparkLiveRocksDBWriter(t *testing.T) {
	for _, rel := range ciReleases(t) {
		t.Run(rel, func(t *testing.T) {
			installed(t, rel)
			fx := fixtureFor(t, rel, "agg-rocksdb")
			if fx == "" {
				t.Fatalf("no agg-rocksdb fixture for Spark %s", Line(rel))
			}
			work := t.TempDir()
			var cks [2]string
			for i, name := range []string{"spark", "ckpt"} {
				cks[i] = filepath.Join(work, name, "checkpoint")
				copyTree(t, filepath.Join(fx, "checkpoint"), cks[i])
			}
			before := readRocksVersion(t, cks[0], 5)
			if len(before) == 0 {
				t.Fatal("no rows in version 5 of Spark's store")
			}
			for p := range before {
				rewriteRocksVersion(t, cks[1], p, 5, Line(rel))
			}
			if got := readRocksVersion(t, cks[1], 5); !equalRows(got, before) {
				t.Fatalf("ckpt reads other rows from the version it wrote:\n%v\nSpark's:\n%v", got, before)
			}
			if !strings.HasPrefix(rel, "3.") {
				var reqs []string
				var outs [2]string
				for i, ck := range cks {
					outs[i] = filepath.Join(work, fmt.Sprintf("read-%d.jsonl", i))
					reqs = append(reqs, strings.Join([]string{ck, "0", "default", outs[i]}, "\t"))
				}
				runStateRead(t, rel, reqs)
				want, werr := readOrError(outs[0])
				got, gerr := readOrError(outs[1])
				switch {
				case werr != "" || len(want) == 0:
					t.Fatalf("Spark's reader of Spark's store: %q (%d bytes)", werr, len(want))
				case gerr != "":
					t.Errorf("Spark's reader of the version ckpt wrote: %s", gerr)
				case !bytes.Equal(want, got):
					t.Errorf("Spark's reader reads\n%s\nfrom the version ckpt wrote, and from Spark's:\n%s", got, want)
				}
			}
			var conf struct {
				Query string            `json:"query"`
				Conf  map[string]string `json:"conf"`
			}
			readJSON(t, filepath.Join(fx, "conf.json"), &conf)
			var reqs []map[string]any
			for i, ck := range cks {
				in := restartInput(t, filepath.Dir(ck), ck)
				reqs = append(reqs, map[string]any{"name": []string{"spark", "ckpt"}[i], "checkpoint": ck, "input": in,
					"query": conf.Query, "conf": conf.Conf, "timeoutMs": 180000})
			}
			res := runStateDamage(t, rel, reqs)
			for i, r := range res {
				if r.Outcome != "ok" || len(r.Batches) != 1 || r.Batches[0].ID != 5 {
					t.Fatalf("restart on %s's version 5: %s %v %v, batches %v", reqs[i]["name"], r.Outcome, deref(r.ErrorClass), deref(r.Error), r.Batches)
				}
			}
			want, got := readRocksVersion(t, cks[0], 6), readRocksVersion(t, cks[1], 6)
			if len(want) == 0 || equalRows(want, before) {
				t.Fatalf("the restart on Spark's store changed no row of version 5: %v", want)
			}
			if !equalRows(got, want) {
				t.Errorf("version 6 after the restart on ckpt's version 5:\n%v\nafter the restart on Spark's:\n%v", got, want)
			}
		})
	}
}

// readRocksVersion reads version v of operator 0's store with ckpt's reader: by partition, the
// key and value bytes of each row in key order.
func readRocksVersion(t *testing.T, ck string, v int64) map[int][][2]string {
	t.Helper()
	ctx := context.Background()
	s, err := storage.NewLocal(ck)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	l, err := state.Scan(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][][2]string{}
	for _, p := range l.Operator(0).Store("default").Partitions {
		r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: 0, Partition: p.ID, Version: v})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Each(ctx, func(row *state.Row) error {
			out[p.ID] = append(out[p.ID], [2]string{string(row.RawKey), string(row.RawValue)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(out[p.ID], func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	}
	return out
}

func equalRows(a, b map[int][][2]string) bool {
	return maps.EqualFunc(a, b, func(x, y [][2]string) bool { return slices.Equal(x, y) })
}

// rewriteRocksVersion replaces version v of operator 0's partition p by statefmt's writing of
// the rows ckpt reads there: the version's zip and its checksum files removed, a new SST file
// and zip written. Spark's SST files stay (older versions list them).
func rewriteRocksVersion(t *testing.T, ck string, p int, v int64, line string) {
	t.Helper()
	rows := readRocksVersion(t, ck, v)[p]
	w := statefmt.NewRocksDBWriter()
	for _, r := range rows {
		if err := w.Put([]byte(r[0]), []byte(r[1])); err != nil {
			t.Fatal(err)
		}
	}
	ver, err := w.Finish(fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", p), line)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(ck, "state", "0", fmt.Sprint(p))
	zipName := fmt.Sprintf("%d.zip", v)
	for _, f := range []string{zipName, zipName + ".crc", "." + zipName + ".crc"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "SSTs", ver.SSTName), ver.SST)
	writeFile(t, filepath.Join(dir, zipName), ver.Zip)
}

// TestSparkLiveChangelogWriter: every RocksDB changelog of the changelog fixtures (format v1,
// and v3 with its lineage under checkpoint format v2), rewritten by statefmt's ChangelogWriter
// in its codec, reads in Spark's statestore reader (4.0+; 3.5 has none) as the same rows and
// the same change feed as the store Spark wrote.
func TestSparkLiveChangelogWriter(t *testing.T) {
	for _, rel := range ciReleases(t) {
		if strings.HasPrefix(rel, "3.") {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			installed(t, rel)
			var fixtures []string
			for _, name := range []string{"agg-rocksdb-changelog", "agg-rocksdb-changelog-v2", "dedup-rocksdb-changelog"} {
				if fx := fixtureFor(t, rel, name); fx != "" {
					fixtures = append(fixtures, fx)
				}
			}
			if len(fixtures) == 0 {
				t.Fatalf("no RocksDB changelog fixture for Spark %s", Line(rel))
			}
			compareRewritten(t, rel, fixtures, rewriteChangelogs)
		})
	}
}

// rewriteChangelogs replaces every v1 and v3 changelog below ck/state with ckpt's writing of
// its header and records.
func rewriteChangelogs(t *testing.T, ck string) int {
	t.Helper()
	return rewriteFiles(t, ck, []string{".changelog"}, func(p, codec string, plain io.Reader, out io.Writer) (bool, error) {
		br := bufio.NewReader(plain)
		h, err := statefmt.ReadTypedChangelogHeader(p, br)
		if err != nil || h.Typed() {
			return false, err
		}
		w, err := statefmt.NewChangelogWriter(codec, out, *h)
		if err != nil {
			return false, err
		}
		return true, copyRecords(statefmt.NewRecordReader(p, statefmt.Changelog, br), w, true)
	})
}
