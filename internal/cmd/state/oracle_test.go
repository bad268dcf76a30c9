package state

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/state/statetest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// TestReadJSONEqualsSparkStateReader runs `ckpt state read CHECKPOINT --operator N --store S
// -o json` (and `--changes --version V`) on every checkpoint real Spark wrote under
// testdata/spark-state and compares its lines, row for row, with what Spark's own
// spark.read.format("statestore") returned on the same checkpoint (oracle/, written by
// scripts/spark-state-fixtures.py). Where Spark's reader failed on the checkpoint
// (oracle/error.txt), the same query's HDFS-backed checkpoint of the same release is the
// oracle. Every release directory must contribute: a release whose fixtures lost their
// oracles fails here.
func TestReadJSONEqualsSparkStateReader(t *testing.T) {
	releases, _ := filepath.Glob("../../../testdata/spark-state/*.*.*")
	if len(releases) < 2 {
		t.Fatalf("want fixtures of at least two Spark releases under testdata/spark-state, have %v", releases)
	}
	for _, rel := range releases {
		cases, _ := filepath.Glob(filepath.Join(rel, "*"))
		compared := 0
		for _, dir := range cases {
			oracles, _ := filepath.Glob(filepath.Join(oracleDir(dir), "*.jsonl"))
			if len(oracles) == 0 {
				continue
			}
			name := filepath.Base(rel) + "/" + filepath.Base(dir)
			t.Run(name, func(t *testing.T) {
				for _, of := range oracles {
					compareOracle(t, dir, of)
				}
			})
			compared++
		}
		if compared == 0 {
			t.Errorf("%s: no fixture with Spark's reading (oracle/*.jsonl)", rel)
		}
	}
}

func oracleDir(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "oracle", "error.txt")); err == nil {
		kind, _, _ := strings.Cut(filepath.Base(dir), "-")
		return filepath.Join(filepath.Dir(dir), kind+"-hdfs", "oracle")
	}
	return filepath.Join(dir, "oracle")
}

func compareOracle(t *testing.T, dir, oracle string) {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(oracle), ".jsonl")
	changes := strings.HasSuffix(base, ".changes")
	base = strings.TrimSuffix(base, ".changes")
	opStr, store, _ := strings.Cut(base, "-")
	op, err := strconv.ParseInt(opStr, 10, 64)
	if err != nil {
		t.Fatalf("%s: bad oracle name", oracle)
	}
	io, _, out, _ := iostreams.Test()
	opts := &Options{
		IO: io,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Location: filepath.Join(dir, "checkpoint"),
		Output:   render.FormatJSON,
		Read:     true,
		ReadOptions: state.ReadOptions{
			Operator: op, Store: store, Partition: -1, Changes: changes,
		},
	}
	if changes {
		// Spark's change feed of the last committed batch: its version is the batch + 1.
		commits, _ := os.ReadDir(filepath.Join(dir, "checkpoint", "commits"))
		last := int64(-1)
		for _, c := range commits {
			if id, err := strconv.ParseInt(c.Name(), 10, 64); err == nil {
				last = max(last, id)
			}
		}
		opts.ReadOptions.Version = last + 1
	}
	if err := run(context.Background(), opts); err != nil {
		t.Fatalf("%s: ckpt state read: %v", filepath.Base(oracle), err)
	}
	// The same read with every delta or changelog record spilled to disk (a budget of one
	// byte): the same bytes, order included, and nothing left in the temporary directory.
	held := bytes.Clone(out.Bytes())
	out.Reset()
	tmp := t.TempDir()
	opts.ReadOptions.MemoryBudget, opts.ReadOptions.TempDir = 1, tmp
	if err := run(context.Background(), opts); err != nil {
		t.Fatalf("%s: ckpt state read, spilling: %v", filepath.Base(oracle), err)
	}
	if !bytes.Equal(out.Bytes(), held) {
		t.Errorf("%s: spilling every record read other bytes:\n%s\nin memory:\n%s", filepath.Base(oracle), out.Bytes(), held)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("%s: %s left in the temporary directory", filepath.Base(oracle), left[0].Name())
	}
	got := normalizeLines(t, held)
	data, err := os.ReadFile(oracle)
	if err != nil {
		t.Fatal(err)
	}
	want := normalizeLines(t, data)
	if !slices.Equal(got, want) {
		t.Errorf("%s: ckpt wrote %d rows, Spark read %d\nckpt:\n%s\nspark:\n%s", filepath.Base(oracle), len(got), len(want),
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// normalizeLines re-renders each JSON line with Spark's JSON writer conventions factored out
// (null fields dropped, numbers compared as numbers: 3.0 and 3) and sorts them; field order
// is kept (Spark's aggregation buffers repeat names).
func normalizeLines(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n, err := statetest.Normalize(line)
		if err != nil {
			t.Fatalf("bad JSON line %s: %v", line, err)
		}
		out = append(out, n)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
