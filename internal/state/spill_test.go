package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readJSON reads opts with `state read -o json`'s writer and says how many runs it spilled.
func readJSON(t *testing.T, dir string, opts ReadOptions) ([]byte, int) {
	t.Helper()
	cp, l := openFixture(t, dir)
	r, err := NewReader(context.Background(), cp, l, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.WriteJSON(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), r.spilledRuns
}

// emptyDir fails unless dir holds nothing: the runs' temporary directory was removed.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Fatalf("%s holds %s after the read: the spill directory was not removed", dir, ents[0].Name())
	}
}

// TestReadSpillEqualsInMemory: a version whose delta records are spilled to sorted runs (a
// budget of a few KiB, merges of 3 runs at a time) reads byte for byte the rows that holding
// them in memory gives: version 1 of a partition that is one delta (updates, removes, removed
// keys put again, removes of keys never put), and version 5, a snapshot then two deltas.
func TestReadSpillEqualsInMemory(t *testing.T) {
	dir := t.TempDir()
	deltaOnly, err := writeBenchDelta(filepath.Join(dir, "delta/checkpoint"), 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeBenchState(filepath.Join(dir, "snap/checkpoint"), 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts ReadOptions
		rows int64
	}{
		{"delta", ReadOptions{Operator: 0, Partition: 0, Version: 1}, deltaOnly},
		{"snap", ReadOptions{Operator: 0, Partition: -1}, -1},
		{"snap", ReadOptions{Operator: 0, Partition: 0, Version: 4}, -1},
	} {
		root := filepath.Join(dir, c.name)
		held := c.opts
		held.MemoryBudget = 1 << 40
		want, runs := readJSON(t, root, held)
		if runs != 0 {
			t.Fatalf("%s %+v: %d runs spilled with no budget", c.name, c.opts, runs)
		}
		if n := bytes.Count(want, []byte{'\n'}); c.rows >= 0 && int64(n) != c.rows {
			t.Fatalf("%s: %d rows in memory, the generator made %d", c.name, n, c.rows)
		}
		// The default budget holds these small partitions: the same path as no budget.
		if got, _ := readJSON(t, root, c.opts); !bytes.Equal(got, want) {
			t.Fatalf("%s %+v: the default budget reads other rows", c.name, c.opts)
		}
		for _, fan := range []int{3, 64} {
			tmp := t.TempDir()
			spill := c.opts
			spill.MemoryBudget, spill.TempDir, spill.fanIn = 8<<10, tmp, fan
			got, runs := readJSON(t, root, spill)
			if runs < 10 {
				t.Fatalf("%s %+v: %d runs spilled, want many", c.name, c.opts, runs)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %+v fan-in %d: spilled read is %d bytes, in memory %d (first difference at %d)",
					c.name, c.opts, fan, len(got), len(want), firstDiff(got, want))
			}
			emptyDir(t, tmp)
		}
	}
}

// TestReadSpillRemovedOnError: a read that stops (the writer fails, the context is cancelled)
// removes its runs all the same.
func TestReadSpillRemovedOnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := writeBenchDelta(filepath.Join(dir, "checkpoint"), 256<<10); err != nil {
		t.Fatal(err)
	}
	cp, l := openFixture(t, dir)
	boom := errors.New("disk full")
	for _, stop := range []string{"emit", "cancel"} {
		tmp := t.TempDir()
		r, err := NewReader(context.Background(), cp, l, ReadOptions{Operator: 0, Partition: 0, Version: 1, MemoryBudget: 8 << 10, TempDir: tmp})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		err = r.Each(ctx, func(*Row) error {
			if n++; n < 100 {
				return nil
			}
			if stop == "emit" {
				return boom
			}
			cancel()
			return nil
		})
		cancel()
		want := boom
		if stop == "cancel" {
			want = context.Canceled
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", stop, err, want)
		}
		emptyDir(t, tmp)
	}
}

