package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func deltas(dir string, from, to int64) []hdfsFile {
	var out []hdfsFile
	for v := from; v <= to; v++ {
		out = append(out, hdfsFile{version: v, name: fmt.Sprintf("%s/%d.delta", dir, v)})
	}
	return out
}

// TestHDFSMaintenanceRule checks the HDFS-backed provider's maintenance decision against
// doSnapshot and cleanup: a snapshot of the last version when the chain to it has more than
// minDeltasForSnapshot deltas; then every version below the first file of the chain of
// last-minVersionsToRetain is deleted.
func TestHDFSMaintenanceRule(t *testing.T) {
	snap := func(v int64) hdfsFile {
		return hdfsFile{version: v, name: fmt.Sprintf("p/%d.snapshot", v), snapshot: true}
	}
	for _, c := range []struct {
		name      string
		files     []hdfsFile
		minDeltas int
		retain    int
		snapshot  int64
		remove    string
	}{
		{"10 deltas: no snapshot (more than 10 wanted)", deltas("p", 1, 10), 10, 100, -1, ""},
		{"11 deltas: snapshot of 11", deltas("p", 1, 11), 10, 100, 11, ""},
		{"2 deltas with minDeltas 2: none", deltas("p", 1, 2), 2, 100, -1, ""},
		{"3 deltas with minDeltas 2: snapshot", deltas("p", 1, 3), 2, 100, 3, ""},
		{"deltas after a snapshot count from it", append(append(deltas("p", 1, 2), snap(3)), deltas("p", 4, 5)...), 2, 100, -1, ""},
		{"retain 2 of 5 deltas: the chain of 3 starts at 1, nothing goes", deltas("p", 1, 5), 10, 2, -1, ""},
		{"retain 2 with a snapshot at 3: versions below 3 go", append(append(deltas("p", 1, 2), snap(3)), deltas("p", 4, 6)...), 10, 2, -1, "p/1.delta p/2.delta"},
		{"retain 1: the chain of 3 has no snapshot, the one written now does not count", deltas("p", 1, 4), 2, 1, 4, ""},
		{"last - retain ≤ 0: no cleanup", append(deltas("p", 1, 2), snap(3)), 10, 3, -1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := slices.Clone(c.files)
			s, rm := hdfsMaintenance(files, c.minDeltas, c.retain)
			if s != c.snapshot || strings.Join(rm, " ") != c.remove {
				t.Errorf("snapshot %d, remove %q; want %d, %q", s, strings.Join(rm, " "), c.snapshot, c.remove)
			}
		})
	}
}

// TestRocksDBCleanupRule checks deleteOldVersions's choice: the newest zip at or below
// max-minVersionsToRetain+1 is the oldest kept.
func TestRocksDBCleanupRule(t *testing.T) {
	for _, c := range []struct {
		zips   []int64
		retain int
		keep   int64
		remove string
	}{
		{[]int64{1, 2, 3, 4, 5}, 100, 0, "[]"},
		{[]int64{1, 2, 3, 4, 5}, 2, 4, "[1 2 3]"},
		{[]int64{1, 2, 3, 4, 5}, 5, 0, "[]"},
		{[]int64{1, 2, 3, 4, 5}, 4, 2, "[1]"},
		{[]int64{2, 4, 6}, 2, 4, "[2]"}, // changelog mode: snapshots every 2 versions
		{[]int64{2, 4, 6}, 3, 4, "[2]"},
		{[]int64{2, 4, 6}, 4, 0, "[]"},
	} {
		keep, rm := rocksCleanup(slices.Clone(c.zips), c.retain)
		if keep != c.keep || fmt.Sprint(rm) != c.remove {
			t.Errorf("zips %v retain %d: keep %d remove %v, want %d %s", c.zips, c.retain, keep, rm, c.keep, c.remove)
		}
	}
}

