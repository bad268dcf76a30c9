package recovery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (review every diff: the goldens are the spec)")

// baseVariants are planned for every scenario.
var baseVariants = []string{"sync", "async", "spark-2.1"}

// variantOptions parses "mode[@version][/cfN][+trigger]".
func variantOptions(t *testing.T, v string) recovery.Options {
	t.Helper()
	var o recovery.Options
	rest, trigger, _ := strings.Cut(v, "+")
	o.Trigger = trigger
	if i := strings.Index(rest, "/cf"); i >= 0 {
		switch rest[i+3:] {
		case "1":
			o.CommitFormatVersion = 1
		case "2":
			o.CommitFormatVersion = 2
		case "3":
			o.CommitFormatVersion = 3
		default:
			t.Fatalf("bad variant %q", v)
		}
		rest = rest[:i]
	}
	mode, version, _ := strings.Cut(rest, "@")
	o.Mode = recovery.Mode(mode)
	o.SparkVersion = version
	return o
}

func goldenName(v string) string {
	return strings.NewReplacer("@", "-", "/", "-", "+", "-").Replace(v) + ".json"
}

func planScenario(t *testing.T, s scenario.Scenario, opts recovery.Options) *recovery.Result {
	t.Helper()
	ctx := context.Background()
	st, forget, err := s.Mem(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer forget()
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	opts.SinkLatest = s.SinkLatest
	res, err := recovery.Plan(ctx, cp, opts)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return res
}

// TestGolden plans every scenario in every variant and compares the JSON
// Result with testdata/<scenario>/<variant>.json. The goldens are the
// executable form of the decision table: each was read against
// spark-semantics.md §5.3/§6.5 when written.
func TestGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range scenario.Tagged("recovery") {
		variants := append(append([]string(nil), baseVariants...), s.Variants...)
		for _, v := range variants {
			name := filepath.Join(s.Name, goldenName(v))
			seen[name] = true
			t.Run(s.Name+"/"+v, func(t *testing.T) {
				res := planScenario(t, s, variantOptions(t, v))
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false) // as `ckpt replay -o json` prints it
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					t.Fatal(err)
				}
				got := buf.Bytes()
				path := filepath.Join("testdata", name)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("missing golden (run go test ./internal/recovery -update and review it): %v", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("plan differs from %s (after review: go test ./internal/recovery -run TestGolden -update)\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			})
		}
	}
	if *update {
		return
	}
	// Every golden on disk must belong to a scenario variant, so that a
	// renamed scenario does not leave a stale spec behind.
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	for _, f := range files {
		rel, _ := filepath.Rel("testdata", f)
		if !seen[rel] {
			t.Errorf("stale golden %s: no scenario variant produces it", f)
		}
	}
}
