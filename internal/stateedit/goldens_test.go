package stateedit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/state/statetest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// goldens are Spark's answers on checkpoints ckpt edited (TestSparkLiveEdit in
// internal/sparkoracle writes them with UPDATE_SPARK=1).
const goldens = "../../testdata/spark-edit"

// TestEditGoldens, in every CI run: ckpt's edit of each checkpoint is still, byte for byte,
// what Spark read and restarted (edit.json's digests); ckpt's reader sees in it what Spark's
// statestore reader saw; and Spark's restart after the edit emitted other rows than without it.
func TestEditGoldens(t *testing.T) {
	rels, _ := os.ReadDir(goldens)
	var seen []string
	for _, rel := range rels {
		if !rel.IsDir() {
			continue
		}
		seen = append(seen, rel.Name())
		cases, _ := os.ReadDir(filepath.Join(goldens, rel.Name()))
		for _, c := range cases {
			t.Run(rel.Name()+"/"+c.Name(), func(t *testing.T) {
				checkEditGolden(t, filepath.Join(goldens, rel.Name(), c.Name()))
			})
		}
	}
	for _, want := range []string{"3.5.7", "4.0.0", "4.1.1", "4.2.0"} {
		if !slices.Contains(seen, want) {
			t.Errorf("no edit goldens of Spark %s in %s", want, goldens)
		}
	}
}

func checkEditGolden(t *testing.T, dir string) {
	ctx := context.Background()
	var g struct {
		Checkpoint   string            `json:"checkpoint"`
		Where        string            `json:"where"`
		DropOperator bool              `json:"dropOperator"`
		Evict        bool              `json:"evict"`
		EvictBefore  int64             `json:"evictBeforeMs"`
		Operator     int64             `json:"operator"`
		HasOperator  bool              `json:"hasOperator"`
		Files        map[string]string `json:"files"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "edit.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	s := open(t, filepath.Join("../..", g.Checkpoint))
	p, err := NewPlan(ctx, s, Options{Where: g.Where, DropOperator: g.DropOperator, Evict: g.Evict, EvictBefore: g.EvictBefore, Operator: g.Operator, HasOperator: g.HasOperator})
	if err != nil || p.Refused != "" {
		t.Fatalf("%v %s", err, p.Refused)
	}
	if len(p.Actions) != len(g.Files) {
		t.Errorf("ckpt plans %d files, Spark ran on %d", len(p.Actions), len(g.Files))
	}
	for _, a := range p.Actions {
		if g.Files[a.Path] != string(a.After) {
			t.Errorf("%s is not the file Spark ran on (rerun TestSparkLiveEdit with UPDATE_SPARK=1)", a.Path)
		}
	}
	orig, _ := os.ReadFile(filepath.Join(dir, "orig.out.jsonl"))
	edited, _ := os.ReadFile(filepath.Join(dir, "edited.out.jsonl"))
	if len(orig) == 0 || string(orig) == string(edited) {
		t.Errorf("Spark's restart emitted %d bytes without the edit, the same with it", len(orig))
	}
	reads, _ := filepath.Glob(filepath.Join(dir, "state", "*.jsonl"))
	if !strings.Contains(dir, "/3.") && len(reads) == 0 {
		t.Error("no reading by Spark's statestore reader")
	}
	ov := applied(t, s, p)
	for _, r := range reads {
		op, store, _ := strings.Cut(strings.TrimSuffix(filepath.Base(r), ".jsonl"), "-")
		id, _ := strconv.ParseInt(op, 10, 64)
		got := readAll(t, ov, id, store)
		data, _ := os.ReadFile(r)
		var want []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if l == "" {
				continue
			}
			n, err := statetest.Normalize([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, n)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: ckpt reads\n%s\nSpark's reader\n%s", filepath.Base(r), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// readAll reads every partition of one store with ckpt's reader, normalised and sorted.
func readAll(t *testing.T, s storage.Store, op int64, store string) []string {
	t.Helper()
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	l, err := state.Scan(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: op, Store: store, Partition: -1})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	err = r.Each(ctx, func(row *state.Row) error {
		n, err := statetest.Normalize(row.AppendJSON(nil))
		out = append(out, n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
