package sparkoracle

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// statePrediction is the part of `ckpt replay -o json` a damaged copy's restart confirms.
type statePrediction struct {
	Outcome    string  `json:"outcome"`
	Reason     string  `json:"reason"`
	FailedFile string  `json:"failedFile"`
	Error      *string `json:"error"`
	Exception  string  `json:"exception"`
	ErrorClass string  `json:"errorClass"`
	RootCause  *struct {
		Exception string `json:"exception"`
		Error     string `json:"error"`
	} `json:"rootCause"`
	NextBatch int64 `json:"nextBatch"`
	State     *struct {
		Version int64 `json:"version"`
		Failure *struct {
			SparkError string `json:"sparkError"`
		} `json:"failure"`
	} `json:"state"`
}

// matches says whether Spark's text equals ckpt's, where ckpt writes <n> for a number it cannot
// know (a codec's internal offset, a checksum RocksDB computes over its local copy); ckpt's text
// gets the goldens' normalisation first (RocksDB's file numbers).
func matches(spark, ckpt string) bool {
	ckpt = cleanRun(ckpt)
	if !strings.Contains(ckpt, "<n>") {
		return spark == ckpt
	}
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(ckpt), "<n>", "(?:[0-9]+|<n>)") + "$"
	return regexp.MustCompile(re).MatchString(spark)
}

// TestStateDamageGoldens: for every recorded restart of a damaged copy (always on, no Spark
// needed), the copy is built again from its fixture by the recipe and `ckpt replay
// --spark-version <release>` must predict what Spark did: the failure, the exception the query
// failed with and its message, the root cause and its message, and the error class.
func TestStateDamageGoldens(t *testing.T) {
	byName := map[string]damageCase{}
	for _, c := range loadRecipe(t) {
		byName[c.Name] = c
	}
	files, _ := filepath.Glob(filepath.Join(damageDir, "*", "*.json"))
	if len(files) == 0 {
		t.Fatal("no state damage golden")
	}
	for _, path := range files {
		var g DamageGolden
		readJSON(t, path, &g)
		t.Run(g.Release+"/"+g.Case, func(t *testing.T) {
			c, ok := byName[g.Case]
			if !ok {
				t.Fatalf("golden %s: no such case in recipe.json", path)
			}
			ck := damagedCopy(t, filepath.Join("../../testdata/spark-state", g.Fixture), c, t.TempDir())
			code, stdout, stderr := ckpt(t, "replay", ck, "--spark-version", g.Release, "-o", "json")
			if code != 0 && code != 3 {
				t.Fatalf("ckpt replay: exit %d: %s", code, stderr)
			}
			var p statePrediction
			if err := json.Unmarshal([]byte(Normalize(stdout, map[string]string{ck: "<checkpoint>"})), &p); err != nil {
				t.Fatalf("ckpt replay -o json: %v: %s", err, stdout)
			}
			s := g.Spark
			if (s.Outcome == "ok") != (p.Outcome == "resume") {
				t.Fatalf("Spark: %s %s; ckpt: %s (%s)", s.Outcome, deref(s.Error), p.Outcome, p.Reason)
			}
			if s.Outcome == "ok" {
				return
			}
			top, root := s.Top(), s.Chain[len(s.Chain)-1]
			if top.Exception != p.Exception || !matches(top.Message, deref(p.Error)) {
				t.Errorf("top exception:\nspark: %s: %s\nckpt:  %s: %s", top.Exception, top.Message, p.Exception, deref(p.Error))
			}
			var rx, re string
			if p.RootCause != nil {
				rx, re = p.RootCause.Exception, p.RootCause.Error
			}
			if root.Exception != rx || !matches(root.Message, re) {
				t.Errorf("root cause:\nspark: %s: %s\nckpt:  %s: %s", root.Exception, root.Message, rx, re)
			}
			if sc := s.ChainErrorClass(); sc != p.ErrorClass {
				t.Errorf("error class: spark %q, ckpt %q", sc, p.ErrorClass)
			}
			if p.State == nil || p.State.Version != p.NextBatch || p.State.Failure == nil {
				t.Fatalf("ckpt's state load: %+v, want the version of batch %d and its failure", p.State, p.NextBatch)
			}
			// doctor --deep says the same: its restart line fails as replay does, and the
			// finding on the file Spark fails on carries the planner's text.
			_, dout, _ := ckpt(t, "doctor", ck, "--deep", "--spark-version", g.Release, "-o", "json")
			var rep struct {
				Restart  statePrediction `json:"restart"`
				Findings []struct {
					Code       string  `json:"code"`
					Path       string  `json:"path"`
					SparkError *string `json:"sparkError"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(Normalize(dout, map[string]string{ck: "<checkpoint>"})), &rep); err != nil {
				t.Fatalf("ckpt doctor -o json: %v: %s", err, dout)
			}
			if rep.Restart.Outcome != p.Outcome || deref(rep.Restart.Error) != deref(p.Error) {
				t.Errorf("doctor's restart: %s %s; replay's: %s %s", rep.Restart.Outcome, deref(rep.Restart.Error), p.Outcome, deref(p.Error))
			}
			found := false
			for _, f := range rep.Findings {
				if f.Path == p.FailedFile && f.SparkError != nil && *f.SparkError == p.State.Failure.SparkError {
					found = true
				}
			}
			if !found {
				t.Errorf("doctor --deep has no finding on %s with the planner's text %q: %+v", p.FailedFile, p.State.Failure.SparkError, rep.Findings)
			}
		})
	}
}
