package doctor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/state"
)

// swapCase is one line of testdata/spark-state-swap/cases.tsv.
type swapCase struct{ name, spark, fixture, donor string }

func swapCases(t *testing.T) []swapCase {
	t.Helper()
	data, err := os.ReadFile("../../testdata/spark-state-swap/cases.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var out []swapCase
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("cases.tsv: bad line %q", l)
		}
		out = append(out, swapCase{f[0], f[1], f[2], f[3]})
	}
	return out
}

// applySwap is the recipe of scripts/spark-schema-swap.py: the fixture's checkpoint with the
// donor's state/0/0/_metadata/schema and .schema.crc.
func applySwap(t *testing.T, c swapCase) string {
	t.Helper()
	dir := copyFixture(t, c.fixture)
	for _, f := range []string{"schema", ".schema.crc"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/spark-state", c.donor, "checkpoint/state/0/0/_metadata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state/0/0/_metadata", f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sparkGolden is what spark/StateRestart.java recorded.
type sparkGolden struct {
	Outcome    string  `json:"outcome"`
	Exception  string  `json:"exception"`
	Error      string  `json:"error"`
	ErrorClass *string `json:"errorClass"`
	// Chain is the query's exception chain from StreamingQueryException down.
	Chain []struct {
		Exception string `json:"exception"`
		Message   string `json:"message"`
	} `json:"chain"`
}

// placeholderMatch turns a text with the query's schema placeholders into a pattern that
// matches Spark's text with the query's schemas in their place.
func placeholderMatch(text string) *regexp.Regexp {
	q := regexp.QuoteMeta(text)
	for _, p := range []string{recovery.QueryKeySchema, recovery.QueryValueSchema} {
		q = strings.ReplaceAll(q, regexp.QuoteMeta(p), `StructType\(.*\)`)
	}
	return regexp.MustCompile(`^` + q + `$`)
}

// taskPlaceholders matches the stage, task and host placeholders of a text with what Spark
// printed there.
var taskPlaceholders = strings.NewReplacer(regexp.QuoteMeta("<stage>"), `[0-9.]+`, regexp.QuoteMeta("<tid>"), `[0-9]+`, regexp.QuoteMeta("<host>"), `\S+`)

// checkRestart compares the planner's prediction res (doctor's restart line, ckpt replay's
// verdict) with Spark's restart g: it resumes, or it fails with Spark's exception under the
// StreamingQueryException (3.5: the job's, with the schema exception as the root cause; 4.x:
// the schema exception), its text with the query's schemas and the task's ids as placeholders,
// and its error class.
func checkRestart(t *testing.T, who string, res *recovery.Result, g sparkGolden) {
	t.Helper()
	if g.Outcome == "ok" {
		if res.Failed() {
			t.Errorf("%s: Spark resumed, the planner says it fails: %s %v", who, res.Reason, res.ErrorText())
		}
		return
	}
	if !res.Failed() || res.Reason != recovery.ReasonStateSchemaMismatch || res.FailedFile != "state/0/0/_metadata/schema" {
		t.Fatalf("%s: Spark failed with %s, the planner: outcome %s reason %q file %q", who, g.Exception, res.Outcome, res.Reason, res.FailedFile)
	}
	if len(g.Chain) < 2 {
		t.Fatalf("golden chain %d long", len(g.Chain))
	}
	top := g.Chain[1].Exception + ": " + g.Chain[1].Message
	if i := strings.Index(top, "\n\tat "); i >= 0 {
		top = top[:i] // the task's stack trace, which Spark's job failure carries
	}
	got := res.Exception + ": " + res.ErrorText()
	pat := regexp.MustCompile(taskPlaceholders.Replace(placeholderMatch(got).String()))
	if !pat.MatchString(top) {
		t.Errorf("%s: error\n%s\nSpark\n%s", who, got, top)
	}
	rc := res.RootCause
	if rc == nil || !placeholderMatch(rc.Exception+": "+rc.Error).MatchString(g.Exception+": "+g.Error) {
		t.Errorf("%s: root cause %+v, Spark %s: %s", who, rc, g.Exception, g.Error)
	}
	want := ""
	if g.ErrorClass != nil {
		want = *g.ErrorClass
	}
	if res.ErrorClass != want {
		t.Errorf("%s: error class %q, Spark %q", who, res.ErrorClass, want)
	}
}

// replayRestart is ckpt replay's prediction for dir: state.Restart with the files read.
func replayRestart(t *testing.T, dir, spark string) *recovery.Result {
	t.Helper()
	res, _, err := state.Restart(context.Background(), loadCheckpoint(t, dir), recovery.Options{SparkVersion: spark}, true)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestStateSchemaSwapMatchesSpark applies every schema swap of testdata/spark-state-swap to its
// fixture, runs doctor --deep with the release Spark restarted it on, and compares with what
// Spark did: where the restart failed, an error state-schema-mismatch whose sparkError is
// Spark's exception and message (the query's own schemas, which the checkpoint does not hold,
// matched by the placeholders); where it resumed (a dropDuplicates store, and the unswapped
// controls), no error.
func TestStateSchemaSwapMatchesSpark(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range swapCases(t) {
		t.Run(c.spark+"/"+c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("../../testdata/spark-state-swap", c.spark, c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g sparkGolden
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatal(err)
			}
			dir := applySwap(t, c)
			rep := runDoctor(t, dir, Options{Deep: true, SparkVersion: c.spark})
			checkRestart(t, "doctor", rep.Restart, g)
			checkRestart(t, "replay", replayRestart(t, dir, c.spark), g)
			f := findCode(rep, CodeStateSchemaMismatch)
			if g.Outcome == "ok" {
				if f != nil && (f.Severity == Error || f.SparkError != nil) {
					t.Errorf("Spark %s resumed, doctor says %s: %s (Spark: %v)", c.spark, f.Severity, f.Message, f.SparkError)
				}
				if c.fixture != c.donor && f == nil {
					t.Errorf("no finding for a schema that is not the store's")
				}
				return
			}
			seen[c.spark] = true
			if f == nil || f.Severity != Error || f.SparkError == nil {
				t.Fatalf("Spark %s failed with %s, doctor: %+v", c.spark, g.Exception, rep.Findings)
			}
			if f.Path != "state/0/0/_metadata/schema" {
				t.Errorf("path %s", f.Path)
			}
			want := g.Exception + ": " + g.Error
			if !placeholderMatch(*f.SparkError).MatchString(want) {
				t.Errorf("sparkError\n%s\nSpark\n%s", *f.SparkError, want)
			}
			if g.ErrorClass != nil && !strings.Contains(*f.SparkError, "["+*g.ErrorClass+"]") {
				t.Errorf("sparkError lacks error class %s", *g.ErrorClass)
			}
			if rep.Max() != Error {
				t.Errorf("report max severity %s", rep.Max())
			}
		})
	}
	for _, rel := range []string{"3.5.7", "4.0.0", "4.1.1", "4.2.0"} {
		if !seen[rel] {
			t.Errorf("no failed restart of Spark %s compared", rel)
		}
	}
}

// TestNoSchemaMismatchOnSparkFixtures: doctor --deep finds no state-schema-mismatch on any
// checkpoint in testdata/spark-state as Spark left it (every release, every case).
func TestNoSchemaMismatchOnSparkFixtures(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/spark-state/*/*/checkpoint")
	if len(dirs) < 38 {
		t.Fatalf("%d fixtures", len(dirs))
	}
	for _, dir := range dirs {
		rep := runDoctor(t, dir, Options{Deep: true})
		if f := findCode(rep, CodeStateSchemaMismatch); f != nil {
			t.Errorf("%s: %s", dir, f.Message)
		}
	}
}
