package sinklog

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestRebuildMissingCompactIsSparksBytes(t *testing.T) {
	s := storage.NewMem()
	files := sparkSink(t, s, 21, 10)
	// Batch 19's own entry lives only in 19.compact; a plain file of the same id (an older
	// interval's) is what lets it come back, so keep a copy of that one entry there.
	must(t, s.Delete(ctx, Dir+"/19.compact"))
	rb, err := PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Compacts) != 1 || len(rb.Unrepairable) != 0 {
		t.Fatalf("plan %+v", rb)
	}
	c := rb.Compacts[0]
	if c.Path != Dir+"/19.compact" || c.Reason != "missing" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "batch 19's own entries") {
		t.Fatalf("compact %+v", c)
	}
	// Without batch 19's own entry the rebuilt file is Spark's minus that last line.
	want := files[Dir+"/19.compact"]
	want = want[:bytes.LastIndexByte(want, '\n')]
	if !bytes.Equal(c.Data, want) {
		t.Fatalf("rebuilt\n%s\nwant\n%s", c.Data, want)
	}
	if strings.Join(c.From, ",") != "_spark_metadata/9.compact,_spark_metadata/10,_spark_metadata/11,_spark_metadata/12,_spark_metadata/13,_spark_metadata/14,_spark_metadata/15,_spark_metadata/16,_spark_metadata/17,_spark_metadata/18" {
		t.Errorf("from %v", c.From)
	}
}

func TestRebuildCorruptCompactSalvagesOwnEntries(t *testing.T) {
	s := storage.NewMem()
	files := sparkSink(t, s, 21, 10)
	good := files[Dir+"/19.compact"]
	must(t, s.Delete(ctx, Dir+"/19.compact"))
	// Damaged at the very end: the last line is cut short. Every entry before it parses.
	must(t, s.WriteFile(ctx, Dir+"/19.compact", append(append([]byte{}, good...), []byte("\n{\"path\":")...)))
	rb, err := PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Compacts) != 1 {
		t.Fatalf("plan %+v", rb)
	}
	c := rb.Compacts[0]
	if c.Reason != "corrupt" || c.Replaces != Dir+"/19.compact" || c.Salvaged != 1 || len(c.Warnings) != 0 {
		t.Fatalf("compact %+v", c)
	}
	if !bytes.Equal(c.Data, good) {
		t.Fatalf("rebuilt\n%s\nwant\n%s", c.Data, good)
	}
}

func TestRebuildRecursesAndRefuses(t *testing.T) {
	s := storage.NewMem()
	files := sparkSink(t, s, 31, 10)
	must(t, s.Delete(ctx, Dir+"/29.compact"))
	must(t, s.Delete(ctx, Dir+"/19.compact"))
	// Compacts [9] left: the interval is derived from 9.compact alone (10), and 29 is rebuilt
	// through an in-memory 19.
	rb, err := PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Compacts) != 1 || rb.Compacts[0].Batch != 29 {
		t.Fatalf("plan %+v", rb)
	}
	want := files[Dir+"/29.compact"]
	want = want[:bytes.LastIndexByte(want, '\n')]
	// 19's own entry is lost with 19.compact too.
	lines := strings.Split(string(want), "\n")
	var kept []string
	for _, l := range lines {
		if !strings.Contains(l, "part-00019") {
			kept = append(kept, l)
		}
	}
	if string(rb.Compacts[0].Data) != strings.Join(kept, "\n") {
		t.Fatalf("rebuilt\n%s", rb.Compacts[0].Data)
	}

	// A batch file the rebuild needs is gone: refused, with the reason.
	must(t, s.Delete(ctx, Dir+"/25"))
	rb, err = PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Compacts) != 0 || len(rb.Unrepairable) != 1 || !strings.Contains(rb.Unrepairable[0], "_spark_metadata/25") {
		t.Fatalf("plan %+v", rb)
	}
}

