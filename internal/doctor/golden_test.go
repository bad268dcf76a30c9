package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/scenario"
)

var update = flag.Bool("update", false, "rewrite golden files and docs/doctor.md")

// variant is one doctor configuration a golden covers.
type variant struct {
	name string // "" for the default (sync, Spark 3.5)
	opts doctor.Options
}

// variants lists the configurations each scenario is diagnosed under: the default, async for
// async-tagged scenarios, --deep for deep-tagged ones, and the planner variants the scenario
// names ("sync@4.1", "sync@4.0/cf2", "sync@4.0.0+availableNow": release and trigger).
func variants(t *testing.T, s scenario.Scenario) []variant {
	vs := []variant{{}}
	for _, tag := range s.Tags {
		switch tag {
		case "async":
			vs = append(vs, variant{"async", doctor.Options{Mode: recovery.ModeAsync}})
		case "deep":
			vs = append(vs, variant{"deep", doctor.Options{Deep: true}})
		case "spark-2.1":
			vs = append(vs, variant{"spark-2.1", doctor.Options{Mode: recovery.ModeSpark21}})
		}
	}
	for _, v := range s.Variants {
		mode, rest, _ := strings.Cut(v, "@")
		rest, trigger, _ := strings.Cut(rest, "+")
		version, cf, _ := strings.Cut(rest, "/")
		o := doctor.Options{Mode: recovery.Mode(mode), SparkVersion: version, Trigger: trigger}
		if cf == "cf2" {
			o.CommitFormatVersion = 2
		}
		vs = append(vs, variant{strings.ReplaceAll(v, "/", "-"), o})
	}
	return vs
}

func goldenPath(s scenario.Scenario, v variant) string {
	name := s.Name
	if v.name != "" {
		name += "." + v.name
	}
	return filepath.Join("testdata", name+".golden.json")
}

// diagnose runs doctor over a scenario built in memory.
func diagnose(t testing.TB, s scenario.Scenario, opts doctor.Options) *doctor.Report {
	t.Helper()
	ctx := context.Background()
	st, cleanup, err := s.Mem(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if opts.SinkLatest == nil {
		opts.SinkLatest = s.SinkLatest
	}
	opts.Location = "/data/ckpt/" + s.Name
	rep, err := doctor.Run(ctx, cp, opts)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	return rep
}

// golden is what a golden file holds: the findings, and the planner's verdict they rest on
// (the full prediction is the planner's own golden).
type golden struct {
	Findings []doctor.Finding `json:"findings"`
	Restart  struct {
		Outcome string `json:"outcome"`
		Verdict string `json:"verdict"`
	} `json:"restart"`
}

func render1(rep *doctor.Report) []byte {
	var g golden
	g.Findings = rep.Findings
	g.Restart.Outcome = rep.Restart.Outcome
	g.Restart.Verdict = rep.Restart.Verdict()
	var b bytes.Buffer
	if err := render.JSON(&b, g); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// TestGolden diagnoses every scenario in the registry and compares with
// testdata/<scenario>[.<variant>].golden.json. Run with -update after a reviewed change.
func TestGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenario.All() {
		for _, v := range variants(t, s) {
			p := goldenPath(s, v)
			seen[filepath.Base(p)] = true
			t.Run(strings.TrimSuffix(filepath.Base(p), ".golden.json"), func(t *testing.T) {
				got := render1(diagnose(t, s, v.opts))
				if *update {
					if err := os.WriteFile(p, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/doctor -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the golden file (review, then -update):\n%s", p, got)
				}
			})
		}
	}
	// Stale goldens of removed scenarios would keep codes "covered" that no scenario produces.
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden.json"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			if *update {
				_ = os.Remove(f)
				continue
			}
			t.Errorf("%s belongs to no scenario: delete it (or run -update)", f)
		}
	}
}