// model is rebuild's rule done the plain way: base rows no step names, in order, then the
// latest put of each key, sorted.
func model(base [][2]string, steps []step) []string {
	last := map[string]*step{}
	for i := range steps {
		last[steps[i].key] = &steps[i]
	}
	var out []string
	for _, kv := range base {
		if last[kv[0]] == nil {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	keys := []string{}
	for k, s := range last {
		if !s.del {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+last[k].value)
	}
	return out
}

type step struct {
	key, value string
	del        bool
}

func runRebuild(t *testing.T, o rebuildOptions, base [][2]string, steps []step) ([]string, rebuildStats) {
	t.Helper()
	var src baseSource
	if base != nil {
		src = func(fn func(k, v []byte) error) error {
			for _, kv := range base {
				if err := fn([]byte(kv[0]), []byte(kv[1])); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var out []string
	stats, err := rebuild(context.Background(), o, src, func(fn func(k, v []byte, del bool) error) error {
		for _, s := range steps {
			if err := fn([]byte(s.key), []byte(s.value), s.del); err != nil {
				return err
			}
		}
		return nil
	}, func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, stats
}

// FuzzRebuild: random puts and removes over an optional base, rebuilt in memory and through
// runs of a tiny budget and fan-in, give the model's rows in the model's order. Inputs are
// capped at 3,000 records so that each run is quick.
func FuzzRebuild(f *testing.F) {
	f.Add([]byte{1, 1, 2, 0x81, 1, 0x82, 2, 1, 5, 2, 1, 0x03, 9})
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x41, 1, 0x42, 2, 1, 1})
	f.Add(bytes.Repeat([]byte{1, 200, 3, 0x41, 7, 0x85, 4, 0x10, 3, 0x50, 2}, 40))
	seq := []byte{1, 3, 2}
	for i := range 600 {
		seq = append(seq, byte(i*37), byte(i*11))
	}
	f.Add(seq)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		hasBase, budget, fan := data[0]&1 == 1, int64(data[1])*32+1, int(data[2]%4)+2
		var base [][2]string
		if hasBase {
			base = [][2]string{}
		}
		inBase := map[string]bool{}
		var steps []step
		ops := data[3:]
		for i := 0; i+1 < len(ops) && i < 6000; i += 2 {
			op, arg := ops[i], ops[i+1]
			// Keys of varying length sharing prefixes (and the empty key): "", "k1",
			// "pppppppppppk12", …: long enough for the 8-byte steps of abbreviate.
			key := ""
			if id := op & 0x3f; id != 0 {
				key = strings.Repeat("p", int(id%3)*6) + fmt.Sprintf("k%d", id*7%61)
			}
			value := string(bytes.Repeat([]byte{'a' + arg%26}, int(arg%4)))
			switch {
			case op&0x80 != 0 && hasBase:
				if !inBase[key] { // a base holds a key once
					inBase[key] = true
					base = append(base, [2]string{key, value})
				}
			case op&0x40 != 0:
				steps = append(steps, step{key: key, del: true})
			default:
				steps = append(steps, step{key: key, value: value})
			}
		}
		want := model(base, steps)
		got, stats := runRebuild(t, rebuildOptions{Budget: 1 << 40}, base, steps)
		if stats.Runs != 0 || !slices.Equal(got, want) {
			t.Fatalf("in memory (%d runs):\n got %q\nwant %q", stats.Runs, got, want)
		}
		tmp := t.TempDir()
		got, stats = runRebuild(t, rebuildOptions{Budget: budget, FanIn: fan, TempDir: tmp}, base, steps)
		if !slices.Equal(got, want) {
			t.Fatalf("spilled (budget %d, fan-in %d, %d runs):\n got %q\nwant %q", budget, fan, stats.Runs, got, want)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
			t.Fatalf("%s left behind", ents[0].Name())
		}
	})
}

// TestRebuildSpillsPastBudget: the records go to runs once they are over the budget, and only
// then (the seed of FuzzRebuild that shows each rule once).
func TestRebuildSpillsPastBudget(t *testing.T) {
	base := [][2]string{{"b", "base-b"}, {"a", "base-a"}, {"c", "base-c"}, {"d", "base-d"}}
	steps := []step{
		{key: "c", value: "1"}, {key: "a", del: true}, {key: "e", value: "1"}, {key: "z", del: true},
		{key: "e", del: true}, {key: "e", value: "2"}, {key: "", value: ""}, {key: "c", value: "2"},
	}
	want := []string{"b=base-b", "d=base-d", "=", "c=2", "e=2"}
	if got := model(base, steps); !slices.Equal(got, want) {
		t.Fatalf("model: %q, want %q", got, want)
	}
	for _, budget := range []int64{1 << 20, 1, 90, 400} {
		got, stats := runRebuild(t, rebuildOptions{Budget: budget, FanIn: 2, TempDir: t.TempDir()}, base, steps)
		if !slices.Equal(got, want) {
			t.Fatalf("budget %d: %q, want %q", budget, got, want)
		}
		if spilled := stats.Runs > 0; spilled != (budget < 1<<20) {
			t.Fatalf("budget %d: %d runs", budget, stats.Runs)
		}
	}
}

// TestAbbreviateOrdersAsBytes: two records whose abbreviations differ are in the order of
// their key bytes, over sets of keys shaped as state keys are (a shared header, a constant
// prefix, lengths that differ) and random ones.
func TestAbbreviateOrdersAsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		s := &spiller{}
		n := 2 + rng.IntN(200)
		for range n {
			var k []byte
			switch trial % 3 {
			case 0:
				k = benchKey(nil, rng.Int64N(1<<40))
			case 1:
				k = append([]byte("header-constant-"), fmt.Sprintf("%x", rng.Int64N(int64(1)<<rng.IntN(60)+1))...)
			default:
				k = make([]byte, rng.IntN(24))
				for j := range k {
					k[j] = byte(rng.IntN(3))
				}
			}
			s.recs = append(s.recs, spillRec{off: len(s.buf), klen: int32(len(k)), vlen: -1})
			s.buf = append(s.buf, k...)
		}
		s.abbreviate()
		for _, a := range s.recs {
			for _, b := range s.recs {
				if a.abbr < b.abbr && bytes.Compare(s.key(a), s.key(b)) >= 0 {
					t.Fatalf("trial %d: abbr %x < %x but key %q >= %q", trial, a.abbr, b.abbr, s.key(a), s.key(b))
				}
			}
		}
	}
}

