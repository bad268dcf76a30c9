package checkpoint_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// A log's ids are runs: a million contiguous batch files, listed in any order, are one run,
// and every query answers as it does over the sorted slice of ids. Before, the Log held every
// id (8 MB per million, twice while it was listed), which made inspect --batches' memory grow
// with the log.
func TestLogRunsMatchSortedIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string][]int64{
		"empty":      nil,
		"one":        {7},
		"negative":   {-70000, -65537, -65536, -1, 0, 1},
		"boundaries": {65534, 65535, 65536, 65537, 131071, 131072},
	}
	dense := make([]int64, 0, 300_000)
	for id := range int64(300_000) {
		if id%100_000 != 5 { // three holes
			dense = append(dense, id)
		}
	}
	sets["dense"] = dense
	sparse := make([]int64, 0, 20_000)
	for range 20_000 {
		sparse = append(sparse, rng.Int64N(1<<40)-1<<39)
	}
	sets["sparse"] = sparse
	mixed := []int64{}
	for id := range int64(70_000) {
		if rng.IntN(3) > 0 {
			mixed = append(mixed, id)
		}
	}
	sets["mixed"] = mixed
	for name, ids := range sets {
		t.Run(name, func(t *testing.T) {
			es := make([]storage.Entry, 0, len(ids)+1)
			for _, id := range ids {
				es = append(es, storage.Entry{Path: fmt.Sprintf("offsets/%d", id)})
			}
			if len(ids) > 0 { // a repeated listing entry is one id
				es = append(es, es[0])
			}
			rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
			l := checkpoint.NewLog("offsets", es)
			want := slices.Compact(slices.Sorted(slices.Values(ids)))
			if got := l.IDs(); !slices.Equal(got, want) {
				t.Fatalf("IDs: %d ids, want %d", len(got), len(want))
			}
			if l.Len() != len(want) {
				t.Errorf("Len = %d, want %d", l.Len(), len(want))
			}
			if got := slices.Collect(l.Backward()); !slices.Equal(got, reversed(want)) {
				t.Errorf("Backward differs")
			}
			runs := 0
			for i := range want {
				if i == 0 || want[i] != want[i-1]+1 {
					runs++
				}
			}
			if len(l.Runs()) != runs {
				t.Errorf("%d runs, want %d", len(l.Runs()), runs)
			}
			probes := []int64{-1 << 63, 1<<63 - 1}
			for _, id := range want {
				probes = append(probes, id-1, id, id+1)
			}
			for range 2000 {
				probes = append(probes, rng.Int64N(1<<41)-1<<40, rng.Int64N(400_000)-50_000)
			}
			for _, p := range probes {
				i := sort.Search(len(want), func(i int) bool { return want[i] >= p })
				has := i < len(want) && want[i] == p
				if l.Has(p) != has {
					t.Fatalf("Has(%d) = %v", p, !has)
				}
				if got, ok := l.Next(p); ok != (i < len(want)) || ok && got != want[i] {
					t.Fatalf("Next(%d) = %d, %v", p, got, ok)
				}
				if got, ok := l.Prev(p); ok != (i > 0) || ok && got != want[i-1] {
					t.Fatalf("Prev(%d) = %d, %v", p, got, ok)
				}
				q := p + rng.Int64N(1000)
				if q < p {
					q = p
				}
				j := sort.Search(len(want), func(i int) bool { return want[i] > q })
				if got := l.CountIn(p, q); got != j-i {
					t.Fatalf("CountIn(%d, %d) = %d, want %d", p, q, got, j-i)
				}
			}
		})
	}
	if !reflect.DeepEqual(checkpoint.NewLog("offsets", nil).Runs(), []checkpoint.Run(nil)) {
		t.Error("an empty log has runs")
	}
}

// Two spellings of one id keep the first by name as the batch file, and the others are
// oddities, whichever order they are listed in.
func TestLogAlternativeSpellings(t *testing.T) {
	for _, order := range [][]string{{"offsets/5", "offsets/+5", "offsets/005"}, {"offsets/005", "offsets/+5", "offsets/5"}} {
		es := []storage.Entry{}
		for _, p := range order {
			es = append(es, storage.Entry{Path: p})
		}
		l := checkpoint.NewLog("offsets", es)
		if !slices.Equal(l.IDs(), []int64{5}) || l.FilePath(5) != "offsets/+5" || len(l.Others) != 2 {
			t.Errorf("%v: ids %v, file %q, others %v", order, l.IDs(), l.FilePath(5), l.Others)
		}
	}
	l := checkpoint.NewLog("offsets", []storage.Entry{{Path: "offsets/007"}, {Path: "offsets/8"}})
	if !slices.Equal(l.IDs(), []int64{7, 8}) || l.FilePath(7) != "offsets/007" || len(l.Runs()) != 1 || len(l.Others) != 0 {
		t.Errorf("ids %v, file %q, runs %v, others %v", l.IDs(), l.FilePath(7), l.Runs(), l.Others)
	}
}

func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// countingNames lists offsets/ and commits/ as n batch files each, in a shuffled-by-blocks
// order, without holding them: what Load keeps is all the test measures.
type countingNames struct {
	storage.Store
	n int64
}

func (s countingNames) EachName(_ context.Context, dir string, fn func(string, bool) error) error {
	if dir != checkpoint.DirOffsets && dir != checkpoint.DirCommits {
		return nil
	}
	buf := make([]byte, 0, 32)
	for k := int64(0); k < 1000; k++ {
		for id := (k * 7919) % 1000; id < s.n; id += 1000 { // not in numeric order
			buf = append(append(buf[:0], dir...), '/')
			buf = strconv.AppendInt(buf, id, 10)
			if err := fn(string(buf), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// Loading a million contiguous batches allocates about what loading a hundred thousand does:
// before, Load kept every id (8 MB per log per million, and a copy while listing).
func TestLoadMemoryFlatInBatches(t *testing.T) {
	retained := func(n int64) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cp, err := checkpoint.Load(context.Background(), countingNames{storage.NewMem(), n})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if cp.Offsets.Len() != int(n) || len(cp.Offsets.Runs()) != 1 || cp.Commits.Len() != int(n) {
			t.Fatalf("offsets %d in %d runs, commits %d", cp.Offsets.Len(), len(cp.Offsets.Runs()), cp.Commits.Len())
		}
		runtime.KeepAlive(cp)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
	}
	small, large := retained(100_000), retained(1_000_000)
	if large > small+1<<20 {
		t.Errorf("a loaded checkpoint holds %d bytes at 1M batches, %d at 100k", large, small)
	}
}
