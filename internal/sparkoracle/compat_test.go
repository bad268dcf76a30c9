package sparkoracle

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

const compatDoc = "../../docs/spark-compatibility.md"

var dateLine = regexp.MustCompile(`(?m)^Produced on \d{4}-\d{2}-\d{2}`)

// compatibility renders docs/spark-compatibility.md from the goldens: what each release did with
// each scenario case, how many of the cases ckpt predicts differently (divergences.json), and a
// summary of the generated cases.
func compatibility(goldens []Golden, divergences []Divergence, damage []DamageGolden, date string) string {
	releases := map[string]bool{}
	byCase := map[string]map[string]Golden{}
	var names []string
	gen := map[string][2]int{}
	for _, g := range goldens {
		releases[g.Release] = true
		if strings.HasPrefix(g.Case, "gen-") {
			n := gen[g.Release]
			if g.Spark.Outcome == "ok" {
				n[0]++
			} else {
				n[1]++
			}
			gen[g.Release] = n
			continue
		}
		if byCase[g.Case] == nil {
			byCase[g.Case] = map[string]Golden{}
			names = append(names, g.Case)
		}
		byCase[g.Case][g.Release] = g
	}
	rels := make([]string, 0, len(releases))
	for r := range releases {
		rels = append(rels, r)
	}
	sort.Strings(rels)
	sort.Strings(names)

	var b strings.Builder
	b.WriteString("# Spark compatibility: what each release does on restart\n\n")
	b.WriteString("Generated from the Spark oracle's goldens (`testdata/spark-oracle/<release>/`, written only by\n" +
		"running Spark: [spark-oracle.md](spark-oracle.md)); do not edit. Regenerate with\n" +
		"`UPDATE_COMPAT_DOC=1 go test ./internal/sparkoracle -run TestCompatibilityDoc`.\n\n")
	fmt.Fprintf(&b, "Produced on %s from Spark %s (Maven Central, OpenJDK 17, `local[1]`, Kafka source on the embedded broker).\n\n", date, strings.Join(rels, ", "))
	b.WriteString("Each cell: `runs 7, 8` lists the batches the restart executed (a re-run batch first); `fails` gives the\n" +
		"error class (4.x) or the root exception, and the message. Where ckpt's prediction differs, the\n" +
		"difference is listed in `testdata/spark-oracle/divergences.json`.\n\n")
	b.WriteString("| case |")
	for _, r := range rels {
		fmt.Fprintf(&b, " Spark %s |", r)
	}
	b.WriteString("\n|---|")
	for range rels {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| `%s` |", n)
		for _, r := range rels {
			g, ok := byCase[n][r]
			if !ok {
				b.WriteString(" (not run) |")
				continue
			}
			fmt.Fprintf(&b, " %s |", cell(g.Spark))
		}
		b.WriteString("\n")
	}
	if divergences != nil {
		per := map[string]int{}
		cases := map[string]map[string]bool{}
		for _, d := range divergences {
			per[d.Release]++
			if cases[d.Release] == nil {
				cases[d.Release] = map[string]bool{}
			}
			cases[d.Release][d.Case] = true
		}
		total := map[string]int{}
		for _, g := range goldens {
			total[g.Release]++
		}
		b.WriteString("\nckpt's predictions (`ckpt replay --spark-version <release>`, TestGoldens) against these goldens:\n\n" +
			"| release | cases | cases where ckpt differs | divergences |\n|---|---|---|---|\n")
		for _, r := range rels {
			fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", r, total[r], len(cases[r]), per[r])
		}
	}
	if len(gen) > 0 {
		b.WriteString("\nGenerated checkpoints (the planner property test's generator, fixed seed):\n\n| release | cases | resumed | failed |\n|---|---|---|---|\n")
		for _, r := range rels {
			n := gen[r]
			fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", r, n[0]+n[1], n[0], n[1])
		}
	}
	if len(damage) > 0 {
		b.WriteString("\n## Damaged state\n\nRestarts of damaged copies of the Spark-written state fixtures (`testdata/spark-state-damage/<release>/`,\n" +
			"derived by its `recipe.json`; the query's batch 5 loads state version 5, damaged in partition 1). ckpt's\n" +
			"predictions against these goldens: TestStateDamageGoldens ([replay.md](replay.md#state-the-first-batch-loads)).\n\n| case |")
		byDamage := map[string]map[string]DamageGolden{}
		var cases []string
		for _, g := range damage {
			if byDamage[g.Case] == nil {
				byDamage[g.Case] = map[string]DamageGolden{}
				cases = append(cases, g.Case)
			}
			byDamage[g.Case][g.Release] = g
		}
		sort.Strings(cases)
		for _, r := range rels {
			fmt.Fprintf(&b, " Spark %s |", r)
		}
		b.WriteString("\n|---|")
		for range rels {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, n := range cases {
			fmt.Fprintf(&b, "| `%s` |", n)
			for _, r := range rels {
				if g, ok := byDamage[n][r]; ok {
					fmt.Fprintf(&b, " %s |", cell(g.Spark))
				} else {
					b.WriteString(" (no fixture) |")
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// loadDamageGoldens reads testdata/spark-state-damage/<release>/*.json.
func loadDamageGoldens(t testing.TB) []DamageGolden {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(damageDir, "*", "*.json"))
	out := make([]DamageGolden, 0, len(files))
	for _, f := range files {
		var g DamageGolden
		readJSON(t, f, &g)
		out = append(out, g)
	}
	return out
}

func cell(r Result) string {
	esc := strings.NewReplacer("|", `\|`, "\n", " ", "`", "'")
	if r.Outcome == "ok" {
		if len(r.Batches) == 0 {
			return "runs no batch"
		}
		ids := make([]string, len(r.Batches))
		for i, bt := range r.Batches {
			ids[i] = fmt.Sprint(bt.ID)
		}
		return "runs " + strings.Join(ids, ", ")
	}
	what := deref(r.ErrorClass)
	if what == "" || what == "STREAM_FAILED" { // only the query's wrapper has a class: name the cause
		what = r.Exception[strings.LastIndex(r.Exception, ".")+1:]
	}
	msg := deref(r.Error)
	if len(msg) > 140 {
		msg = msg[:140] + "…"
	}
	return fmt.Sprintf("fails `%s`: %s", what, esc.Replace(msg))
}

// TestCompatibilityDoc fails when docs/spark-compatibility.md is not what the goldens give
// (the production date aside); UPDATE_COMPAT_DOC=1 rewrites it with today's date.
func TestCompatibilityDoc(t *testing.T) {
	goldens := loadGoldens(t)
	var divergences []Divergence
	readJSON(t, divergencesFile, &divergences)
	old, err := os.ReadFile(compatDoc)
	if os.Getenv("UPDATE_COMPAT_DOC") == "1" {
		doc := compatibility(goldens, divergences, loadDamageGoldens(t), time.Now().UTC().Format("2006-01-02"))
		if err := os.WriteFile(compatDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%v: generate it with UPDATE_COMPAT_DOC=1 go test ./internal/sparkoracle -run TestCompatibilityDoc", err)
	}
	date := "0000-00-00"
	if m := dateLine.Find(old); m != nil {
		date = strings.TrimPrefix(string(m), "Produced on ")
	}
	if want := compatibility(goldens, divergences, loadDamageGoldens(t), date); string(old) != want {
		t.Errorf("%s is stale (the goldens changed): UPDATE_COMPAT_DOC=1 go test ./internal/sparkoracle -run TestCompatibilityDoc", compatDoc)
	}
}
