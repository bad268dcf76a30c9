package repartition

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/state/statetest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// goldens are Spark's answers on checkpoints ckpt repartitioned (TestSparkLiveRepartition in
// internal/sparkoracle writes them with UPDATE_SPARK=1).
const goldens = "../../testdata/spark-repartition/restart"

// TestRepartitionGoldens, in every CI run: ckpt's repartition of each Spark-written fixture
// is still, byte for byte, what Spark restarted (files.json); that restart emitted exactly what
// the restart without the repartition emitted, with the new partition count in every batch;
// and ckpt's reader sees, partition for partition, what Spark's statestore reader saw in it.
func TestRepartitionGoldens(t *testing.T) {
	rels, _ := os.ReadDir(goldens)
	var seen []string
	for _, rel := range rels {
		seen = append(seen, rel.Name())
		fixtures, _ := os.ReadDir(filepath.Join(goldens, rel.Name()))
		for _, fx := range fixtures {
			t.Run(rel.Name()+"/"+fx.Name(), func(t *testing.T) {
				line := rel.Name()[:strings.LastIndex(rel.Name(), ".")]
				// A case whose checkpoint the live test had Spark write keeps it with the goldens.
				src, _ := filepath.Glob(filepath.Join(goldens, rel.Name(), fx.Name(), "checkpoint"))
				if len(src) == 0 {
					src, _ = filepath.Glob(filepath.Join("../../testdata/spark-state", line+".*", fx.Name(), "checkpoint"))
				}
				if len(src) != 1 {
					t.Fatalf("fixture %s of Spark %s: %v", fx.Name(), line, src)
				}
				checkGolden(t, filepath.Join(goldens, rel.Name(), fx.Name()), src[0])
			})
		}
	}
	for _, want := range []string{"3.5.7", "4.0.0", "4.1.1", "4.2.0"} {
		if !slices.Contains(seen, want) {
			t.Errorf("no repartition goldens of Spark %s in %s", want, goldens)
		}
	}
}

func checkGolden(t *testing.T, dir, src string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(dir, "orig", "output.jsonl"))
	if err != nil || len(want) == 0 {
		t.Fatalf("Spark's restart without the repartition: %v", err)
	}
	checkPartitions(t, filepath.Join(dir, "orig"), 2)
	tos, _ := filepath.Glob(filepath.Join(dir, "to-*"))
	if len(tos) < 2 {
		t.Fatalf("%d repartitions in %s", len(tos), dir)
	}
	s := open(t, src)
	for _, to := range tos {
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(to), "to-"))
		got, _ := os.ReadFile(filepath.Join(to, "output.jsonl"))
		if string(got) != string(want) {
			t.Errorf("to %d: Spark's restart emitted other rows than without the repartition", n)
		}
		checkPartitions(t, to, n)
		p, planned := plan(t, s, Options{Partitions: n})
		if p.Refused != "" {
			t.Fatalf("to %d: refused: %s", n, p.Refused)
		}
		var files map[string]string
		data, _ := os.ReadFile(filepath.Join(to, "files.json"))
		if err := json.Unmarshal(data, &files); err != nil {
			t.Fatal(err)
		}
		if len(files) != len(p.Actions) {
			t.Errorf("to %d: ckpt plans %d files, Spark ran on %d", n, len(p.Actions), len(files))
		}
		for _, a := range p.Actions {
			sum := sha256.Sum256(planned[a.Path])
			if files[a.Path] != hex.EncodeToString(sum[:]) {
				t.Errorf("to %d: %s is not the file Spark restarted on (rerun TestSparkLiveRepartition with UPDATE_SPARK=1)", n, a.Path)
			}
		}
		reads, _ := filepath.Glob(filepath.Join(to, "state", "*.jsonl"))
		errs, _ := filepath.Glob(filepath.Join(to, "state", "*.jsonl.error"))
		if !strings.Contains(dir, "/3.") && len(reads)+len(errs) == 0 {
			t.Errorf("to %d: no reading by Spark's statestore reader", n)
		}
		// Spark 4.0 and 4.1's reader reads every partition directory, so after a shrink it
		// stops at the first one at or above N, which has no new version (as after Spark
		// 4.2.0's own repartition); 4.2.0's reads the batch's partition count. Nothing else
		// may fail.
		for _, e := range errs {
			msg, _ := os.ReadFile(e)
			part := -1
			if m := statePartition.FindSubmatch(msg); m != nil {
				part, _ = strconv.Atoi(string(m[1]))
			}
			// RocksDB's provider looks for the version's changelog, and says so in another way.
			missing := strings.Contains(string(msg), "CANNOT_READ_DELTA_FILE_NOT_EXISTS") ||
				strings.Contains(string(msg), "CANNOT_READ_STREAMING_STATE_FILE") && strings.Contains(string(msg), ".changelog does not exist")
			if !missing || part < n || strings.Contains(dir, "/4.2.") {
				t.Errorf("to %d, %s: Spark's reader failed: %s", n, filepath.Base(e), msg)
			}
		}
		ov := applied(s, planned)
		for _, r := range reads {
			op, store, _ := strings.Cut(strings.TrimSuffix(filepath.Base(r), ".jsonl"), "-")
			id, _ := strconv.ParseInt(op, 10, 64)
			got := readStore(t, ov, id, store, n)
			wantRows := sparkLines(t, r)
			if !slices.Equal(got, wantRows) {
				t.Errorf("to %d, %s: ckpt reads\n%s\nSpark's reader\n%s", n, filepath.Base(r), strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
			}
		}
	}
}

// statePartition finds the partition of a state file path in Spark's message.
var statePartition = regexp.MustCompile(`/state/[0-9]+/([0-9]+)/`)

// checkPartitions checks that every batch of a restart ran with n shuffle partitions.
func checkPartitions(t *testing.T, dir string, n int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "output.jsonl.partitions"))
	lines := strings.Fields(string(data))
	if err != nil || len(lines) < 2 {
		t.Fatalf("%s: no batch ran (%v)", dir, err)
	}
	for i := 1; i < len(lines); i += 2 {
		if lines[i] != fmt.Sprint(n) {
			t.Errorf("%s: batch %s ran with %s shuffle partitions, not %d", dir, lines[i-1], lines[i], n)
		}
	}
}

// readStore reads partitions 0..n-1 of a store with ckpt's reader, normalised and sorted.
func readStore(t *testing.T, s storage.Store, op int64, store string, n int) []string {
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
	for p := range n {
		r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: op, Store: store, Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Each(ctx, func(row *state.Row) error {
			line, err := statetest.Normalize(row.AppendJSON(nil))
			out = append(out, line)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// sparkLines reads a file of Spark's statestore reader, normalised and sorted.
func sparkLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		n, err := statetest.Normalize([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
