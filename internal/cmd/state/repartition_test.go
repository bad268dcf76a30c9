package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
)

// tree is every file below dir except ckpt's own _ckpt/, with its SHA-256.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == "_ckpt" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	cmd := NewCmd(&cli.Env{IO: ios, Version: "test"}, nil)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String() + errOut.String(), err
}

// TestRepartitionExecuteAndUndo: `ckpt state repartition --execute` adds exactly the planned
// files and changes none; `ckpt repair undo` of its journal leaves every file as it was.
func TestRepartitionExecuteAndUndo(t *testing.T) {
	for _, c := range []struct{ fixture, n string }{{"agg-hdfs", "4"}, {"agg-hdfs", "1"}, {"agg-rocksdb", "4"}, {"agg-rocksdb", "1"}} {
		n := c.n
		t.Run(c.fixture+" to "+n, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ck")
			if err := os.CopyFS(dir, os.DirFS("../../../testdata/spark-state/4.2.0/"+c.fixture+"/checkpoint")); err != nil {
				t.Fatal(err)
			}
			before := tree(t, dir)
			out, err := runCmd(t, "repartition", dir, "--partitions", n, "-o", "json")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var plan struct {
				Actions []journal.Action `json:"actions"`
				Rows    int64            `json:"rows"`
			}
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if plan.Rows != 15 || len(plan.Actions) == 0 {
				t.Fatalf("plan: %d rows, %d actions", plan.Rows, len(plan.Actions))
			}
			for _, a := range plan.Actions {
				if a.Data != nil || a.After.Absent() || a.Size == 0 {
					t.Errorf("%s in the JSON: %d bytes of data, digest %q, size %d; want its digest and size only", a.Path, len(a.Data), a.After, a.Size)
				}
			}
			if got := tree(t, dir); len(got) != len(before) {
				t.Fatalf("the dry run changed the checkpoint: %d files, %d before", len(got), len(before))
			}
			out, err = runCmd(t, "repartition", dir, "--partitions", n, "--execute", "--yes", "--active-window", "0", "-o", "json")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var doc struct {
				Executed bool   `json:"executed"`
				Journal  string `json:"journal"`
			}
			if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &doc); err != nil || !doc.Executed {
				t.Fatalf("executed %v (%v)\n%s", doc.Executed, err, out)
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
			for _, a := range plan.Actions {
				if _, ok := after[filepath.FromSlash(a.Path)]; !ok {
					t.Errorf("%s not written", a.Path)
				}
			}
			// The journal placed the new state files from their staged copies (it carries no
			// state bytes), and the staged copies are gone.
			st0, _ := openLocal(context.Background(), dir)
			j, err := journal.Read(context.Background(), journal.Location{Store: st0, Dir: doc.Journal[len(dir)+1:]})
			if err != nil {
				t.Fatal(err)
			}
			copies := 0
			for _, a := range j.Actions {
				if journal.IsStateFile(a.Path) {
					if a.Op != journal.OpCopy || a.Data != nil || !strings.HasPrefix(a.From, journal.StagingDir+"/") {
						t.Errorf("journal: %s %s from %q with %d bytes; want a copy from the staging directory", a.Op, a.Path, a.From, len(a.Data))
					}
					copies++
				}
			}
			if copies == 0 {
				t.Error("journal: no state file placed")
			}
			var left []string
			_ = filepath.WalkDir(filepath.Join(dir, "_ckpt", "staging"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("staged files left after the repartition: %v", left)
			}
			// A second run is refused: the partitions already match.
			if _, err := runCmd(t, "repartition", dir, "--partitions", n); err == nil || !strings.Contains(err.Error(), "SHUFFLE_PARTITIONS_ALREADY_MATCH") {
				t.Errorf("second run: %v", err)
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

// TestRepartitionRefusesLive: a checkpoint written a moment ago is taken for a live query.
func TestRepartitionRefusesLive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.CopyFS(dir, os.DirFS("../../../testdata/spark-state/4.2.0/agg-hdfs/checkpoint")); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "repartition", dir, "--partitions", "3", "--execute", "--yes")
	if err == nil || !strings.Contains(err.Error(), "alive") {
		t.Fatalf("executed on a live-looking query: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "offsets", "5")); err == nil {
		t.Error("offsets/5 written")
	}
	if des, _ := os.ReadDir(filepath.Join(dir, "_ckpt", "staging")); len(des) > 0 {
		t.Errorf("a refused --execute left staged files: %v", des)
	}
	if _, err := runCmd(t, "repartition", dir, "--partitions", "0"); err == nil {
		t.Error("--partitions 0 accepted")
	}
}
