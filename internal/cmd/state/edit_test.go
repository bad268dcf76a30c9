package state

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/stateedit"
)

func copyFixture(t *testing.T, fx string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.CopyFS(dir, os.DirFS("../../../testdata/spark-state/"+fx+"/checkpoint")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEditExecuteAndUndo: each edit, run through runEdit with --execute, adds exactly the
// planned files and changes none; the same edit again finds nothing to drop (the keys are
// gone); `ckpt repair undo` of its journal leaves every file as it was, byte for byte.
func TestEditExecuteAndUndo(t *testing.T) {
	cases := []struct {
		name, fx string
		edit     stateedit.Options
	}{
		{"where hdfs", "4.2.0/agg-hdfs", stateedit.Options{Where: `key.k == "k1"`}},
		{"where rocksdb changelog", "4.1.4/agg-rocksdb-changelog", stateedit.Options{Where: `value.count > 2`}},
		{"drop join", "3.5.8/join-hdfs", stateedit.Options{DropOperator: true, HasOperator: true, Operator: 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixture(t, c.fx)
			before := tree(t, dir)
			run := func(execute bool) (*editDoc, error) {
				ios, _, out, _ := iostreams.Test()
				o := &EditOptions{IO: ios, OpenStore: openLocal, Version: "test", Checkpoint: dir, Edit: c.edit, Output: "json"}
				o.Apply.Execute, o.Apply.Yes = execute, execute
				err := runEdit(context.Background(), o)
				doc := &editDoc{}
				s := out.String()
				if i := strings.LastIndex(s, "}"); i >= 0 {
					if jerr := json.Unmarshal([]byte(s[:i+1]), doc); jerr != nil && err == nil {
						t.Fatalf("%v\n%s", jerr, s)
					}
				}
				return doc, err
			}
			plan, err := run(false)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Dropped == 0 || len(plan.Actions) == 0 || plan.Refused != "" {
				t.Fatalf("plan drops %d rows with %d actions (refused %q)", plan.Dropped, len(plan.Actions), plan.Refused)
			}
			if got := tree(t, dir); len(got) != len(before) {
				t.Fatalf("the dry run changed the checkpoint")
			}
			// The copy's files are new: the query looks alive.
			ios, _, _, _ := iostreams.Test()
			o := &EditOptions{IO: ios, OpenStore: openLocal, Version: "test", Checkpoint: dir, Edit: c.edit, Output: "json"}
			o.Apply.Execute, o.Apply.Yes, o.Apply.ActiveWindow = true, true, journal.DefaultActiveWindow
			err = runEdit(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "alive") {
				t.Fatalf("executed on a live-looking query: %v", err)
			}
			if got := tree(t, dir); len(got) != len(before) {
				t.Fatalf("the refused run changed the checkpoint")
			}
			ios, _, out, _ := iostreams.Test()
			o = &EditOptions{IO: ios, OpenStore: openLocal, Version: "test", Checkpoint: dir, Edit: c.edit, Output: "json"}
			o.Apply.Execute, o.Apply.Yes = true, true
			if err := runEdit(context.Background(), o); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var doc struct {
				Executed bool   `json:"executed"`
				Journal  string `json:"journal"`
			}
			s := out.String()
			if err := json.Unmarshal([]byte(s[:strings.LastIndex(s, "}")+1]), &doc); err != nil || !doc.Executed {
				t.Fatalf("executed %v (%v)\n%s", doc.Executed, err, s)
			}
			after := tree(t, dir)
			for p, sum := range before {
				if after[p] != sum {
					t.Errorf("%s changed", p)
				}
			}
			if len(after) != len(before)+len(plan.Actions) {
				t.Errorf("%d files added, %d planned", len(after)-len(before), len(plan.Actions))
			}
			// Again: the rows are gone (or, for a dropped operator, there are none left), and a
			// refusal is an error (exit 1).
			again, err := run(false)
			if err == nil || !strings.Contains(again.Refused, "nothing matches") {
				t.Errorf("the edit again: %v, refused %q", err, again.Refused)
			}
			st, _ := openLocal(context.Background(), dir)
			if _, err := journal.Undo(context.Background(), st, journal.Location{Store: st, Dir: doc.Journal[len(dir)+1:]}, journal.Options{}); err != nil {
				t.Fatal(err)
			}
			undone := tree(t, dir)
			if len(undone) != len(before) {
				t.Errorf("after undo %d files, %d before", len(undone), len(before))
			}
			for p, sum := range before {
				if undone[p] != sum {
					t.Errorf("after undo %s differs", p)
				}
			}
		})
	}
}

// TestEditUsage: the flag mistakes are usage errors (exit 2) before anything is read.
func TestEditUsage(t *testing.T) {
	for _, args := range [][]string{
		{"edit", "ck"},
		{"edit", "ck", "--drop-operator"},
		{"edit", "ck", "--where", "true", "--operator", "0", "--drop-operator"},
		{"edit", "ck", "--evict-before-watermark", "yesterday"},
	} {
		ios, _, _, _ := iostreams.Test()
		cmd := NewCmd(&cli.Env{IO: ios, Version: "test"}, nil)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(context.Background())
		var ue *exitcode.Error
		if err == nil || !errors.As(err, &ue) || ue.Code != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	dir := copyFixture(t, "4.2.0/agg-hdfs")
	if _, err := runCmd(t, "edit", dir, "--where", `nokey == 1`); err == nil || !strings.Contains(err.Error(), "columns: key, partition_id, value") {
		t.Errorf("an unknown column: %v", err)
	}
	for in, want := range map[string]int64{"1704931200000": 1704931200000, "2024-01-11T00:00:00Z": 1704931200000, "2024-01-11": 1704931200000, "2024-01-11T01:00:00+01:00": 1704931200000} {
		if got, err := parseWatermark(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
}
