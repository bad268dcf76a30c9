package repartition

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// writeRocksState copies Spark 4.2.0's agg-rocksdb fixture to dir and replaces version 5 of
// partitions 0 and 1 (the last committed batch's) with ckpt's RocksDB writing of rows of the
// fixture's value and a key (k, b) of a random 16-hex-digit k in ascending order and b the
// partition, until each partition's SST file reaches sstBytes (or holds maxRows rows, if
// maxRows > 0). With same, both partitions hold the same keys (b 0): damaged state. It returns
// the rows written.
func writeRocksState(tb testing.TB, dir string, sstBytes, maxRows int64, same bool) int64 {
	tb.Helper()
	if err := os.CopyFS(dir, os.DirFS(rocksFixture)); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	s := open(tb, rocksFixture)
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := state.Scan(ctx, s)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: 0, Partition: 0, Version: 5, Raw: true})
	if err != nil {
		tb.Fatal(err)
	}
	var value []byte
	_ = r.Each(ctx, func(row *state.Row) error {
		if value == nil {
			value = bytes.Clone(row.RawValue)
		}
		return nil
	})
	keyType := &statefmt.Type{Name: "struct", Fields: []statefmt.Field{{Name: "k", Type: &statefmt.Type{Name: "string"}}, {Name: "b", Type: &statefmt.Type{Name: "integer"}}}}
	rng := rand.New(rand.NewPCG(3, 4))
	var rows int64
	for part := range 2 {
		b := int32(part)
		if same {
			rng, b = rand.New(rand.NewPCG(3, 4)), 0
		}
		pdir := filepath.Join(dir, "state/0", strconv.Itoa(part))
		uuid := fmt.Sprintf("00000000-0000-8000-8000-%012d", part)
		f, err := os.Create(filepath.Join(pdir, "SSTs", statefmt.RocksDBSSTName(uuid)))
		if err != nil {
			tb.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		cw := &countingWriter{w: bw}
		w := statefmt.NewRocksDBWriterTo(cw, nil)
		var k uint64
		for n := int64(0); cw.n < sstBytes && (maxRows <= 0 || n < maxRows); n++ {
			k += 1 + rng.Uint64N(1<<36)
			key, err := statefmt.EncodeRow(&statefmt.Object{Names: []string{"k", "b"}, Values: []any{fmt.Sprintf("%016x", k), b}}, keyType)
			if err != nil {
				tb.Fatal(err)
			}
			if err := w.Put(key, value); err != nil {
				tb.Fatal(err)
			}
			rows++
		}
		v, err := w.Finish(uuid, "4")
		if err != nil {
			tb.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			tb.Fatal(err)
		}
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
		_ = os.Remove(filepath.Join(pdir, ".5.zip.crc")) // Spark's checksum of its own zip
		if err := os.WriteFile(filepath.Join(pdir, "5.zip"), v.Zip, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return rows
}

// TestRocksDBSpilledEqualsInMemory: a RocksDB store whose new partitions' rows are sorted in
// many spilled runs (a budget of a few rows, runs merged three at a time, so in several
// passes) is repartitioned into exactly the files of the same plan sorted in memory, 2→3 and
// 2→1, and those hold every row of the store.
func TestRocksDBSpilledEqualsInMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	n := writeRocksState(t, dir, 1<<40, 3000, false)
	s := open(t, dir)
	for _, to := range []int{3, 1} {
		held, heldFiles := plan(t, s, Options{Partitions: to})
		if held.Refused != "" || held.sortRuns != 0 || held.Rows != n {
			t.Fatalf("to %d in memory: refused %q, %d runs, %d rows of %d", to, held.Refused, held.sortRuns, held.Rows, n)
		}
		tmp := t.TempDir()
		spilled, spilledFiles := plan(t, s, Options{Partitions: to, SortBudget: 4 << 10, sortFanIn: 3, TempDir: tmp})
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("to %d: the runs' directory stays: %v", to, left)
		}
		if spilled.sortRuns < 100 {
			t.Errorf("to %d: %d runs spilled, want many", to, spilled.sortRuns)
		}
		if len(spilled.Actions) != len(held.Actions) {
			t.Fatalf("to %d: %d actions spilled, %d in memory", to, len(spilled.Actions), len(held.Actions))
		}
		for i, a := range spilled.Actions {
			if h := held.Actions[i]; a.Path != h.Path || a.After != h.After || !bytes.Equal(spilledFiles[a.Path], heldFiles[a.Path]) {
				t.Errorf("to %d: spilled %s %s, in memory %s %s", to, a.Path, a.After.Short(), h.Path, h.After.Short())
			}
		}
		before := unpartitioned(rows(t, s, 2))
		after := unpartitioned(rows(t, applied(s, spilledFiles), to))
		if int64(len(before)) != n || !slices.Equal(before, after) {
			t.Errorf("to %d: %d rows before, %d after", to, len(before), len(after))
		}
	}
}

// TestRocksDBDuplicateKeys: the same key in two old partitions of a store is damaged state; the
// plan fails, whether the rows were sorted in memory or spilled, and names the partition.
func TestRocksDBDuplicateKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	writeRocksState(t, dir, 1<<40, 500, true)
	s := open(t, dir)
	for _, budget := range []int64{0, 2 << 10} {
		_, err := NewPlan(context.Background(), s, Options{Partitions: 1, SortBudget: budget, TempDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "operator 0 store default new partition 0: 500 of its 1000 rows have a key another row has") {
			t.Errorf("budget %d: %v", budget, err)
		}
	}
}
