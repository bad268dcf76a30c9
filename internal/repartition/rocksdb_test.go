package repartition

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const rocksFixture = "../../testdata/spark-state/4.2.0/agg-rocksdb/checkpoint"

// sstUUID is the UUID of an SST file name: Spark's are random, ckpt's a digest.
var sstUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestPlanRocksDBEqualsSparkRepartition: Spark 4.2.0's RocksDB fixture repartitioned 2→4 by
// ckpt adds the files Spark 4.2.0's own repartition of the same checkpoint added
// (testdata/spark-repartition/4.2.0/agg-rocksdb/result.json: per new partition 6.zip and one
// SST file, with checksums; offsets/5 and commits/5 byte for byte), and holds, row for row and
// partition for partition, what Spark's reader read after Spark's repartition.
func TestPlanRocksDBEqualsSparkRepartition(t *testing.T) {
	s := open(t, rocksFixture)
	p, files := plan(t, s, Options{Partitions: 4})
	if p.Refused != "" {
		t.Fatalf("refused: %s", p.Refused)
	}
	if p.Batch != 4 || p.Version != 6 || p.Rows != 15 || slices.Contains(p.BeyondSpark, BeyondSparkHDFS) {
		t.Errorf("plan batch %d version %d rows %d beyond Spark %v", p.Batch, p.Version, p.Rows, p.BeyondSpark)
	}
	const spark = "../../testdata/spark-repartition/4.2.0/agg-rocksdb/"
	var res struct {
		Added []string `json:"added"`
	}
	data, err := os.ReadFile(spark + "result.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, a := range p.Actions {
		got = append(got, sstUUID.ReplaceAllString(a.Path, "<uuid>"))
		if strings.HasPrefix(a.Path, "offsets/") || strings.HasPrefix(a.Path, "commits/") {
			theirs, err := os.ReadFile(spark + "after/checkpoint/" + a.Path)
			if err != nil || string(theirs) != string(files[a.Path]) {
				t.Errorf("%s:\n%s\nSpark's:\n%s", a.Path, files[a.Path], theirs)
			}
		}
	}
	for _, f := range res.Added {
		want = append(want, sstUUID.ReplaceAllString(f, "<uuid>"))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("files\n%v\nSpark's\n%v", got, want)
	}
	gotRows := rows(t, applied(s, files), 4)
	wantRows := sparkRows(t, spark+"oracle/after.jsonl")
	if !slices.Equal(gotRows, wantRows) {
		t.Errorf("ckpt's repartition holds\n%s\nSpark's\n%s", strings.Join(gotRows, "\n"), strings.Join(wantRows, "\n"))
	}
	// The same plan on every run: the SST names are digests of the rows.
	again, _ := plan(t, s, Options{Partitions: 4})
	for i, a := range again.Actions {
		if a.Path != p.Actions[i].Path || a.After != p.Actions[i].After {
			t.Errorf("second plan: %s differs", a.Path)
		}
	}
}

// TestPlanEveryRocksDBFixture: every RocksDB aggregation and dropDuplicates fixture of every
// release (with or without changelogs, checkpoint format v1) plans 2→3 and 2→1, and every row
// of the store lands in exactly one new partition, read back by ckpt from the zip and SST
// files the plan writes.
func TestPlanEveryRocksDBFixture(t *testing.T) {
	for _, d := range rocksFixtures(t) {
		for _, n := range []int{3, 1} {
			s := open(t, d)
			p, files := plan(t, s, Options{Partitions: n})
			if p.Refused != "" {
				t.Errorf("%s to %d: refused: %s", d, n, p.Refused)
				continue
			}
			before := unpartitioned(rows(t, s, 2))
			after := unpartitioned(rows(t, applied(s, files), n))
			if len(before) == 0 || !slices.Equal(before, after) {
				t.Errorf("%s to %d: %d rows before, %d after", d, n, len(before), len(after))
			}
		}
	}
}

func rocksFixtures(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"agg-rocksdb", "agg-rocksdb-changelog", "dedup-rocksdb-changelog", "agg-rocksdb-fv6-zstd"} {
		dirs, _ := filepath.Glob("../../testdata/spark-state/*/" + pat + "/checkpoint")
		out = append(out, dirs...)
	}
	if len(out) < 8 {
		t.Fatalf("%d RocksDB fixtures", len(out))
	}
	return out
}

// unpartitioned drops the partition of each normalised row, sorted.
func unpartitioned(rows []string) []string {
	re := regexp.MustCompile(`,?"partition_id":[0-9]+`)
	var out []string
	for _, r := range rows {
		out = append(out, re.ReplaceAllString(r, ""))
	}
	slices.Sort(out)
	return out
}
