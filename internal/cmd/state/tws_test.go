package state

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func openLocal(ctx context.Context, uri string) (storage.Store, error) {
	return storage.Open(ctx, uri, storage.Options{})
}

// twsNormalizeLines is normalizeLines: a nested map's entries are compared in order too.
func twsNormalizeLines(t *testing.T, data []byte) []string {
	t.Helper()
	return normalizeLines(t, data)
}

// TestReadTWSJSONEqualsSparkStateReader runs `ckpt state read --operator 0 --state-var V
// [--nested] [--changes --version N] [--version N] -o json` (and `--timers`) on every
// transformWithState checkpoint Spark 4.0.2 and 4.1.4 wrote and compares the lines with
// Spark's statestore reader with the same options (oracle/vars/); the flags are parsed by
// the command itself.
func TestReadTWSJSONEqualsSparkStateReader(t *testing.T) {
	dirs, _ := filepath.Glob("../../../testdata/spark-state/*/tws*")
	if len(dirs) < 4 {
		t.Fatalf("transformWithState fixtures: %v", dirs)
	}
	compared := 0
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		commits, _ := os.ReadDir(filepath.Join(dir, "checkpoint", "commits"))
		last := int64(-1)
		for _, c := range commits {
			if id, err := strconv.ParseInt(c.Name(), 10, 64); err == nil {
				last = max(last, id)
			}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "oracle", "vars", "*.jsonl"))
		t.Run(name, func(t *testing.T) {
			for _, f := range files {
				parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".jsonl"), ".")
				args := []string{"read", filepath.Join(dir, "checkpoint"), "--operator", "0", "-o", "json"}
				if parts[1] == "timers" {
					args = append(args, "--timers")
				} else {
					args = append(args, "--state-var", parts[1])
				}
				if len(parts) == 3 {
					switch m := parts[2]; {
					case m == "nested":
						args = append(args, "--nested")
					case m == "changes":
						args = append(args, "--changes", "--version", strconv.FormatInt(last+1, 10))
					case strings.HasPrefix(m, "batch"):
						b, _ := strconv.ParseInt(strings.TrimPrefix(m, "batch"), 10, 64)
						args = append(args, "--version", strconv.FormatInt(b+1, 10))
					}
				}
				ios, _, out, _ := iostreams.Test()
				cmd := NewCmd(&cli.Env{IO: ios, Version: "test"}, nil)
				cmd.SetArgs(args)
				cmd.SetOut(out)
				if err := cmd.ExecuteContext(context.Background()); err != nil {
					t.Fatalf("ckpt state %s: %v", strings.Join(args, " "), err)
				}
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				got, want := twsNormalizeLines(t, out.Bytes()), twsNormalizeLines(t, data)
				if !slices.Equal(got, want) {
					t.Errorf("ckpt state %s: %d rows, Spark %d\nckpt:\n%s\nspark:\n%s", strings.Join(args, " "), len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				compared++
			}
		})
	}
	if compared < 40 {
		t.Errorf("compared %d readings", compared)
	}
}

// TestLsListsTWSStateVariables: `ckpt state ls` names a transformWithState store's state
// variables (table and JSON), and `state read` without --state-var says which there are.
func TestLsListsTWSStateVariables(t *testing.T) {
	loc := "../../../testdata/spark-state/4.1.4/tws-changelog/checkpoint"
	ios, _, out, _ := iostreams.Test()
	opts := &Options{IO: ios, OpenStore: openLocal, Location: loc, Output: render.FormatTable}
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"transformWithState state variables", "countState", "ValueState", "listState", "ListState", "mapState", "MapState", "$procTimers_keyToTimestamp", "TimerState", "struct<key:struct<value:string>,userKey:struct<value:string>>"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ls table without %q:\n%s", want, out)
		}
	}
	ios, _, out, _ = iostreams.Test()
	opts = &Options{IO: ios, OpenStore: openLocal, Location: loc, Output: render.FormatJSON}
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var sums []state.StoreSummary
	if err := json.Unmarshal(out.Bytes(), &sums); err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || len(sums[0].StateVariables) != 4 || sums[0].StateVariables[2].Name != "mapState" {
		t.Errorf("ls JSON: %s", out)
	}
	ios, _, _, _ = iostreams.Test()
	opts = &Options{IO: ios, OpenStore: openLocal, Location: loc, Output: render.FormatJSON, Read: true, ReadOptions: state.ReadOptions{Partition: -1}}
	if err := run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "--state-var NAME is required (state variables: countState, listState, mapState") {
		t.Errorf("read without --state-var: %v", err)
	}
}

// TestReadTWSTable: the table output of a map state shows the grouping key and the entry.
func TestReadTWSTable(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	opts := &Options{IO: ios, OpenStore: openLocal, Location: "../../../testdata/spark-state/4.0.2/tws/checkpoint", Output: render.FormatTable, Read: true,
		ReadOptions: state.ReadOptions{Partition: 0, StateVar: "mapState", Keys: []string{"value=k0"}}}
	if err := run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "value=k0") || !strings.Contains(s, `user_map_key={"value":"s2"} user_map_value={"value":96}`) || strings.Contains(s, "value=k1") {
		t.Errorf("table:\n%s", s)
	}
}
