package state

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// twsOracle is one of Spark's readings of a transformWithState fixture
// (oracle/vars/<op>-<store>.<var>[.nested|.changes|.batch<N>].jsonl, <var> "timers" for
// readRegisteredTimers), as the options that reproduce it.
type twsOracle struct {
	file string
	opts ReadOptions
}

func twsOracles(t *testing.T, dir string) []twsOracle {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "oracle", "vars", "*.jsonl"))
	cp, _ := openFixture(t, dir)
	last, _ := cp.Commits.Latest()
	var out []twsOracle
	for _, f := range files {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".jsonl"), ".")
		opStr, store, ok := strings.Cut(parts[0], "-")
		op, err := strconv.ParseInt(opStr, 10, 64)
		if !ok || err != nil || len(parts) < 2 || len(parts) > 3 {
			t.Fatalf("%s: bad oracle name", f)
		}
		o := ReadOptions{Operator: op, Store: store, Partition: -1, StateVar: parts[1]}
		if parts[1] == "timers" {
			o.StateVar, o.Timers = "", true
		}
		if len(parts) == 3 {
			switch mod := parts[2]; {
			case mod == "nested":
				o.Nested = true
			case mod == "changes":
				o.Changes, o.Version = true, last+1
			case strings.HasPrefix(mod, "batch"):
				b, err := strconv.ParseInt(strings.TrimPrefix(mod, "batch"), 10, 64)
				if err != nil {
					t.Fatalf("%s: bad oracle name", f)
				}
				o.Version = b + 1
			default:
				t.Fatalf("%s: bad oracle name", f)
			}
		}
		out = append(out, twsOracle{file: f, opts: o})
	}
	return out
}

// twsNormalize is normalize: a nested map's entries (map_value) are compared in order, the
// order of the Scala HashMap Spark's reader builds.
func twsNormalize(t testing.TB, line []byte) string {
	t.Helper()
	return normalize(t, line)
}

func twsLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, twsNormalize(t, l))
		}
	}
	slices.Sort(out)
	return out
}

