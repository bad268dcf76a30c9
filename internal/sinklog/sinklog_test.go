package sinklog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

var ctx = context.Background()

func entry(path string, size int64, action string) string {
	return fmt.Sprintf(`{"path":%q,"size":%d,"isDir":false,"modificationTime":1,"blockReplication":1,"blockSize":1,"action":%q}`, path, size, action)
}

func logFile(entries ...string) string { return strings.Join(append([]string{"v1"}, entries...), "\n") }

func mem(t *testing.T, files map[string]string) storage.Store {
	t.Helper()
	s := storage.NewMem()
	for p, c := range files {
		if err := s.WriteFile(ctx, p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestDeriveCompactInterval(t *testing.T) {
	// Cases worked from Spark's CompactibleFileStreamLog.deriveCompactInterval.
	for _, tc := range []struct{ def, latest, want int }{
		{10, 7, 8},   // latest+1 <= default: the compact file is the first one
		{10, 9, 10},  // exactly the default
		{5, 11, 6},   // Spark's scaladoc example: 11.compact with default 5 gives 6
		{3, 29, 3},   // 3 divides 30
		{7, 29, 10},  // first divisor of 30 at or above 7
		{20, 29, 30}, // no divisor between 20 and 15: latest+1
		{4, 12, 13},  // 13 is prime
	} {
		if got := DeriveCompactInterval(tc.def, tc.latest); got != tc.want {
			t.Errorf("DeriveCompactInterval(%d, %d) = %d, want %d", tc.def, tc.latest, got, tc.want)
		}
	}
}

func TestCompactInterval(t *testing.T) {
	for _, tc := range []struct {
		compacts []int64
		want     int
		source   string
	}{
		{nil, 10, IntervalDefault},
		{[]int64{7}, 8, IntervalDerived},
		{[]int64{9, 19}, 10, IntervalLatest2},
		{[]int64{2, 5, 8, 11}, 3, IntervalLatest2},
	} {
		got, src := CompactInterval(tc.compacts, 10)
		if got != tc.want || src != tc.source {
			t.Errorf("CompactInterval(%v) = %d %s, want %d %s", tc.compacts, got, src, tc.want, tc.source)
		}
	}
}

func TestValidBatches(t *testing.T) {
	for _, tc := range []struct {
		latest   int64
		interval int
		want     string
	}{
		{0, 10, "{0 0} true"},
		{5, 10, "{0 5} true"},
		{9, 10, "{9 9} true"},
		{12, 10, "{9 12} true"},
		{9, 8, "{7 9} true"},
		// (2^63-1)+1 wraps, as the JVM's Long does: Spark reads from batch 0.
		{math.MaxInt64, 10, "{0 9223372036854775807} true"},
		{-1, 10, "{0 0} false"},
		{5, 0, "{0 0} false"},
	} {
		sp, ok := ValidBatches(tc.latest, tc.interval)
		if got := fmt.Sprint(sp, " ", ok); got != tc.want {
			t.Errorf("ValidBatches(%d, %d) = %s, want %s", tc.latest, tc.interval, got, tc.want)
		}
	}
}

func TestSummarizeNoCompact(t *testing.T) {
	s := mem(t, map[string]string{
		"out/_spark_metadata/0": logFile(entry("/o/a", 10, "add"), entry("/o/b", 20, "add")),
		"out/_spark_metadata/1": logFile(entry("/o/c", 30, "add")),
		"out/_spark_metadata/2": logFile(),
	})
	sum, err := Summarize(ctx, s, "out/_spark_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Latest != 2 || sum.CompactInterval != 10 || sum.IntervalSource != IntervalDefault ||
		fmt.Sprint(sum.Valid) != "{0 2}" || sum.Files != 3 || sum.Bytes != 60 || sum.Entries != 3 {
		t.Errorf("summary = %+v", sum)
	}
	latest, ok, err := Latest(ctx, s, "out/_spark_metadata")
	if err != nil || !ok || latest != 2 {
		t.Errorf("Latest = %d %v %v", latest, ok, err)
	}
}

func TestSummarizeTwoCompacts(t *testing.T) {
	// Interval 3: 2.compact and 5.compact; batches before 5 are kept (no deletion yet).
	files := map[string]string{
		"0":         logFile(entry("/x/0", 1, "add")),
		"2.compact": logFile(entry("/x/0", 1, "add"), entry("/x/2", 2, "add")),
		"3":         logFile(entry("/x/3", 3, "add")),
		"5.compact": logFile(entry("/x/0", 1, "add"), entry("/x/2", 2, "add"), entry("/x/3", 3, "add"), entry("/x/5", 5, "add")),
		"6":         logFile(entry("/x/6", 6, "add"), entry("/x/2", 2, "delete")),
		"7":         logFile(entry("/x/7", 7, "add")),
		// Leftovers: a temp file and checksums, one orphan.
		".8.0c4e1cde-2f7a-4c5b-9d1e-5f2a3b4c5d6e.tmp": "x",
		".7.crc": "c",
		".4.crc": "c",
	}
	sum, err := Summarize(ctx, mem(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	if sum.CompactInterval != 3 || sum.IntervalSource != IntervalLatest2 {
		t.Errorf("interval = %d %s", sum.CompactInterval, sum.IntervalSource)
	}
	if fmt.Sprint(sum.Valid) != "{5 7}" || fmt.Sprint(sum.Compacts) != "[2 5]" || fmt.Sprint(sum.Batches) != "[0 2 3 5 6 7]" {
		t.Errorf("valid %v compacts %v batches %v", sum.Valid, sum.Compacts, sum.Batches)
	}
	// live: /x/0, /x/3, /x/5, /x/6, /x/7 (the delete removes /x/2)
	if sum.Files != 5 || sum.Bytes != 1+3+5+6+7 || sum.Entries != 7 || sum.Deletes != 1 {
		t.Errorf("files %d bytes %d entries %d deletes %d", sum.Files, sum.Bytes, sum.Entries, sum.Deletes)
	}
	if len(sum.Temps) != 1 || len(sum.OrphanCRCs) != 1 || sum.OrphanCRCs[0].Path != ".4.crc" {
		t.Errorf("temps %v orphans %v", sum.Temps, sum.OrphanCRCs)
	}
}

func TestSummarizeMissingAndCorrupt(t *testing.T) {
	files := map[string]string{
		// 9.compact was deleted by hand: Spark's allFiles fails on it.
		"10": logFile(entry("/y/10", 10, "add"), `{"path":"/y/bad","size":"big"}`, entry("/y/10b", 1, "add")),
		"11": logFile(entry("/y/11", 11, "add")),
		"12": "",
	}
	sum, err := Summarize(ctx, mem(t, files), "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sum.Missing) != "[{9 9}]" {
		t.Errorf("missing = %v", sum.Missing)
	}
	if len(sum.Errors) != 2 {
		t.Fatalf("errors = %v", sum.Errors)
	}
	var fe *logformat.Error
	if !errors.As(sum.Errors[0], &fe) || fe.File != "10" || fe.Line != 3 {
		t.Errorf("error 0 = %v", sum.Errors[0])
	}
	if !errors.As(sum.Errors[1], &fe) || fe.File != "12" || fe.Kind != logformat.KindEmpty {
		t.Errorf("error 1 = %v", sum.Errors[1])
	}
	// Entries read before the bad line still count.
	if sum.Files != 2 || sum.Bytes != 21 {
		t.Errorf("files %d bytes %d", sum.Files, sum.Bytes)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	sum, err := Summarize(ctx, storage.NewMem(), "_spark_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if sum.HasLatest || sum.Files != 0 || sum.Valid != (Span{}) {
		t.Errorf("summary = %+v", sum)
	}
	if _, ok, err := Latest(ctx, storage.NewMem(), "_spark_metadata"); ok || err != nil {
		t.Errorf("Latest on empty = %v %v", ok, err)
	}
}

func TestSummarizeFixture(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "spark")
	s, err := storage.NewLocal(filepath.Join(dir, "structured-streaming", "file-sink-log-version-2.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Summarize(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	// 7.compact holds /a/b/0..7 (sizes 1, 100..700); 8 adds /a/b/8 and deletes /a/b/0; 9 adds
	// /a/b/9: live /a/b/1..9.
	if sum.Files != 9 || sum.Bytes != 4500 || sum.Entries != 11 || sum.CompactInterval != 8 || sum.Latest != 9 {
		t.Errorf("summary = %s (%+v)", sum, sum)
	}
}

// A file named 9223372036854775807 makes every batch from 0 on valid (Spark's arithmetic wraps);
// Summarize, Walk, Verify and PlanRebuild answer with runs of that size, never a slice of it.
// Before Span they panicked (makeslice: cap out of range).
func TestHugeBatchIDSizesNothing(t *testing.T) {
	files := map[string]string{
		"_spark_metadata/3":                   logFile(entry("/z/3", 3, "add")),
		"_spark_metadata/9223372036854775807": logFile(entry("/z/max", 7, "add")),
	}
	s := mem(t, files)
	sum, err := Summarize(ctx, s, Dir)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sum.Valid, sum.Missing) != "{0 9223372036854775807} [{0 2} {4 9223372036854775806}]" || sum.Files != 2 {
		t.Errorf("valid %v missing %v files %d", sum.Valid, sum.Missing, sum.Files)
	}
	n := 0
	if _, err := Walk(ctx, s, Dir, func(string, *logformat.SinkFileStatus) { n++ }); err != nil || n != 2 {
		t.Errorf("Walk: %d entries, %v", n, err)
	}
	v, err := Verify(ctx, s, VerifyOptions{MaxProblems: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Counts[CodeLogBatchMissing]; got != math.MaxInt64-1 {
		t.Errorf("missing count = %d, want 2^63-2", got)
	}
	if len(v.Problems) < 5 || v.Problems[0].Path != Dir+"/0" || v.Problems[3].Path != Dir+"/4" {
		t.Errorf("problems = %v", v.Problems)
	}
	rb, err := PlanRebuild(ctx, s, RebuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Unrepairable) != 2 || !strings.Contains(rb.Unrepairable[1], "_spark_metadata/4 to _spark_metadata/9223372036854775806 are gone (9223372036854775803 files)") {
		t.Errorf("unrepairable = %q", rb.Unrepairable)
	}
}

// DeriveCompactInterval finds the same divisor as Spark's scan, without a scan sized by the id.
func TestDeriveCompactIntervalBounded(t *testing.T) {
	scan := func(def, latest int) int {
		n := latest + 1
		if n <= def {
			return n
		}
		if def < n/2 {
			for i := def; i <= n/2; i++ {
				if i > 0 && n%i == 0 {
					return i
				}
			}
		}
		return n
	}
	for def := 1; def <= 12; def++ {
		for latest := 0; latest < 400; latest++ {
			if got, want := DeriveCompactInterval(def, latest), scan(def, latest); got != want {
				t.Fatalf("DeriveCompactInterval(%d, %d) = %d, want %d", def, latest, got, want)
			}
		}
	}
	// 2147483646+1 is the prime 2^31-1: Spark scans a billion candidates; this returns at once.
	if got := DeriveCompactInterval(10, math.MaxInt32-1); got != math.MaxInt32 {
		t.Errorf("prime: %d", got)
	}
	if got := DeriveCompactInterval(10, 1<<61-2); got != 1<<61-1 {
		t.Errorf("beyond Int: %d", got)
	}
}