// stateFiles lists the files under state/0/<p>/ (relative, sorted), SSTs/ names shortened to
// "SSTs/*" counts.
func stateFiles(t *testing.T, store storage.Store, p int) (files []string, ssts int) {
	t.Helper()
	es, err := store.Walk(context.Background(), fmt.Sprintf("state/0/%d", p))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		rel := strings.TrimPrefix(e.Path, fmt.Sprintf("state/0/%d/", p))
		if strings.HasPrefix(rel, "SSTs/") {
			ssts++
			continue
		}
		if !strings.HasPrefix(rel, "_metadata") {
			files = append(files, rel)
		}
	}
	return files, ssts
}

// finalState is the state rows ckpt's reader reads at the latest version, as sorted text.
func finalState(t *testing.T, store storage.Store) (int64, string) {
	t.Helper()
	_, r := readState(t, store)
	var rows []string
	if err := r.Each(context.Background(), func(row *state.Row) error {
		rows = append(rows, fmt.Sprint(row.Partition, row.Key().Values, row.Value().Values))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return r.Version, strings.Join(rows, "\n")
}

// aggInput is a broker with topic "in": 20 records on partition 0 and 15 on 1, keys a-e.
func aggInput(t *testing.T) string {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 2})
	keys := []string{"a", "b", "c", "d", "e"}
	produceKV(t, b.Addr(), "in", 0, keys, 0, 20)
	produceKV(t, b.Addr(), "in", 1, keys, 100, 15)
	return b.Addr()
}

// TestAggregationStateProviders runs one aggregation over two runs with each provider and
// maintenance setting, and checks that every run outputs the same and ckpt's reader reads the
// same state, from the files each provider writes: HDFS with snapshots after 2 deltas and 2
// versions kept; RocksDB zips (retain 3: old zips and their SST files deleted); RocksDB with
// changelog checkpointing (zip snapshots every 2 versions). The offsets log records the provider.
func TestAggregationStateProviders(t *testing.T) {
	addr := aggInput(t)
	ctx := context.Background()
	type result struct {
		out     string
		version int64
		state   string
		store   storage.Store
	}
	run := func(conf map[string]string) result {
		store := storage.NewMem()
		var out []string
		for i, max := range []int{2, 0} {
			q := aggQuery(addr, query.OutputUpdate)
			for k, v := range conf {
				q.Conf[k] = v
			}
			sink := &collectSink{}
			if _, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: sink, max: max}); err != nil {
				t.Fatalf("%v run %d: %v", conf, i, err)
			}
			for _, bt := range sink.batches {
				for _, p := range bt.Parts {
					for _, row := range p.Values {
						out = append(out, fmt.Sprint(bt.ID, row))
					}
				}
			}
		}
		v, st := finalState(t, store)
		return result{strings.Join(out, "\n"), v, st, store}
	}
	hdfs := run(nil)
	if hdfs.version != 5 {
		t.Fatalf("state version %d, want 5 (35 records, 7 a batch)", hdfs.version)
	}
	for _, c := range []struct {
		name  string
		conf  map[string]string
		files string // partition 1's files after version 5
		ssts  int
	}{
		{"hdfs snapshots", map[string]string{query.ConfMinDeltasForSnapshot: "2", query.ConfMinBatchesToRetain: "2"},
			// 3.snapshot (3 deltas > 2); at 5 the chain of 3 is 3.snapshot: 1 and 2 go,
			// 3.delta stays (fetchFiles sees only the snapshot of a version that has both).
			"3.delta 3.snapshot 4.delta 5.delta", 0},
		{"rocksdb", map[string]string{query.ConfStateProvider: query.RocksDBStateProvider, query.ConfMinBatchesToRetain: "3"},
			// at 5 the newest zip ≤ 5-3+1 is 3: zips 1, 2 and their SST files go.
			"3.zip 4.zip 5.zip", 3},
		{"rocksdb changelog", map[string]string{query.ConfStateProvider: query.RocksDBStateProvider, query.ConfRocksDBChangelog: "true",
			query.ConfMinDeltasForSnapshot: "2", query.ConfMinBatchesToRetain: "1"},
			// zips 2 and 4; at 5 the newest zip ≤ 4-1+1 is 4: zip 2 and changelogs 1-3 go.
			"4.changelog 4.zip 5.changelog", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := run(c.conf)
			if got.out != hdfs.out {
				t.Errorf("output:\n%s\nwant (HDFS, no maintenance):\n%s", got.out, hdfs.out)
			}
			if got.version != hdfs.version || got.state != hdfs.state {
				t.Errorf("state version %d:\n%s\nwant %d:\n%s", got.version, got.state, hdfs.version, hdfs.state)
			}
			files, ssts := stateFiles(t, got.store, 1)
			if strings.Join(files, " ") != c.files || ssts != c.ssts {
				t.Errorf("partition 1: %v and %d SST files, want %s and %d", files, ssts, c.files, c.ssts)
			}
			data, err := got.store.ReadFile(ctx, "offsets/4")
			if err != nil {
				t.Fatal(err)
			}
			want := query.HDFSStateProvider
			if p, ok := c.conf[query.ConfStateProvider]; ok {
				want = p
			}
			if !strings.Contains(string(data), `"spark.sql.streaming.stateStore.providerClass":"`+want+`"`) {
				t.Errorf("offsets/4 does not record provider %s:\n%s", want, data)
			}
		})
	}
}