// TestReadTWSEqualsSparkStateReader reads every transformWithState fixture Spark 4.0.2 and
// 4.1.4 wrote (RocksDB, with and without changelogs) with each reading Spark's statestore
// reader made of it: every state variable (stateVarName) at the last batch and at every
// batch (batchId), list and map state nested (flattenCollectionTypes=false), the change
// feed of the last batch and the registered timers (readRegisteredTimers); the rows must be
// Spark's.
func TestReadTWSEqualsSparkStateReader(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/spark-state/*/tws*")
	releases := map[string]bool{}
	kinds := map[string]bool{}
	for _, dir := range dirs {
		releases[filepath.Base(filepath.Dir(dir))] = true
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			cp, l := openFixture(t, dir)
			oracles := twsOracles(t, dir)
			if len(oracles) < 10 {
				t.Fatalf("%d oracle files", len(oracles))
			}
			for _, o := range oracles {
				want := twsLines(t, o.file)
				r, err := NewReader(context.Background(), cp, l, o.opts)
				if err != nil {
					t.Fatalf("%s: %v", filepath.Base(o.file), err)
				}
				var got []string
				err = r.Each(context.Background(), func(row *Row) error {
					got = append(got, twsNormalize(t, row.AppendJSON(nil)))
					if row.Key() == nil {
						t.Errorf("%s: a row without its key columns", filepath.Base(o.file))
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s: %v", filepath.Base(o.file), err)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s: ckpt read %d rows, Spark %d\nckpt:\n%s\nspark:\n%s", filepath.Base(o.file), len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				kinds[strings.Join(strings.Split(filepath.Base(o.file), ".")[1:], ".")] = true
			}
		})
	}
	// Checkpoint format v2: <version>_<uuid> files, changelogs v4 (typed records after a lineage).
	if _, err := os.Stat("../../testdata/spark-state/4.1.4/tws-changelog-v2/oracle/vars"); err != nil {
		t.Errorf("no transformWithState fixture with checkpoint format v2: %v", err)
	}
	for _, rel := range []string{"4.0.2", "4.1.4", "4.2.0"} {
		if !releases[rel] {
			t.Errorf("no transformWithState fixture of Spark %s", rel)
		}
	}
	for _, k := range []string{"countState.jsonl", "listState.jsonl", "mapState.jsonl", "listState.nested.jsonl", "mapState.nested.jsonl", "timers.jsonl", "listState.changes.jsonl", "mapState.changes.jsonl", "countState.changes.jsonl"} {
		if !kinds[k] {
			t.Errorf("no oracle %s", k)
		}
	}
}

// TestReadTWSNeedsStateVar: like Spark's reader, a transformWithState store is read one
// state variable at a time; an unknown variable and --state-var on another operator fail.
func TestReadTWSNeedsStateVar(t *testing.T) {
	dir := "../../testdata/spark-state/4.1.4/tws-changelog"
	cp, l := openFixture(t, dir)
	ctx := context.Background()
	_, err := NewReader(ctx, cp, l, ReadOptions{Partition: -1})
	if err == nil || !strings.Contains(err.Error(), "--state-var NAME is required (state variables: countState, listState, mapState") {
		t.Errorf("no state variable: %v", err)
	}
	if _, err := NewReader(ctx, cp, l, ReadOptions{Partition: -1, StateVar: "nope"}); err == nil || !strings.Contains(err.Error(), "no such state variable") {
		t.Errorf("unknown state variable: %v", err)
	}
	cp2, l2 := openFixture(t, "../../testdata/spark-state/4.1.4/agg-rocksdb")
	if _, err := NewReader(ctx, cp2, l2, ReadOptions{Partition: -1, StateVar: "countState"}); err == nil || !strings.Contains(err.Error(), "not one") {
		t.Errorf("--state-var on an aggregation: %v", err)
	}
}

// TestSummarizeListsStateVariables: `state ls` of a transformWithState operator lists its
// state variables with their types and column family schemas.
func TestSummarizeListsStateVariables(t *testing.T) {
	for _, rel := range []string{"4.0.2", "4.1.4"} {
		dir := "../../testdata/spark-state/" + rel + "/tws"
		cp, l := openFixture(t, dir)
		sums, err := Summarize(context.Background(), cp.Store, l)
		if err != nil {
			t.Fatal(err)
		}
		if len(sums) != 1 || sums[0].SchemaError != "" || sums[0].OperatorName != "transformWithStateExec" {
			t.Fatalf("%s: %+v", rel, sums)
		}
		var got []string
		for _, v := range sums[0].StateVariables {
			got = append(got, v.Name+" "+v.Type+" "+v.KeySchema+" "+v.ValueSchema)
		}
		want := []string{
			"countState ValueState struct<value:string> struct<value:bigint>",
			"listState ListState struct<value:string> struct<value:string>",
			"mapState MapState struct<key:struct<value:string>,userKey:struct<value:string>> struct<value:bigint>",
			"$procTimers_keyToTimestamp TimerState struct<key:struct<value:string>,expiryTimestampMs:bigint> struct<__dummy__:void>",
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: state variables\n%s\nwant\n%s", rel, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestReadTWSDamagedChangelogNamesFile: a cut changelog of a transformWithState store (version
// 4 is 3.zip and 4.changelog) fails
// the read, naming the file, rather than yielding fewer rows.
func TestReadTWSDamagedChangelogNamesFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../testdata/spark-state/4.1.4/tws-changelog")); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "checkpoint/state/0/0/4.changelog")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	cp, l := openFixture(t, dir)
	for _, v := range []string{"countState", "listState", "mapState"} {
		r, err := NewReader(context.Background(), cp, l, ReadOptions{Partition: -1, StateVar: v, Version: 4})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Each(context.Background(), func(*Row) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "state/0/0/4.changelog") {
			t.Errorf("%s: %v", v, err)
		}
	}
}
