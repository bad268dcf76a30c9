package stateedit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

const fixtures = "../../testdata/spark-state/"

// window is a checkpoint Spark 4.1.1 wrote for a count per 7-day window of ts and k with a
// watermark of one day (TestSparkLiveRepartition's window case).
const window = "../../testdata/spark-repartition/restart/4.1.1/window-hdfs/checkpoint"

func open(t *testing.T, dir string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func plan(t *testing.T, dir string, o Options) (storage.Store, *Plan) {
	t.Helper()
	s := open(t, dir)
	p, err := NewPlan(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused != "" {
		t.Fatalf("refused: %s", p.Refused)
	}
	return s, p
}

// applied is the checkpoint in s with the plan's files added, in memory.
func applied(t *testing.T, s storage.Store, p *Plan) storage.Store {
	t.Helper()
	files := map[string][]byte{}
	for _, a := range p.Actions {
		if a.Op != journal.OpWrite || !a.Before.Absent() {
			t.Fatalf("action %s %s (before %q): an edit only creates files", a.Op, a.Path, a.Before)
		}
		files[a.Path] = a.Data
	}
	return checkpoint.NewOverlay(s, files)
}

// rows reads every row of every store of every operator with ckpt's reader at the latest
// committed version: "op/store/partition key value" lines, sorted.
func rows(t *testing.T, s storage.Store) []string {
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
	var out []string
	for _, op := range l.Operators {
		for _, st := range op.Stores {
			r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: op.ID, Store: st.Name, Partition: -1})
			if err != nil {
				t.Fatal(err)
			}
			err = r.Each(ctx, func(row *state.Row) error {
				out = append(out, strings.Join([]string{op.Dir, st.Name, string(row.AppendJSON(nil))}, " "))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(out)
	return out
}

// without is rows less those containing any of subs.
func without(rows []string, keep func(string) bool) []string {
	var out []string
	for _, r := range rows {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func checkEdit(t *testing.T, s storage.Store, p *Plan, keep func(string) bool) {
	t.Helper()
	before := rows(t, s)
	after := rows(t, applied(t, s, p))
	want := without(before, keep)
	if !slices.Equal(after, want) {
		t.Errorf("after the edit ckpt reads\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(want, "\n"))
	}
	if int64(len(before)-len(after)) != p.Dropped || p.Dropped == 0 {
		t.Errorf("plan drops %d rows, the reader sees %d fewer", p.Dropped, len(before)-len(after))
	}
	if p.After == nil || p.After.Outcome == "fail" {
		t.Errorf("restart after: %+v", p.After)
	}
}

// TestWhere: --where over key columns drops exactly the matching keys and keeps every other
// row's bytes, on the HDFS-backed store (removals in a delta) and on RocksDB with changelogs
// (deletes in a changelog), on every codec.
func TestWhere(t *testing.T) {
	for _, fx := range []string{"4.2.0/agg-hdfs", "3.5.8/agg-hdfs-zstd", "4.1.4/agg-hdfs-snappy", "4.2.0/agg-hdfs-lzf", "3.5.8/agg-rocksdb-changelog", "4.2.0/agg-rocksdb-changelog", "4.2.0/dedup-hdfs", "3.5.8/dedup-rocksdb-changelog", "4.1.4/agg-rocksdb", "4.2.0/agg-rocksdb-fv6-zstd"} {
		t.Run(fx, func(t *testing.T) {
			s, p := plan(t, fixtures+fx+"/checkpoint", Options{Where: `key.k == "k1" || (key.b == 1 && key.k == "k3")`})
			checkEdit(t, s, p, func(r string) bool {
				return !strings.Contains(r, `"key":{"k":"k1"`) && !strings.Contains(r, `"key":{"k":"k3","b":1}`)
			})
			var paths []string
			for _, a := range p.Actions {
				paths = append(paths, a.Path)
			}
			kind := ".delta"
			if strings.Contains(fx, "rocksdb") {
				kind = ".changelog"
			}
			for _, want := range []string{"state/0/0/6" + kind, "state/0/1/6" + kind, "offsets/5", "commits/5"} {
				if !slices.Contains(paths, want) {
					t.Errorf("no %s in %v", want, paths)
				}
			}
		})
	}
}

// TestWhereValue: --where over value columns, with a timestamp compared as a time.
func TestWhereValue(t *testing.T) {
	s, p := plan(t, fixtures+"4.2.0/agg-hdfs/checkpoint", Options{Where: `value.count >= 3 && value.min < date("2024-01-03")`})
	before := rows(t, s)
	after := rows(t, applied(t, s, p))
	if len(after) >= len(before) || p.Dropped != int64(len(before)-len(after)) {
		t.Fatalf("%d rows → %d, plan drops %d", len(before), len(after), p.Dropped)
	}
}

// TestDropOperator: every store of the join gets an empty snapshot; nothing is left.
func TestDropOperator(t *testing.T) {
	s, p := plan(t, fixtures+"4.2.0/join-hdfs/checkpoint", Options{DropOperator: true, Operator: 0, HasOperator: true})
	checkEdit(t, s, p, func(string) bool { return false })
	n := 0
	for _, a := range p.Actions {
		if strings.HasSuffix(a.Path, ".snapshot") {
			n++
		}
	}
	if n != 8 {
		t.Errorf("%d snapshots, want 4 stores × 2 partitions", n)
	}
}

// TestDropOperatorRocksDB: a RocksDB operator dropped is a changelog deleting every key.
func TestDropOperatorRocksDB(t *testing.T) {
	s, p := plan(t, fixtures+"3.5.8/agg-rocksdb-changelog/checkpoint", Options{DropOperator: true, Operator: 0, HasOperator: true})
	checkEdit(t, s, p, func(string) bool { return false })
}

// TestEvict: windows ending at or before the watermark go (Spark's eviction rule,
// window.end <= watermark); the others stay.
func TestEvict(t *testing.T) {
	wm := time.Date(2024, 1, 11, 0, 0, 0, 0, time.UTC).UnixMilli()
	s, p := plan(t, window, Options{Evict: true, EvictBefore: wm})
	if p.Operators[0].EventTime != "window.end" {
		t.Errorf("event time column %q", p.Operators[0].EventTime)
	}
	checkEdit(t, s, p, func(r string) bool {
		return !strings.Contains(r, `"end":"2024-01-11T00:00:00.000Z"`) && !strings.Contains(r, `"end":"2024-01-04T`)
	})
}

// TestRefusals: what cannot be edited correctly is refused with the reason, and nothing is
// planned.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, dir string
		o         Options
		edit      func(dir string)
		want      string
	}{
		{"evict without event time", fixtures + "4.2.0/agg-hdfs/checkpoint", Options{Evict: true, EvictBefore: 1}, nil, "no event-time column"},
		{"join rows", fixtures + "4.2.0/join-hdfs/checkpoint", Options{Where: `key.k == "k1"`}, nil, "four stores"},
		{"transformWithState", fixtures + "4.1.4/tws-changelog/checkpoint", Options{Where: `true`}, nil, "column families"},
		{"format v2", fixtures + "4.2.0/agg-rocksdb-changelog-v2/checkpoint", Options{Where: `true`}, nil, "format v2"},
		{"nothing matches", fixtures + "4.2.0/agg-hdfs/checkpoint", Options{Where: `key.k == "nope"`}, nil, "nothing matches"},
		// Every window of the checkpoint ends at 2024-01-11: a watermark 1 ms before evicts none.
		{"evict before every window end", window, Options{Evict: true, EvictBefore: time.Date(2024, 1, 11, 0, 0, 0, 0, time.UTC).UnixMilli() - 1}, nil, "nothing matches"},
		{"no such operator", fixtures + "4.2.0/agg-hdfs/checkpoint", Options{DropOperator: true, Operator: 3, HasOperator: true}, nil, "no operator 3"},
		{"last batch failed", fixtures + "4.2.0/agg-hdfs/checkpoint", Options{Where: `true`}, func(dir string) { _ = os.Remove(filepath.Join(dir, "commits/4")) }, "did not commit"},
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
			p, err := NewPlan(ctx, open(t, dir), c.o)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Refused, c.want) || len(p.Actions) != 0 {
				t.Errorf("refused %q with %d actions; want %q", p.Refused, len(p.Actions), c.want)
			}
		})
	}
	for _, o := range []Options{{}, {DropOperator: true}, {Where: "x", DropOperator: true, HasOperator: true}, {Where: `k == "a"`}, {Where: `key.k +`}} {
		if _, err := NewPlan(ctx, open(t, fixtures+"4.2.0/agg-hdfs/checkpoint"), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestStaged: with a stage (--execute), every new state file and its checksum is streamed to
// _ckpt/staging/<run>/ and placed by a copy with the bytes the plan held in memory has, the
// log files are the same writes, and the plan holds no state file's bytes; for rows dropped
// (HDFS-backed and RocksDB) and an operator dropped.
func TestStaged(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		dir string
		o   Options
	}{
		{fixtures + "4.2.0/agg-hdfs/checkpoint", Options{Where: `key.k == "k1"`}},
		{fixtures + "3.5.8/agg-rocksdb-changelog/checkpoint", Options{DropOperator: true, Operator: 0, HasOperator: true}},
		{fixtures + "4.2.0/join-hdfs/checkpoint", Options{DropOperator: true, Operator: 0, HasOperator: true}},
	} {
		_, held := plan(t, c.dir, c.o)
		stage := storage.NewMem()
		o := c.o
		o.Stage, o.StageRun = stage, "run"
		_, p := plan(t, c.dir, o)
		if !p.Staged || held.Staged || len(p.Actions) != len(held.Actions) || p.Bytes != held.Bytes {
			t.Fatalf("%s: staged %v, %d actions of %d bytes; held: %d of %d", c.dir, p.Staged, len(p.Actions), p.Bytes, len(held.Actions), held.Bytes)
		}
		copies := 0
		for i, a := range p.Actions {
			h := held.Actions[i]
			data := a.Data
			if a.Op == journal.OpCopy {
				copies++
				var err error
				if data, err = stage.ReadFile(ctx, a.From); err != nil || a.From != journal.StagedPath("run", a.Path) || a.Data != nil {
					t.Fatalf("%s: copy of %s from %s: %v", c.dir, a.Path, a.From, err)
				}
			}
			if a.Path != h.Path || a.After != h.After || string(data) != string(h.Data) || journal.DigestOf(data) != a.After {
				t.Errorf("%s: %s %s %s, held %s %s", c.dir, a.Op, a.Path, a.After.Short(), h.Path, h.After.Short())
			}
		}
		if staged, _ := stage.Walk(ctx, ""); copies == 0 || len(staged) != copies {
			t.Errorf("%s: %d copies, %d files staged", c.dir, copies, len(staged))
		}
	}
}