func TestRebuildDropMissingAndRetention(t *testing.T) {
	s := storage.NewMem()
	sparkSink(t, s, 21, 10)
	must(t, s.Delete(ctx, Dir+"/19.compact"))
	must(t, s.Delete(ctx, "part-00004.parquet"))
	rb, err := PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rb.Compacts[0]; c.MissingData != 1 || c.Entries != 19 || len(c.Dropped) != 0 {
		t.Fatalf("kept: %+v", c)
	}
	rb, err = PlanRebuild(ctx, s, RebuildOptions{DropMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := rb.Compacts[0]; c.Entries != 18 || len(c.Dropped) != 1 || !strings.HasSuffix(c.Dropped[0], "part-00004.parquet") || bytes.Contains(c.Data, []byte("part-00004")) {
		t.Fatalf("dropped: %+v", c)
	}
	// Entries are stamped 1700000000000+batch ms; a retention that ends after batch 9 keeps 10..18.
	now := func() time.Time { return time.UnixMilli(1700000000000 + 9).Add(time.Second) }
	rb, err = PlanRebuild(ctx, s, RebuildOptions{Retention: time.Second - time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if c := rb.Compacts[0]; c.Expired != 10 || c.Entries != 9 {
		t.Fatalf("retention: expired %d entries %d", c.Expired, c.Entries)
	}
}

// TestRebuildSparkFixture rebuilds Spark's own 7.compact (compact interval 8) from batch files
// holding its entries one per batch: the bytes are Spark's (which end without a newline; the
// fixture's trailing newline is the test resource's).
func TestRebuildSparkFixture(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "spark", "structured-streaming", "file-sink-log-version-2.1.0")
	compact, err := os.ReadFile(filepath.Join(dir, "7.compact"))
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewMem()
	lines := strings.Split(strings.TrimSuffix(string(compact), "\n"), "\n")
	// 7.compact's last line is batch 7's own entry, which only the compaction file holds.
	for i, l := range lines[1 : len(lines)-1] {
		must(t, s.WriteFile(ctx, Dir+"/"+strconv.Itoa(i), []byte("v1\n"+l)))
	}
	for _, n := range []string{"8", "9"} {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.WriteFile(ctx, Dir+"/"+n, data))
	}
	// 7.compact is the only compaction and it is gone: with the default interval 10 Spark would
	// read batch 9 alone, so the interval must be given, as --compact-interval does.
	rb, err := PlanRebuild(ctx, s, RebuildOptions{DefaultInterval: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Compacts) != 1 {
		t.Fatalf("plan %+v", rb)
	}
	want := strings.Join(lines[:len(lines)-1], "\n")
	if string(rb.Compacts[0].Data) != want {
		t.Fatalf("rebuilt\n%s\nwant\n%s", rb.Compacts[0].Data, want)
	}
}

// --drop-missing rewrites a sound latest compaction file without the entries whose files are
// gone; the entries of the batch files after it stay (each is a batch's own record).
func TestRebuildDropMissingFromSoundCompact(t *testing.T) {
	s := storage.NewMem()
	files := sparkSink(t, s, 21, 10)
	must(t, s.Delete(ctx, "part-00004.parquet"))
	must(t, s.Delete(ctx, "part-00021.parquet"))
	rb, err := PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil || len(rb.Compacts) != 0 {
		t.Fatalf("without --drop-missing: %+v %v", rb, err)
	}
	rb, err = PlanRebuild(ctx, s, RebuildOptions{DropMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Compacts) != 1 {
		t.Fatalf("plan %+v", rb)
	}
	c := rb.Compacts[0]
	if c.Reason != "drop-missing" || c.Replaces != Dir+"/19.compact" || len(c.Dropped) != 1 || c.Entries != 19 {
		t.Fatalf("compact %+v", c)
	}
	var kept []string
	for _, l := range strings.Split(string(files[Dir+"/19.compact"]), "\n") {
		if !strings.Contains(l, "part-00004") {
			kept = append(kept, l)
		}
	}
	if string(c.Data) != strings.Join(kept, "\n") {
		t.Fatalf("rewritten\n%s", c.Data)
	}
}