// TestRocksDBCrashMidCommit: a run fails while writing state version 2 (partition 1's zip,
// after partition 0's version and partition 1's SST file are written); the restart re-runs the
// batch over version 1 and writes version 2 again; the output and state equal an unbroken
// run's, and maintenance later deletes the SST file the failed commit left behind.
func TestRocksDBCrashMidCommit(t *testing.T) {
	addr := aggInput(t)
	ctx := context.Background()
	conf := map[string]string{query.ConfStateProvider: query.RocksDBStateProvider, query.ConfMinBatchesToRetain: "2"}
	q := func() *query.Resolved {
		q := aggQuery(addr, query.OutputUpdate)
		for k, v := range conf {
			q.Conf[k] = v
		}
		return resolve(t, q)
	}
	ref := storage.NewMem()
	if _, err := runQuery(t, ctx, q(), ref, runOpts{sink: &collectSink{}}); err != nil {
		t.Fatal(err)
	}
	mem := storage.NewMem()
	faulty := storage.NewFaulty(mem)
	boom := errors.New("injected crash")
	faulty.SetHook(func(_ context.Context, op storage.Op, p string) error {
		if op == storage.OpWrite && p == "state/0/1/2.zip" {
			return boom
		}
		return nil
	})
	if _, err := runQuery(t, ctx, q(), faulty, runOpts{sink: &collectSink{}}); !errors.Is(err, boom) {
		t.Fatalf("first run: %v, want the injected crash", err)
	}
	if _, err := mem.Stat(ctx, "commits/1"); err == nil {
		t.Fatal("commits/1 written although batch 1's state commit failed")
	}
	orphans, err := mem.List(ctx, "state/0/1/SSTs")
	if err != nil || len(orphans) != 2 {
		t.Fatalf("partition 1's SST files after the crash: %v %v, want 2 (version 1's and the failed version 2's)", orphans, err)
	}
	if _, err := runQuery(t, ctx, q(), mem, runOpts{sink: &collectSink{}}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	wv, ws := finalState(t, ref)
	gv, gs := finalState(t, mem)
	if gv != wv || gs != ws {
		t.Errorf("state after the crash and restart: version %d\n%s\nwant %d\n%s", gv, gs, wv, ws)
	}
	files, ssts := stateFiles(t, mem, 1)
	if strings.Join(files, " ") != fmt.Sprintf("%d.zip %d.zip", wv-1, wv) || ssts != 2 {
		t.Errorf("partition 1 after maintenance: %v and %d SST files, want the last 2 zips and their 2 SST files", files, ssts)
	}
	for _, o := range orphans {
		if _, err := mem.Stat(ctx, path.Join("state/0/1/SSTs", path.Base(o.Path))); err == nil {
			t.Errorf("%s (of the failed commit or of version 1) still there", o.Path)
		}
	}
}

// oneRow is a stateView of one partition holding one row.
type oneRow struct{}

func (oneRow) changed(int) ([]stateRow, error) {
	return []stateRow{{key: []byte("k"), value: []byte("v")}}, nil
}
func (oneRow) all(int) ([]stateRow, error) {
	return []stateRow{{key: []byte("k"), value: []byte("v")}}, nil
}

// TestRocksDBBatchedDeletion commits versions 1-17 of a RocksDB store with minBatchesToRetain
// 10 and lists the oldest zip after each maintenance: 3.5 deletes at every maintenance once a
// version is past the retained ones; 4.x waits until round(0.3×10) = 3 versions are
// (shouldSkipDeletion over the versions it has seen), then deletes them together.
func TestRocksDBBatchedDeletion(t *testing.T) {
	for _, c := range []struct {
		line   string
		oldest string // the oldest zip after versions 11..17
	}{
		{"3.5", "[2 3 4 5 6 7 8]"},
		{"4", "[1 1 4 4 4 7 7]"},
	} {
		ctx := context.Background()
		st := storage.NewMem()
		s, err := newProvider(query.RocksDBStateProvider, storeConf{st: st, dir: "state/0", partitions: 1, codec: "lz4", line: c.line, minDeltas: 10, retain: 10})
		if err != nil {
			t.Fatal(err)
		}
		s.loaded(0)
		var oldest []int64
		for v := int64(1); v <= 17; v++ {
			if err := s.commit(ctx, v, oneRow{}, func() {}); err != nil {
				t.Fatal(err)
			}
			if err := s.maintain(ctx, v, oneRow{}); err != nil {
				t.Fatal(err)
			}
			if v <= 10 {
				continue
			}
			es, err := st.List(ctx, "state/0/0")
			if err != nil {
				t.Fatal(err)
			}
			low := v
			for _, e := range es {
				if f, ok := state.ParseFileName(path.Base(e.Path)); ok && f.Kind == state.KindZip {
					low = min(low, f.Version)
				}
			}
			oldest = append(oldest, low)
			ssts, _ := st.List(ctx, "state/0/0/SSTs")
			if int64(len(ssts)) != v-low+1 {
				t.Errorf("%s: %d SST files for zips %d..%d", c.line, len(ssts), low, v)
			}
		}
		if fmt.Sprint(oldest) != c.oldest {
			t.Errorf("%s: oldest zip after versions 11..17: %v, want %s", c.line, oldest, c.oldest)
		}
	}
}

// providerConfs are the RocksDB settings the operator tests run with: whole-partition zips,
// and changelogs with no snapshot in the first 10 versions (a reader replays every changelog,
// delete records included).
var providerConfs = []struct {
	name  string
	conf  map[string]string
	files string // a suffix every version of partition 0 has
}{
	{"rocksdb", map[string]string{query.ConfStateProvider: query.RocksDBStateProvider}, ".zip"},
	{"rocksdb changelog", map[string]string{query.ConfStateProvider: query.RocksDBStateProvider, query.ConfRocksDBChangelog: "true"}, ".changelog"},
}

// checkVersions fails unless partition 0 of store has name<v><suffix> for versions 1..n.
func checkVersions(t *testing.T, store storage.Store, suffix string, n int) {
	t.Helper()
	for v := 1; v <= n; v++ {
		if _, err := store.Stat(context.Background(), fmt.Sprintf("state/0/0/%d%s", v, suffix)); err != nil {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

// TestWindowEvictionProviders is TestWindowAppendWatermark's query (two runs, windows evicted
// by the no-data batches 2 and 4) with the RocksDB provider: the same output, and the state
// ckpt's reader reads (the zip of the last version, or every changelog replayed) holds only
// the window left, so an eviction removed its keys from the version's SST (zip) or wrote their
// deletes (changelog), as Spark's RocksDB store does.
func TestWindowEvictionProviders(t *testing.T) {
	for _, c := range providerConfs {
		t.Run(c.name, func(t *testing.T) {
			b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
			produceAtSecs(t, b.Addr(), "in", 5, 20, 40, 55, 70, 75)
			store, ctx := storage.NewMem(), context.Background()
			sink := &collectSink{}
			q := func() *query.Resolved {
				q := windowQuery(b.Addr(), "append", "window(timestamp, '1 minute')")
				maps.Copy(q.Conf, c.conf)
				return resolve(t, q)
			}
			if _, err := runQuery(t, ctx, q(), store, runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			produceAtSecs(t, b.Addr(), "in", 50, 80, 130)
			if _, err := runQuery(t, ctx, q(), store, runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			if got := windowRows(sink); got != "2:0-60=4 4:60-120=3" {
				t.Errorf("output %s", got)
			}
			if got := stateWindows(t, store); got != "120-180=1" {
				t.Errorf("state %s, want only the window not evicted", got)
			}
			checkVersions(t, store, c.files, 5)
			cp, _ := readState(t, store)
			checkNoFindings(t, ctx, cp)
		})
	}
}

// TestDedupProviders is TestDedupRestart's dropDuplicates with the RocksDB provider: the same
// output by batch and the same state, in the provider's files.
func TestDedupProviders(t *testing.T) {
	for _, c := range providerConfs {
		t.Run(c.name, func(t *testing.T) {
			b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
			produceKV(t, b.Addr(), "in", 0, dedupKeys, 0, 14)
			store, ctx := storage.NewMem(), context.Background()
			q := func() *query.Resolved {
				q := dedupQuery(b.Addr())
				maps.Copy(q.Conf, c.conf)
				return resolve(t, q)
			}
			sink := &collectSink{}
			if _, err := runQuery(t, ctx, q(), store, runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			produceKV(t, b.Addr(), "in", 0, dedupKeys, 14, 7)
			if _, err := runQuery(t, ctx, q(), store, runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, bt := range sink.batches {
				got = append(got, batchOutput(t, bt))
			}
			if fmt.Sprint(got) != fmt.Sprint(dedupFirst) {
				t.Errorf("output by batch %q, want %q", got, dedupFirst)
			}
			if v, keys := dedupState(t, store); v != 3 || fmt.Sprint(keys) != "[a b c d e f g h i j]" {
				t.Errorf("state version %d keys %v, want 3 and a-j", v, keys)
			}
			checkVersions(t, store, c.files, 3)
			if _, err := store.Stat(ctx, "state/0/0/1.delta"); err == nil {
				t.Error("a delta file with the RocksDB provider")
			}
		})
	}
}

// TestDedupWatermarkProviders is TestDedupWatermark with the RocksDB provider: keys evicted by
// the watermark (with it and within it) leave the RocksDB state as they leave the HDFS one.
func TestDedupWatermarkProviders(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKeyedAtSecs(t, b.Addr(), dedupWMInput)
	for _, p := range providerConfs {
		for _, c := range []struct {
			within bool
			out    []string
			state  string
		}{{false, dedupWMOut, "i@50"}, {true, dedupWithinOut, "c<41 f<50 h<45 i<60"}} {
			t.Run(fmt.Sprint(p.name, " within=", c.within), func(t *testing.T) {
				store, sink := storage.NewMem(), &collectSink{}
				q := dedupWMQuery(b.Addr(), c.within)
				maps.Copy(q.Conf, p.conf)
				if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: sink}); err != nil {
					t.Fatal(err)
				}
				if got := dedupWMRows(sink); !slices.Equal(got, c.out) {
					t.Errorf("output %q, want %q", got, c.out)
				}
				if got := dedupWMState(t, store); got != c.state {
					t.Errorf("state %s, want %s", got, c.state)
				}
				checkVersions(t, store, p.files, 1)
			})
		}
	}
}
