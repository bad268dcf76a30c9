package engine

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// produceKV writes records key keys[i%len(keys)], value strconv(i) for i in [from, from+n) to
// topic/partition.
func produceKV(t testing.TB, addr, topic string, partition int32, keys []string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Key: []byte(keys[i%len(keys)]), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readState opens the latest state of operator 0 with ckpt's state reader.
func readState(t *testing.T, store storage.Store) (*checkpoint.Checkpoint, *state.Reader) {
	t.Helper()
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	l, err := state.Scan(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: 0, Partition: -1})
	if err != nil {
		t.Fatal(err)
	}
	return cp, r
}

type aggWant struct {
	n, sum, lo int64
	hi         string
	mean       float64
}

func aggQuery(addr string, mode string) *query.Query {
	q := kafkaQuery(addr, "subscribe=in", "maxOffsetsPerTrigger=7")
	q.Trigger = "availableNow"
	q.GroupBy = []string{"string(key) AS k"}
	q.Agg = []string{"count(*) AS n, sum(int(string(value))) AS s", "min(int(string(value))) AS lo, max(string(value)) AS hi", "avg(int(string(value))) AS mean"}
	q.OutputMode = mode
	q.Conf = map[string]string{"spark.sql.shuffle.partitions": "3"}
	return q
}

