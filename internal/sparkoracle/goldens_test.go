package sparkoracle

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/root"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

const divergencesFile = goldenDir + "/divergences.json"

// loadGoldens reads every testdata/spark-oracle/<release>/<case>.json.
func loadGoldens(t testing.TB) []Golden {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	var out []Golden
	for _, p := range paths {
		var g Golden
		readJSON(t, p, &g)
		if g.Case+".json" != filepath.Base(p) || g.Release != filepath.Base(filepath.Dir(p)) {
			t.Fatalf("%s holds case %q of release %q", p, g.Case, g.Release)
		}
		out = append(out, g)
	}
	return out
}

// predict runs `ckpt replay CHECKPOINT --spark-version RELEASE -o json --allow-empty` (with
// --mode, --trigger and --sink as the case ran) in process on the case's checkpoint, rebuilt from its source.
func predict(t testing.TB, g Golden, dirs map[string][2]string) Prediction {
	t.Helper()
	c, ok := caseByName(g.Case)
	if !ok {
		t.Fatalf("golden %s/%s: no such case any more (remove the golden or restore the case)", g.Release, g.Case)
	}
	if c.checkpoint != g.Checkpoint {
		t.Fatalf("golden %s/%s was observed on %s, the case is now %s", g.Release, g.Case, g.Checkpoint, c.checkpoint)
	}
	// replay only reads: the releases of a case share its checkpoint.
	d, ok := dirs[g.Case]
	if !ok {
		ck, out := c.layout(t, t.TempDir())
		d = [2]string{ck, out}
		dirs[g.Case] = d
	}
	ck, out := d[0], d[1]
	// --allow-empty: some cases lay out an empty checkpoint (a query that has not started), which
	// Spark starts from scratch; without it replay refuses the empty directory.
	// The exact release: some of Spark's behaviour is patch-release specific (SPARK-55271 in
	// 4.1.0 and 4.1.1), and the goldens are of one patch release each. The trigger too: 4.0.0
	// checks a re-run's Kafka partitions under availableNow.
	args := []string{"replay", ck, "--spark-version", g.Release, "--mode", g.Mode, "-o", "json", "--allow-empty"}
	if g.Trigger != "" {
		args = append(args, "--trigger", g.Trigger)
	}
	if g.SinkLatest != nil {
		args = append(args, "--sink", out)
	}
	io, _, stdout, stderr := iostreams.Test()
	env := &cli.Env{IO: io, Version: "test", Now: time.Now, Getenv: func(string) string { return "" }}
	code := root.Execute(context.Background(), env, args)
	if code != 0 && code != 3 {
		t.Fatalf("ckpt %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	var p Prediction
	norm := Normalize(stdout.String(), map[string]string{ck: "<checkpoint>", out: "<output>"})
	if err := json.Unmarshal([]byte(norm), &p); err != nil {
		t.Fatalf("ckpt replay -o json: %v: %s", err, stdout)
	}
	return p
}

// TestGoldens compares ckpt's prediction with every stored Spark observation. The disagreements
// must be exactly those of divergences.json: a new one fails, and so does one that is fixed
// until it is removed from the file. UPDATE_DIVERGENCES=1 rewrites the file from the observed set
// (keeping the reasons of the entries that stay); the goldens themselves only come from Spark.
func TestGoldens(t *testing.T) {
	goldens := loadGoldens(t)
	if len(goldens) == 0 {
		t.Fatal("no goldens in testdata/spark-oracle")
	}
	var observed []Divergence
	dirs := map[string][2]string{}
	for _, g := range goldens {
		observed = append(observed, Compare(g, predict(t, g, dirs))...)
	}
	SortDivergences(observed)

	var known []Divergence
	if b, err := os.ReadFile(divergencesFile); err == nil {
		if err := json.Unmarshal(b, &known); err != nil {
			t.Fatalf("%s: %v", divergencesFile, err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	knownBy := map[string]Divergence{}
	for _, d := range known {
		knownBy[d.Key()] = d
	}
	if os.Getenv("UPDATE_DIVERGENCES") == "1" {
		for i, d := range observed {
			if k, ok := knownBy[d.Key()]; ok {
				observed[i].Reason = k.Reason
			} else {
				observed[i].Reason = "not yet explained"
			}
		}
		if observed == nil {
			observed = []Divergence{}
		}
		writeJSON(t, divergencesFile, observed)
		t.Logf("wrote %d divergences to %s", len(observed), divergencesFile)
		return
	}
	seen := map[string]bool{}
	for _, d := range observed {
		seen[d.Key()] = true
		if _, ok := knownBy[d.Key()]; !ok {
			t.Errorf("new divergence: %s", d.Line())
		}
	}
	for _, d := range known {
		if !seen[d.Key()] {
			t.Errorf("divergence no longer observed (fixed? remove it from divergences.json, or UPDATE_DIVERGENCES=1): %s", d.Line())
		}
	}
}

// Compare must report every kind of disagreement and nothing when ckpt agrees with Spark.
func TestCompare(t *testing.T) {
	str := func(s string) *string { return &s }
	i64 := func(v int64) *int64 { return &v }
	g := Golden{Case: "c", Release: "3.5.7", Spark: Result{Outcome: "ok", Batches: []Batch{{ID: 7, Sources: []BatchSource{{
		StartOffset: json.RawMessage(`{"t":{"1":5,"0":4}}`), EndOffset: json.RawMessage(`{"t":{"0":8,"1":9}}`)}}}}}}
	p := Prediction{Outcome: "resume", NextBatch: 7, RerunBatch: i64(7)}
	p.RerunRange = &struct {
		Start []json.RawMessage `json:"start"`
		End   []json.RawMessage `json:"end"`
	}{Start: []json.RawMessage{json.RawMessage(`{"t":{"0":4,"1":5}}`)}, End: []json.RawMessage{json.RawMessage(`{"t":{"0":8,"1":9}}`)}}
	if d := Compare(g, p); len(d) != 0 {
		t.Fatalf("agreeing prediction reported %v", d)
	}
	p.RerunRange.End[0] = json.RawMessage(`{"t":{"0":8,"1":10}}`)
	if d := Compare(g, p); len(d) != 1 || d[0].Field != "rerunRange.end[0]" || d[0].Spark != `{"t":{"0":8,"1":9}}` {
		t.Fatalf("range: %v", d)
	}
	p.NextBatch, p.RerunBatch = 8, nil
	if d := Compare(g, p); len(d) != 1 || d[0].Field != "firstBatch" || d[0].Spark != "7" || d[0].Ckpt != "8" {
		t.Fatalf("first batch: %v", d)
	}
	g.Spark = Result{Outcome: "error", Error: str("Set(t-2) are gone")}
	p = Prediction{Outcome: "fail", NextBatch: -1, Error: str("other")}
	if d := Compare(g, p); len(d) != 1 || d[0].Field != "error" {
		t.Fatalf("error: %v", d)
	}
	p.ErrorInexact = true
	if d := Compare(g, p); len(d) != 0 {
		t.Fatalf("inexact error compared: %v", d)
	}
	p.Outcome = "resume"
	if d := Compare(g, p); len(d) != 1 || d[0].Field != "outcome" || d[0].Spark != "error: Set(t-2) are gone" || d[0].Ckpt != "resume: other" {
		t.Fatalf("outcome: %v", d)
	}
	n := Normalize("file:/tmp/x/ck/offsets/7 in spark-kafka-source-0a1b2c3d-0000-4000-8000-00000000abcd--123-executor at /tmp/x/ck",
		map[string]string{"/tmp/x/ck": "<checkpoint>"})
	if n != "<checkpoint>/offsets/7 in spark-kafka-source-<uuid>-<hash>-executor at <checkpoint>" {
		t.Fatalf("normalize: %s", n)
	}
	var buf bytes.Buffer
	buf.WriteString(Divergence{Case: "c", Release: "r", Field: "f", Spark: "a", Ckpt: "b"}.Line())
	if !strings.Contains(buf.String(), `Spark "a", ckpt "b"`) {
		t.Fatal(buf.String())
	}
}
