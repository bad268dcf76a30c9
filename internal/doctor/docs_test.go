package doctor_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/doctor"
)

// TestDocs keeps docs/doctor.md, the public page of codes, generated from the registry: it fails
// when the committed file differs from what the code says (run with -update to regenerate).
func TestDocs(t *testing.T) {
	p := filepath.Join("..", "..", "docs", "doctor.md")
	want := doctor.Markdown()
	if *update {
		if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/doctor -run TestDocs -update)", err)
	}
	if string(got) != want {
		t.Errorf("docs/doctor.md is stale: run go test ./internal/doctor -run TestDocs -update")
	}
}

var codeID = regexp.MustCompile(`^[a-z]+(-[a-z0-9.]+)*$`)

// TestRegistry checks the registry's own contract: unique kebab-case ids, every text present,
// valid severities, and an --explain page for each.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range doctor.Codes {
		if !codeID.MatchString(c.ID) || seen[c.ID] {
			t.Errorf("bad or duplicate code id %q", c.ID)
		}
		seen[c.ID] = true
		if c.Title == "" || c.Summary == "" || c.Explanation == "" || c.Fix == "" || len(c.Severities) == 0 {
			t.Errorf("%s: incomplete entry", c.ID)
		}
		for _, s := range c.Severities {
			if s.Rank() == 0 {
				t.Errorf("%s: bad severity %q", c.ID, s)
			}
		}
		page, ok := doctor.Explain(c.ID)
		if !ok || !strings.HasPrefix(page, "# "+c.ID+"\n") {
			t.Errorf("%s: no --explain page", c.ID)
		}
		if !strings.Contains(doctor.Markdown(), "\n## "+c.ID+"\n") {
			t.Errorf("%s: missing from docs/doctor.md", c.ID)
		}
	}
	if _, ok := doctor.Explain("no-such-code"); ok {
		t.Error("Explain accepted an unknown code")
	}
}

func TestParseSeverity(t *testing.T) {
	for _, s := range []string{"error", "WARNING", "info"} {
		if _, err := doctor.ParseSeverity(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := doctor.ParseSeverity("fatal"); err == nil {
		t.Error("accepted fatal")
	}
}