// TestCodeCoverage requires every registered code to appear in some golden file, so no code in
// the public contract is untested.
func TestCodeCoverage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	// The broker codes need a live broker, not a scenario: broker_test.go writes their goldens.
	brokerFiles, _ := filepath.Glob(filepath.Join("testdata", "broker", "*.golden.json"))
	files = append(files, brokerFiles...)
	// The sink entry codes need a sink log, not a scenario: sinkpaths_test.go writes their goldens.
	sinkFiles, _ := filepath.Glob(filepath.Join("testdata", "sink", "*.golden.json"))
	files = append(files, sinkFiles...)
	stateFiles, _ := filepath.Glob(filepath.Join("testdata", "state", "*.golden.json"))
	files = append(files, stateFiles...)
	// The Delta codes need Delta tables written by Spark: delta_test.go writes their goldens.
	deltaFiles, _ := filepath.Glob(filepath.Join("testdata", "delta", "*.golden.json"))
	files = append(files, deltaFiles...)
	// The repair lock is ckpt's own file: lock_test.go writes its golden.
	lockFiles, _ := filepath.Glob(filepath.Join("testdata", "lock", "*.golden.json"))
	files = append(files, lockFiles...)
	found := map[string]map[doctor.Severity]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, fd := range g.Findings {
			if found[fd.Code] == nil {
				found[fd.Code] = map[doctor.Severity]bool{}
			}
			found[fd.Code][fd.Severity] = true
		}
	}
	for _, c := range doctor.Codes {
		if len(found[c.ID]) == 0 {
			t.Errorf("code %s appears in no golden file: add a scenario to internal/scenario/doctor.go", c.ID)
			continue
		}
		for sv := range found[c.ID] {
			if !slices.Contains(c.Severities, sv) {
				t.Errorf("code %s is reported as %s, which its registry entry does not list", c.ID, sv)
			}
		}
	}
}

// TestFindingsWellFormed checks the contract of every finding in every golden: a registered
// code, one of its severities, a message and a fix, and commands that name the checkpoint.
func TestFindingsWellFormed(t *testing.T) {
	for _, s := range scenario.All() {
		for _, v := range variants(t, s) {
			rep := diagnose(t, s, v.opts)
			for _, f := range rep.Findings {
				c, ok := doctor.Lookup(f.Code)
				if !ok {
					t.Errorf("%s: unregistered code %s", s.Name, f.Code)
					continue
				}
				if !slices.Contains(c.Severities, f.Severity) {
					t.Errorf("%s: %s has severity %s, not in %v", s.Name, f.Code, f.Severity, c.Severities)
				}
				if f.Message == "" || f.Fix == "" || f.Explanation == "" || f.Path == "" {
					t.Errorf("%s: %s lacks a message, fix, explanation or path: %+v", s.Name, f.Code, f)
				}
				for _, cmd := range f.Commands {
					if !strings.Contains(cmd, "/data/ckpt/"+s.Name) {
						t.Errorf("%s: command %q does not name the checkpoint", s.Name, cmd)
					}
				}
			}
			if rep.Restart.Failed() && rep.Max() != doctor.Error {
				t.Errorf("%s/%s: the planner predicts a failed restart but doctor has no error: %s", s.Name, v.name, rep.Restart.Verdict())
			}
		}
	}
}

// TestCommitsAheadWording pins the plural of "commit" in the commits-ahead message (it once read
// "commites 6, 7 have").
func TestCommitsAheadWording(t *testing.T) {
	for _, s := range scenario.All() {
		if s.Name != "commits-ahead" {
			continue
		}
		rep := diagnose(t, s, doctor.Options{})
		for _, f := range rep.Findings {
			if f.Code == doctor.CodeCommitsAhead {
				if !strings.Contains(f.Message, "commits 6, 7 have no offsets") {
					t.Errorf("message = %q, want \"commits 6, 7 have no offsets\"", f.Message)
				}
				return
			}
		}
		t.Fatalf("no %s finding: %+v", doctor.CodeCommitsAhead, rep.Findings)
	}
	t.Fatal("scenario commits-ahead missing")
}