// TestAggregationUpdateRestart runs a grouped count/sum/min/max/avg in update mode over two
// runs (the second loads the state the first wrote from the delta files), and checks the last
// update of every key, the state rows (partition by Spark's hash, buffers), and the files.
func TestAggregationUpdateRestart(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 2})
	keys := []string{"a", "b", "c", "d", "e"}
	produceKV(t, b.Addr(), "in", 0, keys, 0, 20)
	produceKV(t, b.Addr(), "in", 1, keys, 100, 15)
	store := storage.NewMem()
	sink := &collectSink{}
	ctx := context.Background()
	st, err := runQuery(t, ctx, resolve(t, aggQuery(b.Addr(), query.OutputUpdate)), store, runOpts{sink: sink, max: 2})
	if err != nil || st.Batches != 2 {
		t.Fatalf("first run: %+v %v", st, err)
	}
	produceKV(t, b.Addr(), "in", 0, keys, 20, 9)
	sink2 := &collectSink{}
	if _, err := runQuery(t, ctx, resolve(t, aggQuery(b.Addr(), query.OutputUpdate)), store, runOpts{sink: sink2}); err != nil {
		t.Fatal(err)
	}

	want := map[string]*aggWant{}
	add := func(from, n int) {
		for i := from; i < from+n; i++ {
			k := keys[i%len(keys)]
			w := want[k]
			if w == nil {
				w = &aggWant{lo: int64(i), hi: strconv.Itoa(i)}
				want[k] = w
			}
			w.n++
			w.sum += int64(i)
			w.lo = min(w.lo, int64(i))
			if s := strconv.Itoa(i); s > w.hi {
				w.hi = s
			}
			w.mean = float64(w.sum) / float64(w.n)
		}
	}
	add(0, 29)
	add(100, 15)

	last := map[string][]any{}
	for _, s := range []*collectSink{sink, sink2} {
		for _, bt := range s.batches {
			if len(bt.Columns) != 6 || bt.Columns[0].Name != "k" || bt.Columns[5].Name != "mean" {
				t.Fatalf("columns %+v", bt.Columns)
			}
			seen := map[string]bool{}
			for _, p := range bt.Parts {
				for _, row := range p.Values {
					k := row[0].(string)
					if seen[k] {
						t.Errorf("batch %d outputs key %s twice", bt.ID, k)
					}
					seen[k] = true
					last[k] = row
				}
			}
		}
	}
	if len(last) != len(keys) {
		t.Fatalf("keys output: %v", last)
	}
	for k, w := range want {
		row := last[k]
		got := aggWant{n: row[1].(int64), sum: row[2].(int64), lo: row[3].(int64), hi: row[4].(string), mean: row[5].(float64)}
		if got != *w {
			t.Errorf("key %s: last update %+v, want %+v", k, got, *w)
		}
	}

	// The state: version 7 (batches 0-6: 29+15 rows at 7 per batch), read back by ckpt's reader
	// (the one `ckpt state read` uses), every key in Spark's hash partition.
	cp, r := readState(t, store)
	if r.Version != 7 {
		t.Errorf("state version %d, want 7 (batches 0-6)", r.Version)
	}
	rows := 0
	err = r.Each(ctx, func(row *state.Row) error {
		rows++
		k, v := row.Key(), row.Value()
		name := k.Values[0].(string)
		p, err := statefmt.Partition(k, r.Schema().Families[0].Key, []int{0}, 3)
		if err != nil || p != row.Partition {
			t.Errorf("key %s in partition %d, Spark's hash says %d (%v)", name, row.Partition, p, err)
		}
		w := want[name]
		// count, sum, min, max, avg's (sum, count)
		got := fmt.Sprint(v.Values...)
		exp := fmt.Sprint(w.n, w.sum, w.lo, w.hi, float64(w.sum), w.n)
		if got != exp {
			t.Errorf("state of %s: %s, want %s", name, got, exp)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(keys) {
		t.Errorf("%d state rows, want %d", rows, len(keys))
	}
	for p := 0; p < 3; p++ {
		for v := 1; v <= 7; v++ {
			if _, err := store.Stat(ctx, fmt.Sprintf("state/0/%d/%d.delta", p, v)); err != nil {
				t.Errorf("partition %d version %d: %v", p, v, err)
			}
		}
	}
	// The planner (replay, rewind) and doctor (state checks included) read the checkpoint with
	// no warning and no finding.
	checkNoFindings(t, ctx, cp)
	if _, err := store.Stat(ctx, "state/0/_metadata/metadata"); err == nil {
		t.Error("operator metadata written for Spark 3.5, which does not write it")
	}
	data, err := store.ReadFile(ctx, "offsets/0")
	if err != nil {
		t.Fatal(err)
	}
	seq, err := logformat.ParseOffsets("offsets/0", data)
	if err != nil {
		t.Fatal(err)
	}
	confs := map[string]string{}
	for _, kv := range seq.Metadata.Conf {
		confs[kv.Key] = kv.Value
	}
	if confs["spark.sql.streaming.aggregation.stateFormatVersion"] != "2" || confs["spark.sql.shuffle.partitions"] != "3" {
		t.Errorf("offsets/0 conf %v", confs)
	}
}

// TestAggregationComplete outputs every group at every batch.
func TestAggregationComplete(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKV(t, b.Addr(), "in", 0, []string{"a", "b", "c"}, 0, 14)
	sink := &collectSink{}
	if _, err := runQuery(t, context.Background(), resolve(t, aggQuery(b.Addr(), query.OutputComplete)), storage.NewMem(), runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	if len(sink.batches) != 2 {
		t.Fatalf("%d batches, want 2", len(sink.batches))
	}
	for _, bt := range sink.batches {
		if bt.NumRows != 3 {
			t.Errorf("batch %d: %d rows, want every group (3)", bt.ID, bt.NumRows)
		}
	}
}

// TestAggregationBufferSchemaSpark: the state schema of count(*), sum(long), avg(double),
// max(string), min(timestamp) is the prefix of the value schema Spark wrote for the same
// aggregates (testdata/spark-state/*/agg-hdfs: count, sum(x), avg(d), max(s), min(ts), …), and
// the key of string(key) is a nullable string like Spark's k.
func TestAggregationBufferSchemaSpark(t *testing.T) {
	q := &query.Query{Checkpoint: "mem://x", Sink: "noop", OutputMode: "update",
		GroupBy: []string{"string(key) AS k"},
		Agg:     []string{"count(*) AS n, sum(int(string(value))) AS s, avg(float(string(value))) AS a, max(string(value)) AS m, min(timestamp) AS t"}}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAggregator(r, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"3.5.8", "4.0.2", "4.1.4", "4.2.0"} {
		f := "../../testdata/spark-state/" + rel + "/agg-hdfs/checkpoint/state/0/0/_metadata/schema"
		s, _ := sparkSchema(t, f)
		sv := s.Families[0].Value
		for i, fld := range a.valueType.Fields {
			sf := sv.Fields[i]
			if fld.Name != sf.Name || fld.Type.String() != sf.Type.String() || fld.Nullable != sf.Nullable {
				t.Errorf("%s: buffer field %d is %s %s nullable=%v, Spark's %s %s nullable=%v", rel, i, fld.Name, fld.Type, fld.Nullable, sf.Name, sf.Type, sf.Nullable)
			}
		}
		sk := s.Families[0].Key.Fields[0]
		if kf := a.keyType.Fields[0]; kf.Type.String() != sk.Type.String() || kf.Nullable != sk.Nullable {
			t.Errorf("%s: key %+v, Spark's %+v", rel, kf, sk)
		}
	}
}

// TestAggregationCrashRerun: a crash at every phase of batch 1 (after offsets/1, mid-sink,
// before commits/1: the last two after state version 2 was written), then a restart: batch 1
// re-runs against state version 1 and rewrites version 2, so no row is counted twice.
func TestAggregationCrashRerun(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	keys := []string{"a", "b", "c"}
	produceKV(t, b.Addr(), "in", 0, keys, 0, 21)
	ctx := context.Background()
	for _, phase := range []string{PhaseAfterOffsets, PhaseMidSink, PhaseBeforeCommit} {
		t.Run(phase, func(t *testing.T) {
			store := storage.NewMem()
			crashAt(t, ctx, resolve(t, aggQuery(b.Addr(), query.OutputUpdate)), store, &collectSink{}, 1, phase)
			st, err := runQuery(t, ctx, resolve(t, aggQuery(b.Addr(), query.OutputUpdate)), store, runOpts{sink: &collectSink{}})
			if err != nil {
				t.Fatal(err)
			}
			if st.Reran == nil || *st.Reran != 1 || st.LastBatch != 2 {
				t.Errorf("restart: %+v, want batch 1 re-run and batch 2 last", st)
			}
			_, r := readState(t, store)
			counts := map[string]int64{}
			if err := r.Each(ctx, func(row *state.Row) error {
				counts[row.Key().Values[0].(string)] = row.Value().Values[0].(int64)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(counts) != "map[a:7 b:7 c:7]" {
				t.Errorf("counts after the re-run: %v, want 7 each", counts)
			}
		})
	}
}

// TestAggregationKeyNames: the state key fields are named as Spark's analyzer leaves the
// grouping attributes: _groupingexpression for an expression (seen in Spark's schema check by
// the live hand-over), the Kafka column for a plain column even under an alias.
func TestAggregationKeyNames(t *testing.T) {
	q := &query.Query{Checkpoint: "mem://x", Sink: "noop", OutputMode: "update",
		GroupBy: []string{"string(key) AS k, topic AS t, partition"}, Agg: []string{"count(*) AS n"}}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAggregator(r, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.keyType.String(); got != "struct<_groupingexpression:string,topic:string,partition:int>" {
		t.Errorf("key schema %s", got)
	}
	var out []string
	for _, c := range r.Grouping.Columns() {
		out = append(out, c.Name)
	}
	if fmt.Sprint(out) != "[k t partition n]" {
		t.Errorf("output columns %v", out)
	}
}
