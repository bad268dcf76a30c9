// Package testsum reads the event stream of `go test -json` and says what a person waiting on
// scripts/test.sh wants to know: one line per package as it finishes, the output of what failed,
// and at the end the tests passed, failed and skipped per stage and the live Spark cases per
// release. The last line of the report is plain, `N passed, N failed, N skipped`, for CI.
package testsum

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json), with the fields read here.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string // build-output and build-fail lines
	// FailedBuild is set on a package's fail when its test binary did not build (counted at build-fail).
	FailedBuild string
}

// Counts are tests passed, failed and skipped.
type Counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

func (c *Counts) add(o Counts) {
	c.Passed += o.Passed
	c.Failed += o.Failed
	c.Skipped += o.Skipped
}

func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

// Stage is the result of one stage of the suite.
type Stage struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Counts  Counts  `json:"counts"`
	// Spark holds the cases of TestSparkLive per release (its first-level subtests).
	Spark map[string]Counts `json:"spark,omitempty"`
	// Failures names what failed: tests (package and name) and packages that did not build.
	Failures []string `json:"failures,omitempty"`
}

type testKey struct{ pkg, name string }

// Summarise reads `go test -json` from r until EOF. As packages finish, it writes to w one line
// each (ok, FAIL, or no tests) and, for a failed test or package, the output it printed. Tests
// are counted at their leaves: a test with subtests counts through its subtests, and counts
// itself only when it fails and none of them did (a failure after its subtests ran).
func Summarise(r io.Reader, w io.Writer, name string) (Stage, error) {
	st := Stage{Name: name}
	result := map[testKey]string{}
	var order []testKey
	output := map[testKey][]string{} // per test, and per package under name ""
	build := map[string][]string{}   // build output per import path
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		var e event
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &e) != nil {
			// go test writes a few lines that are not JSON (a vet failure, a go command error): pass them on.
			fmt.Fprintf(w, "%s\n", raw)
			continue
		}
		switch e.Action {
		case "build-output":
			build[e.ImportPath] = append(build[e.ImportPath], e.Output)
		case "build-fail":
			fmt.Fprintf(w, "FAIL %s [build failed]\n", e.ImportPath)
			for _, o := range build[e.ImportPath] {
				fmt.Fprint(w, indent(o))
			}
			st.Counts.Failed++
			st.Failures = append(st.Failures, e.ImportPath+" [build failed]")
		case "output":
			k := testKey{e.Package, e.Test}
			output[k] = append(output[k], e.Output)
		case "pass", "fail", "skip":
			k := testKey{e.Package, e.Test}
			if e.Test != "" {
				if _, seen := result[k]; !seen {
					order = append(order, k)
				}
				result[k] = e.Action
				if e.Action != "fail" {
					delete(output, k)
				}
				continue
			}
			if e.FailedBuild != "" {
				delete(output, k)
				continue
			}
			if pkgDone(w, e, result, order, output) {
				// Failed with no failed test (a panic in TestMain, a timeout before any test
				// ran, an exit in init): one failure, so the total never hides it.
				st.Counts.Failed++
				st.Failures = append(st.Failures, e.Package+" [failed outside any test: see its output]")
			}
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("go test -json line %d: %w", line, err)
	}
	for _, k := range order {
		if isParent(k, order) && !(result[k] == "fail" && !anyChildFailed(k, order, result)) {
			continue
		}
		c := &st.Counts
		if rel, ok := sparkRelease(k.name); ok {
			if st.Spark == nil {
				st.Spark = map[string]Counts{}
			}
			sc := st.Spark[rel]
			count(&sc, result[k])
			st.Spark[rel] = sc
		}
		count(c, result[k])
		if result[k] == "fail" {
			st.Failures = append(st.Failures, k.pkg+" "+k.name)
		}
	}
	return st, nil
}

// pkgDone writes the line of a finished package and, if it failed, the output of its failed
// tests. It reports whether the package failed although none of its tests did.
func pkgDone(w io.Writer, e event, result map[testKey]string, order []testKey, output map[testKey][]string) bool {
	el := time.Duration(e.Elapsed * float64(time.Second)).Round(10 * time.Millisecond)
	switch e.Action {
	case "pass":
		fmt.Fprintf(w, "ok   %s %s\n", e.Package, el)
	case "skip":
		fmt.Fprintf(w, "--   %s [no test files]\n", e.Package)
	case "fail":
		fmt.Fprintf(w, "FAIL %s %s\n", e.Package, el)
		failedTest := false
		for _, k := range order {
			if k.pkg != e.Package || result[k] != "fail" {
				continue
			}
			failedTest = true
			if isParent(k, order) {
				continue // its failed subtests print their own output
			}
			fmt.Fprintf(w, "  --- FAIL: %s\n", k.name)
			for _, o := range output[k] {
				if strings.HasPrefix(o, "=== ") || strings.HasPrefix(strings.TrimSpace(o), "--- FAIL") {
					continue
				}
				fmt.Fprint(w, indent(o))
			}
		}
		if !failedTest {
			for _, o := range output[testKey{e.Package, ""}] {
				fmt.Fprint(w, indent(o))
			}
			return true
		}
	}
	return false
}

func count(c *Counts, action string) {
	switch action {
	case "pass":
		c.Passed++
	case "fail":
		c.Failed++
	case "skip":
		c.Skipped++
	}
}

func isParent(k testKey, order []testKey) bool {
	for _, o := range order {
		if o.pkg == k.pkg && strings.HasPrefix(o.name, k.name+"/") {
			return true
		}
	}
	return false
}

func anyChildFailed(k testKey, order []testKey, result map[testKey]string) bool {
	for _, o := range order {
		if o.pkg == k.pkg && strings.HasPrefix(o.name, k.name+"/") && result[o] == "fail" {
			return true
		}
	}
	return false
}

// sparkRelease is the release of a TestSparkLive case: its first-level subtest name.
func sparkRelease(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "TestSparkLive/")
	if !ok {
		return "", false
	}
	rel, _, _ := strings.Cut(rest, "/")
	return rel, true
}

func indent(s string) string {
	if s == "" {
		return s
	}
	return "    " + s
}

// Report writes the summary of the stages: a line per stage with its time and counts, the Spark
// cases per release, what failed, and last the plain total line CI reads.
func Report(w io.Writer, stages []Stage) Counts {
	var total Counts
	nameW := len("stage")
	for _, s := range stages {
		nameW = max(nameW, len(s.Name))
	}
	fmt.Fprintln(w, "summary:")
	for _, s := range stages {
		res := s.Counts.String()
		if s.Counts == (Counts{}) {
			res = "ok" // a stage that runs no tests (vet, the servers)
		}
		fmt.Fprintf(w, "  %-*s  %8s  %s\n", nameW, s.Name, (time.Duration(s.Seconds) * time.Second).String(), res)
		total.add(s.Counts)
		rels := make([]string, 0, len(s.Spark))
		for r := range s.Spark {
			rels = append(rels, r)
		}
		sort.Strings(rels)
		for _, r := range rels {
			fmt.Fprintf(w, "  %-*s  %8s  Spark %s: %s\n", nameW, "", "", r, s.Spark[r])
		}
	}
	for _, s := range stages {
		for _, f := range s.Failures {
			fmt.Fprintf(w, "  failed (%s): %s\n", s.Name, f)
		}
	}
	fmt.Fprintln(w, total)
	return total
}