// TestRunRoundTrip: a run's records (compressed blocks of runBlock bytes) read back as
// written, records larger than a block and records cut across blocks included; a run cut
// short or with a damaged block is an error naming the run.
func TestRunRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type rec struct {
		key, value []byte
		del        bool
	}
	var recs []rec
	for i := range 3000 {
		r := rec{key: fmt.Appendf(nil, "key-%08d", i), del: i%7 == 3}
		if !r.del {
			n := rng.IntN(300)
			if i%500 == 1 {
				n = 3*runBlock + rng.IntN(runBlock) // spans blocks
			}
			r.value = make([]byte, n)
			for j := range r.value {
				r.value[j] = byte(rng.IntN(4))
			}
		}
		recs = append(recs, r)
	}
	tmp, err := newSpillDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.remove()
	s := newSpiller(context.Background(), tmp, "t", rebuildOptions{Budget: 1 << 20, FanIn: 4}, false)
	path, err := s.newRun(func(w *runWriter) error {
		for _, r := range recs {
			if err := w.write(r.key, r.value, r.del); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) (int, error) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := s.mergeRuns([]string{path}, false)
		if err != nil {
			return 0, err
		}
		defer m.close()
		n := 0
		for m.next() {
			r := recs[n]
			if !bytes.Equal(m.key, r.key) || m.del != r.del || !bytes.Equal(m.value, r.value) {
				t.Fatalf("record %d: %q (%d bytes, del %v), want %q (%d bytes, del %v)", n, m.key, len(m.value), m.del, r.key, len(r.value), r.del)
			}
			n++
		}
		return n, m.err
	}
	if n, err := read(data); n != len(recs) || err != nil {
		t.Fatalf("read %d records of %d: %v", n, len(recs), err)
	}
	raw := 0
	for _, r := range recs {
		raw += len(r.key) + len(r.value) + 4
	}
	if len(data) > raw*3/4 {
		t.Errorf("a run of %d bytes for %d bytes of records: not compressed", len(data), raw)
	}
	for name, b := range map[string][]byte{
		"cut short":     data[:len(data)/2],
		"no end mark":   data[:len(data)-4],
		"damaged block": append(append(bytes.Clone(data[:len(data)/2]), 0xff, 0xff, 0xff), data[len(data)/2+3:]...),
	} {
		if _, err := read(b); err == nil || !strings.Contains(err.Error(), "reading the spilled run "+path) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSortBufferAsReference: the radix sort of the buffer leaves each key's latest record in
// key order, as a stable sort by key bytes does, over keys shaped as state keys (a shared
// header), keys that tie on their abbreviation (long shared prefixes), and repeated keys.
func TestSortBufferAsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		s := &spiller{}
		n := rng.IntN(3000)
		for i := range n {
			var k []byte
			switch trial % 3 {
			case 0:
				k = benchKey(nil, rng.Int64N(int64(n/2+1)))
			case 1:
				k = fmt.Appendf(nil, "%s%03d-%d", strings.Repeat("p", 1+rng.IntN(3)), rng.IntN(40), rng.IntN(3))
			default:
				k = []byte{byte(rng.IntN(3)), byte(rng.IntN(2))}[:rng.IntN(3)]
			}
			s.recs = append(s.recs, spillRec{off: len(s.buf), klen: int32(len(k)), vlen: 4})
			s.buf = append(append(s.buf, k...), fmt.Appendf(nil, "%04d", i%10000)...)
		}
		ref := slices.Clone(s.recs)
		slices.SortStableFunc(ref, func(a, b spillRec) int { return bytes.Compare(s.key(a), s.key(b)) })
		var want []string
		for i, r := range ref {
			if i+1 < len(ref) && bytes.Equal(s.key(r), s.key(ref[i+1])) {
				continue
			}
			want = append(want, string(s.key(r))+"="+string(s.value(r)))
		}
		s.sortBuffer()
		var got []string
		for _, r := range s.recs {
			got = append(got, string(s.key(r))+"="+string(s.value(r)))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: %d records sorted to %d, want %d", trial, n, len(got), len(want))
		}
	}
}
