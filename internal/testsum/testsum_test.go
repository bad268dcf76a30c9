package testsum

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func summarise(t *testing.T, file string) (Stage, string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	st, err := Summarise(f, &out, "go test")
	if err != nil {
		t.Fatal(err)
	}
	return st, out.String()
}

// testdata/gotest.jsonl is real `go test -json` output of two packages: a has a passing, a
// skipped and a failing test, a parent with a passing, a skipped and a failing subtest, and a
// parent whose two subtests pass; b does not build.
func TestSummariseCountsLeaves(t *testing.T) {
	st, out := summarise(t, "testdata/gotest.jsonl")
	want := Counts{Passed: 4, Failed: 3, Skipped: 2} // b's build failure is one of the 3
	if st.Counts != want {
		t.Errorf("counts %+v, want %+v", st.Counts, want)
	}
	for _, s := range []string{
		"FAIL example.com/rec/a",
		"  --- FAIL: TestFail\n",
		"want 3, got 4",
		"context line",
		"  --- FAIL: TestParent/three\n",
		"FAIL example.com/rec/b [example.com/rec/b.test] [build failed]",
		"undefined: undefined",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "=== RUN") || strings.Contains(out, "TestPass") {
		t.Errorf("output of passing tests shown:\n%s", out)
	}
	if len(st.Failures) != 3 {
		t.Errorf("failures %q", st.Failures)
	}
}

// testdata/spark.jsonl is real `go test -json` output of a TestSparkLive shaped as the live suite
// is: one subtest per release (4.0.0 skipped as not installed), cases below it.
func TestSummariseSparkPerRelease(t *testing.T) {
	st, _ := summarise(t, "testdata/spark.jsonl")
	want := map[string]Counts{
		"3.5.7": {Passed: 3},
		"4.0.0": {Skipped: 1},
		"4.1.1": {Passed: 2, Failed: 1},
	}
	for rel, c := range want {
		if st.Spark[rel] != c {
			t.Errorf("Spark %s: %+v, want %+v", rel, st.Spark[rel], c)
		}
	}
	if len(st.Spark) != len(want) {
		t.Errorf("releases %v", st.Spark)
	}
}

// A package that fails with no failed test (TestMain exits 1) counts as a failure.
func TestSummarisePackageFailureWithoutTest(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"setup: no server\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p","Elapsed":0.01}
`
	var out bytes.Buffer
	st, err := Summarise(strings.NewReader(in), &out, "go test")
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts.Failed != 1 || !strings.Contains(out.String(), "setup: no server") {
		t.Errorf("counts %+v, output %q", st.Counts, out.String())
	}
}

func TestReportEndsWithTotalLine(t *testing.T) {
	var out bytes.Buffer
	total := Report(&out, []Stage{
		{Name: "vet", Seconds: 12},
		{Name: "go test", Seconds: 812, Counts: Counts{Passed: 10, Failed: 1, Skipped: 2}, Failures: []string{"p TestX"}},
		{Name: "spark", Seconds: 300, Counts: Counts{Passed: 5}, Spark: map[string]Counts{"4.1.1": {Passed: 3}, "3.5.7": {Passed: 2}}},
	})
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != "15 passed, 1 failed, 2 skipped" {
		t.Errorf("last line %q", last)
	}
	if total != (Counts{15, 1, 2}) {
		t.Errorf("total %+v", total)
	}
	s := out.String()
	if strings.Index(s, "Spark 3.5.7: 2 passed") > strings.Index(s, "Spark 4.1.1: 3 passed") || !strings.Contains(s, "13m32s") || !strings.Contains(s, "failed (go test): p TestX") {
		t.Errorf("report:\n%s", s)
	}
}
