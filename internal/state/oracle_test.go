package state

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state/statetest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// oracleDir is where Spark's reading of a fixture is. When Spark's reader failed on the
// checkpoint itself (oracle/error.txt: Spark 4.0.2 cannot read checkpoint format v2), the same
// query on the HDFS-backed store of the same release holds the same rows, read by Spark.
func oracleDir(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "oracle", "error.txt")); err == nil {
		kind, _, _ := strings.Cut(filepath.Base(dir), "-")
		return filepath.Join(filepath.Dir(dir), kind+"-hdfs", "oracle")
	}
	return filepath.Join(dir, "oracle")
}

// fixtureCases are the checkpoints real Spark wrote (scripts/spark-state-fixtures.py) that
// have Spark's own reading next to them (oracle/).
func fixtureCases(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob("../../testdata/spark-state/*/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if m, _ := filepath.Glob(filepath.Join(oracleDir(d), "*.jsonl")); len(m) > 0 {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatal("no fixtures with an oracle under testdata/spark-state")
	}
	return out
}

func openFixture(t testing.TB, dir string) (*checkpoint.Checkpoint, *Listing) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, filepath.Join(dir, "checkpoint"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Scan(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return cp, l
}

// normalize is statetest.Normalize, failing the test on bad JSON.
func normalize(t testing.TB, line []byte) string {
	t.Helper()
	n, err := statetest.Normalize(line)
	if err != nil {
		t.Fatalf("bad JSON %s: %v", line, err)
	}
	return n
}

func readLines(t testing.TB, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, normalize(t, sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestReadEqualsSparkStateReader reads every store of every fixture and compares the rows,
// as a multiset, with what spark.read.format("statestore") returned on the same checkpoint.
func TestReadEqualsSparkStateReader(t *testing.T) {
	for _, dir := range fixtureCases(t) {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			cp, l := openFixture(t, dir)
			oracles, _ := filepath.Glob(filepath.Join(oracleDir(dir), "*.jsonl"))
			if len(oracles) == 0 {
				t.Fatal("no oracle files")
			}
			for _, of := range oracles {
				base := strings.TrimSuffix(filepath.Base(of), ".jsonl")
				changes := strings.HasSuffix(base, ".changes")
				base = strings.TrimSuffix(base, ".changes")
				opStr, store, _ := strings.Cut(base, "-")
				op, err := strconv.ParseInt(opStr, 10, 64)
				if err != nil {
					t.Fatalf("%s: bad oracle name", of)
				}
				opts := ReadOptions{Operator: op, Store: store, Partition: -1, Changes: changes}
				if changes {
					last, _ := cp.Commits.Latest()
					opts.Version = last + 1
				}
				compareRead(t, cp, l, opts, of)
			}
		})
	}
}

// compareRead reads opts and compares the rows with the oracle file of.
func compareRead(t *testing.T, cp *checkpoint.Checkpoint, l *Listing, opts ReadOptions, of string) {
	t.Helper()
	want := readLines(t, of)
	r, err := NewReader(context.Background(), cp, l, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = r.Each(context.Background(), func(row *Row) error {
		got = append(got, normalize(t, row.AppendJSON(nil)))
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(of), err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: ckpt read %d rows, Spark %d\nckpt:\n%s\nspark:\n%s", filepath.Base(of), len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReadEveryRocksDBVersionEqualsSpark reads every committed version of every RocksDB
// fixture (oracle/versions/<op>-<store>.batch<N>.jsonl: Spark's reader with batchId=N, state
// version N+1), whether SST files (a zip) or changelogs hold it, and compares the rows.
func TestReadEveryRocksDBVersionEqualsSpark(t *testing.T) {
	oracles, err := filepath.Glob("../../testdata/spark-state/*/*rocksdb*/oracle/versions/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{}
	for _, of := range oracles {
		dir := filepath.Dir(filepath.Dir(filepath.Dir(of)))
		cases[dir] = append(cases[dir], of)
	}
	// Every release's no-changelog run (SST files only) and a changelog run must be covered.
	for _, want := range []string{"3.5.8/agg-rocksdb", "4.0.2/agg-rocksdb", "4.1.4/agg-rocksdb", "4.2.0/agg-rocksdb", "4.1.4/agg-rocksdb-changelog"} {
		if _, ok := cases[filepath.Join("../../testdata/spark-state", want)]; !ok {
			t.Errorf("no per-version oracle for %s", want)
		}
	}
	sstOnly := 0
	for dir, ofs := range cases {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			cp, l := openFixture(t, dir)
			for _, of := range ofs {
				base := strings.TrimSuffix(filepath.Base(of), ".jsonl")
				base, batch, ok := strings.Cut(base, ".batch")
				opStr, store, ok2 := strings.Cut(base, "-")
				op, err1 := strconv.ParseInt(opStr, 10, 64)
				b, err2 := strconv.ParseInt(batch, 10, 64)
				if !ok || !ok2 || err1 != nil || err2 != nil {
					t.Fatalf("%s: bad oracle name", of)
				}
				opts := ReadOptions{Operator: op, Store: store, Partition: -1, Version: b + 1}
				p := l.Operator(op).Store(store).Partitions[0]
				if c, err := ChainFor(p, ProviderRocksDB, b+1, nil); err == nil && c.Base != nil && len(c.Steps) == 0 {
					sstOnly++
				}
				compareRead(t, cp, l, opts, of)
			}
		})
	}
	if sstOnly == 0 {
		t.Error("no version read from SST files alone")
	}
}

// TestEveryFixtureIsComparedWithSpark: every checkpoint under testdata/spark-state has Spark's
// reading beside it, which TestReadEqualsSparkStateReader (oracle/*.jsonl) or
// TestReadTWSEqualsSparkStateReader (oracle/vars/) compares with ckpt's, so that no fixture
// sits there unchecked; and the kinds of store the issue names are among them.
func TestEveryFixtureIsComparedWithSpark(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/spark-state/*/*")
	have := map[string]bool{}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "checkpoint")); err != nil {
			continue
		}
		name := filepath.Base(filepath.Dir(d)) + "/" + filepath.Base(d)
		plain, _ := filepath.Glob(filepath.Join(oracleDir(d), "*.jsonl"))
		vars, _ := filepath.Glob(filepath.Join(d, "oracle", "vars", "*.jsonl"))
		if len(plain) == 0 && len(vars) == 0 {
			t.Errorf("%s: no reading by Spark's statestore reader (oracle/*.jsonl or oracle/vars/)", name)
		}
		have[name] = true
	}
	for _, want := range []string{
		"3.5.8/agg-ntz-hdfs", "4.0.2/agg-ntz-hdfs", "4.1.4/agg-ntz-hdfs", "4.2.0/agg-ntz-hdfs", // TIMESTAMP_NTZ
		"4.0.2/tws", "4.1.4/tws", "4.1.4/tws-changelog", "4.1.4/tws-ttl", "4.2.0/tws", "4.2.0/tws-changelog", "4.2.0/tws-ttl", // transformWithState, TTL
		"4.0.2/tws-pandas", "4.1.4/tws-pandas", "4.2.0/tws-pandas", // transformWithStateInPandas
		"4.0.2/agg-rocksdb-changelog-v2", "4.1.4/agg-rocksdb-changelog-v2", "4.2.0/agg-rocksdb-changelog-v2", "4.1.4/tws-changelog-v2", "4.2.0/tws-changelog-v2", // checkpoint format v2
		"3.5.8/join-hdfs", "3.5.8/dedup-hdfs", "3.5.8/agg-hdfs-zstd", "3.5.8/dedup-rocksdb-changelog",
		"4.2.0/agg-hdfs", "4.2.0/agg-rocksdb", "4.2.0/dedup-hdfs", "4.2.0/join-hdfs", "4.2.0/agg-rocksdb-changelog", "4.2.0/dedup-rocksdb-changelog",
		"4.2.0/agg-hdfs-zstd", "4.2.0/agg-hdfs-snappy", "4.2.0/agg-hdfs-lzf", "4.2.0/agg-rocksdb-fv6-zstd",
	} {
		if !have[want] {
			t.Errorf("no fixture %s", want)
		}
	}
}
