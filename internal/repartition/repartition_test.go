package repartition

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/state/statetest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

const fixture = "../../testdata/spark-state/4.2.0/agg-hdfs/checkpoint"

func open(t testing.TB, dir string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// plan plans with the new state files staged in memory, checks that every file has the
// digest and size its action names (and a dry run plans the same files), and returns the plan
// with every new file's bytes.
func plan(t *testing.T, s storage.Store, o Options) (*Plan, map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	dry, err := NewPlan(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	stage := storage.NewMem()
	o.Stage, o.StageRun = stage, "test"
	p, err := NewPlan(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused != "" {
		return p, nil
	}
	if !p.Staged || dry.Staged || len(dry.Actions) != len(p.Actions) {
		t.Fatalf("staged %v (dry run %v), %d actions (dry run %d)", p.Staged, dry.Staged, len(p.Actions), len(dry.Actions))
	}
	files := map[string][]byte{}
	for i, a := range p.Actions {
		data := a.Data
		switch a.Op {
		case journal.OpWrite:
		case journal.OpCopy:
			if a.From != journal.StagedPath("test", a.Path) || a.Data != nil {
				t.Fatalf("copy %s from %s with %d bytes of data", a.Path, a.From, len(a.Data))
			}
			if data, err = stage.ReadFile(ctx, a.From); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("action %s %s: a repartition only creates files", a.Op, a.Path)
		}
		if journal.DigestOf(data) != a.After || int64(len(data)) != a.Size || !a.Before.Absent() {
			t.Fatalf("%s: %d bytes, %s; the action says %d bytes, %s (before %s)", a.Path, len(data), journal.DigestOf(data).Short(), a.Size, a.After.Short(), a.Before.Short())
		}
		if d := dry.Actions[i]; d.Path != a.Path || d.After != a.After {
			t.Fatalf("the dry run plans %s %s, the staged run %s %s", d.Path, d.After.Short(), a.Path, a.After.Short())
		}
		files[a.Path] = data
	}
	staged, _ := stage.Walk(ctx, "")
	if want := len(p.Actions) - 4; len(staged) != want { // all but offsets, commits and their checksums
		t.Errorf("%d files staged, want %d", len(staged), want)
	}
	return p, files
}

// applied is the checkpoint in s with the plan's files added, in memory.
func applied(s storage.Store, files map[string][]byte) storage.Store {
	return checkpoint.NewOverlay(s, files)
}

// rows reads partitions 0..n-1 of operator 0's default store with ckpt's reader (a shrink
// leaves the old partitions' directories behind).
func rows(t *testing.T, s storage.Store, n int) []string {
	t.Helper()
	return readStore(t, s, 0, state.DefaultStore, n)
}

// sparkRows reads an oracle file of testdata/spark-repartition ({"operatorId":0,"row":{…}}).
func sparkRows(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var line struct {
			Row json.RawMessage `json:"row"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		n, err := statetest.Normalize(line.Row)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestPlanEqualsSparkRepartition: the HDFS-backed fixture of Spark 4.2.0 repartitioned 2→4 by
// ckpt holds, row for row and partition for partition, what Spark 4.2.0's own repartition of
// the same query's RocksDB checkpoint (the same input) holds after it, read by Spark's reader.
func TestPlanEqualsSparkRepartition(t *testing.T) {
	s := open(t, fixture)
	p, files := plan(t, s, Options{Partitions: 4})
	if p.Refused != "" {
		t.Fatalf("refused: %s", p.Refused)
	}
	if p.Batch != 4 || p.NewBatch != 5 || p.Version != 6 || p.From != 2 || p.To != 4 || p.Rows != 15 {
		t.Errorf("plan batch %d→%d version %d partitions %d→%d rows %d; want 4→5, 6, 2→4, 15", p.Batch, p.NewBatch, p.Version, p.From, p.To, p.Rows)
	}
	var paths []string
	for _, a := range p.Actions {
		paths = append(paths, a.Path)
	}
	want := []string{
		"state/0/0/6.snapshot", "state/0/0/.6.snapshot.crc", "state/0/1/6.snapshot", "state/0/1/.6.snapshot.crc",
		"state/0/2/6.snapshot", "state/0/2/.6.snapshot.crc", "state/0/3/6.snapshot", "state/0/3/.6.snapshot.crc",
		"offsets/5", "offsets/.5.crc", "commits/5", "commits/.5.crc",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("files %v\nwant %v", paths, want)
	}
	// Spark's own offsets/5 and commits/5 (of its RocksDB run) differ from ours only in the
	// batch timestamp and provider conf of the source checkpoint: compare with our offsets/4.
	spark := "../../testdata/spark-repartition/4.2.0/agg-rocksdb/after/checkpoint/"
	sOff4, _ := os.ReadFile(spark + "offsets/4")
	sOff5, _ := os.ReadFile(spark + "offsets/5")
	off4, _ := os.ReadFile(fixture + "/offsets/4")
	sparkChange := strings.Replace(string(sOff4), `"spark.sql.shuffle.partitions":"2"`, `"spark.sql.shuffle.partitions":"4"`, 1)
	if sparkChange != string(sOff5) {
		t.Fatalf("Spark's offsets/5 is not its offsets/4 with 4 partitions; the test's premise is wrong")
	}
	ourChange := strings.Replace(string(off4), `"spark.sql.shuffle.partitions":"2"`, `"spark.sql.shuffle.partitions":"4"`, 1)
	if got := string(p.Actions[8].Data); got != ourChange {
		t.Errorf("offsets/5:\n%s\nwant offsets/4 with 4 partitions:\n%s", got, ourChange)
	}
	sCommit, _ := os.ReadFile(spark + "commits/5")
	if got := string(p.Actions[10].Data); got != string(sCommit) {
		t.Errorf("commits/5 %q, Spark's %q", got, sCommit)
	}

	got := rows(t, applied(s, files), 4)
	wantRows := sparkRows(t, "../../testdata/spark-repartition/4.2.0/agg-rocksdb/oracle/after.jsonl")
	if !slices.Equal(got, wantRows) {
		t.Errorf("ckpt's repartition holds\n%s\nSpark's\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
	if p.After == nil || p.After.Outcome == "fail" {
		t.Errorf("restart after: %+v", p.After)
	}
}

// TestPlanShrink: 2→1 puts every row in partition 0.
func TestPlanShrink(t *testing.T) {
	s := open(t, fixture)
	p, files := plan(t, s, Options{Partitions: 1})
	if p.Refused != "" {
		t.Fatalf("refused: %s", p.Refused)
	}
	got := rows(t, applied(s, files), 1)
	if len(got) != 15 {
		t.Fatalf("%d rows", len(got))
	}
	for _, r := range got {
		if !strings.Contains(r, `"partition_id":0`) {
			t.Errorf("row outside partition 0: %s", r)
		}
	}
}

// TestPlanRefusals: the cases Spark 4.2.0 refuses and those ckpt refuses on its own.
func TestPlanRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, dir string
		n         int
		edit      func(dir string)
		want      string
	}{
		{"same count", fixture, 2, nil, "SHUFFLE_PARTITIONS_ALREADY_MATCH"},
		{"last batch failed", fixture, 4, func(dir string) { _ = os.Remove(filepath.Join(dir, "commits/4")) }, "LAST_BATCH_FAILED"},
		{"no metadata, unknown stores", fixture, 4, func(dir string) {
			_ = os.Remove(filepath.Join(dir, "state/0/_metadata/metadata"))
			_ = os.MkdirAll(filepath.Join(dir, "state/0/0/other"), 0o755)
			_ = os.WriteFile(filepath.Join(dir, "state/0/0/other/1.delta"), nil, 0o644)
		}, "no operator metadata"},
		{"transformWithState", "../../testdata/spark-state/4.1.4/tws/checkpoint", 4, nil, "transformWithState keeps several state variables"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir
			if c.edit != nil {
				dir = t.TempDir()
				if err := os.CopyFS(dir, os.DirFS(c.dir)); err != nil {
					t.Fatal(err)
				}
				c.edit(dir)
			}
			p, err := NewPlan(ctx, open(t, dir), Options{Partitions: c.n, Planner: recovery.Options{}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Refused, c.want) || len(p.Actions) != 0 {
				t.Errorf("refused %q with %d actions; want %q", p.Refused, len(p.Actions), c.want)
			}
		})
	}
	if _, err := NewPlan(ctx, open(t, fixture), Options{Partitions: 0}); err == nil {
		t.Error("0 partitions planned")
	}
}

// TestPlanEveryHDFSFixture: every HDFS-backed aggregation, dropDuplicates and join fixture
// of every release plans 2→3, and every row of every store lands in exactly one partition.
func TestPlanEveryHDFSFixture(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/spark-state/*/*-hdfs*")
	if len(dirs) < 10 {
		t.Fatalf("%d HDFS fixtures", len(dirs))
	}
	for _, d := range dirs {
		t.Run(filepath.Base(filepath.Dir(d))+"/"+filepath.Base(d), func(t *testing.T) {
			s := open(t, filepath.Join(d, "checkpoint"))
			p, err := NewPlan(context.Background(), s, Options{Partitions: 3})
			if err != nil {
				t.Fatal(err)
			}
			if p.Refused != "" {
				t.Fatalf("refused: %s", p.Refused)
			}
			for _, op := range p.Operators {
				for _, st := range op.Stores {
					var from, to int64
					for _, n := range st.RowsFrom {
						from += n
					}
					for _, n := range st.RowsTo {
						to += n
					}
					if from != to || from == 0 || len(st.KeyColumns) == 0 {
						t.Errorf("operator %d store %s: %d rows in, %d out, key columns %v", op.ID, st.Name, from, to, st.KeyColumns)
					}
				}
			}
		})
	}
}
