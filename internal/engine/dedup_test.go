package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// dedupKeys are the record keys (record i has key dedupKeys[i] and value i): with 7 records
// per batch, keys repeat within a batch and across batches, and new ones arrive in each.
var dedupKeys = strings.Fields("a b a c b a d  c e a f e d g  h b h i g a j")

// dedupFirst is the output of dropDuplicates("k") over dedupKeys, batch by batch: each key's
// first record, "key=value".
var dedupFirst = []string{"a=0 b=1 c=3 d=6", "e=8 f=10 g=13", "h=14 i=17 j=20"}

func dedupQuery(addr string) *query.Query {
	q := kafkaQuery(addr, "subscribe=in", "maxOffsetsPerTrigger=7")
	q.Trigger = "availableNow"
	q.Select = []string{"string(key) AS k", "string(value) AS v", "partition"}
	q.DropDuplicates = []string{"k"}
	q.Conf = map[string]string{"spark.sql.shuffle.partitions": "3"}
	return q
}

// batchOutput renders a collected batch's rows as "k=v", sorted by key (the order across
// state partitions is Spark's task order, checked elsewhere).
func batchOutput(t *testing.T, b *Batch) string {
	t.Helper()
	if len(b.Columns) != 3 || b.Columns[0].Name != "k" || b.Columns[1].Name != "v" || b.Columns[2].Name != "partition" {
		t.Fatalf("batch %d columns %+v", b.ID, b.Columns)
	}
	var rows []string
	for _, p := range b.Parts {
		for _, r := range p.Values {
			rows = append(rows, fmt.Sprintf("%v=%v", r[0], r[1]))
		}
	}
	slices.Sort(rows)
	return strings.Join(rows, " ")
}

// dedupState reads the latest state with ckpt's state reader: every key, checked to be in
// Spark's hash partition and to hold Spark's empty value row.
func dedupState(t *testing.T, store storage.Store) (int64, []string) {
	t.Helper()
	_, r := readState(t, store)
	var keys []string
	err := r.Each(context.Background(), func(row *state.Row) error {
		k := row.Key()
		p, err := statefmt.Partition(k, r.Schema().Families[0].Key, []int{0}, 3)
		if err != nil || p != row.Partition {
			t.Errorf("key %v in partition %d, Spark's hash says %d (%v)", k.Values, row.Partition, p, err)
		}
		if v := row.Value(); len(v.Values) != 1 || v.Values[0] != nil {
			t.Errorf("key %v: value %v, want one null field", k.Values, v.Values)
		}
		keys = append(keys, k.Values[0].(string))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return r.Version, keys
}

// TestDedupRestart runs dropDuplicates("k") over two runs (the second loads the state the
// first wrote): each key is output once, with its first record, in the batch that first saw
// it; the state is every key, read back by ckpt's reader in Spark's partition, with Spark's
// schema file; the planner and doctor --deep find nothing.
func TestDedupRestart(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKV(t, b.Addr(), "in", 0, dedupKeys, 0, 14)
	store := storage.NewMem()
	ctx := context.Background()
	sink := &collectSink{}
	if st, err := runQuery(t, ctx, resolve(t, dedupQuery(b.Addr())), store, runOpts{sink: sink}); err != nil || st.Batches != 2 {
		t.Fatalf("first run: %+v %v", st, err)
	}
	produceKV(t, b.Addr(), "in", 0, dedupKeys, 14, 7)
	sink2 := &collectSink{}
	if st, err := runQuery(t, ctx, resolve(t, dedupQuery(b.Addr())), store, runOpts{sink: sink2}); err != nil || st.Batches != 1 {
		t.Fatalf("second run: %+v %v", st, err)
	}
	var got []string
	for _, s := range []*collectSink{sink, sink2} {
		for _, bt := range s.batches {
			got = append(got, batchOutput(t, bt))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(dedupFirst) {
		t.Errorf("output by batch %q, want %q", got, dedupFirst)
	}
	v, keys := dedupState(t, store)
	if v != 3 || fmt.Sprint(keys) != "[a b c d e f g h i j]" {
		t.Errorf("state version %d keys %v, want 3 and a-j", v, keys)
	}
	schema, err := store.ReadFile(ctx, "state/0/0/_metadata/schema")
	if err != nil {
		t.Fatal(err)
	}
	s, err := statefmt.ParseSchema("schema", schema)
	if err != nil {
		t.Fatal(err)
	}
	if k, val := s.Families[0].Key.String(), s.Families[0].Value.String(); k != "struct<k:string>" || val != dedupValueType.String() {
		t.Errorf("schema file: key %s value %s", k, val)
	}
	for p := 0; p < 3; p++ {
		for v := 1; v <= 3; v++ {
			if _, err := store.Stat(ctx, fmt.Sprintf("state/0/%d/%d.delta", p, v)); err != nil {
				t.Errorf("partition %d version %d: %v", p, v, err)
			}
		}
	}
	if _, err := store.Stat(ctx, "state/0/_metadata/metadata"); err == nil {
		t.Error("operator metadata written for Spark 3.5, which does not write it")
	}
	cp, _ := readState(t, store)
	checkNoFindings(t, ctx, cp)
}

// TestDedupOperatorMetadata: with a Spark 4 release the first batch writes the operator
// metadata Spark 4 writes for StreamingDeduplicateExec (compared with Spark 4.1.4's file).
func TestDedupOperatorMetadata(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKV(t, b.Addr(), "in", 0, dedupKeys, 0, 3)
	store := storage.NewMem()
	ctx := context.Background()
	q := dedupQuery(b.Addr())
	q.Conf["spark.sql.shuffle.partitions"] = "2"
	e, err := New(ctx, Options{Query: resolve(t, q), Store: store, Sink: &collectSink{}, Log: io.Discard, Console: io.Discard,
		PollingDelay: time.Millisecond, SparkVersion: "4.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadFile(ctx, "state/0/_metadata/metadata")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../testdata/spark-state/4.1.4/dedup-hdfs/checkpoint/state/0/_metadata/metadata")
	if err != nil {
		t.Fatal(err)
	}
	m, err := logformat.ParseOperatorMetadata("metadata", got)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || m.OperatorName != "dedupe" {
		t.Errorf("operator metadata\n%s\nSpark's\n%s", got, want)
	}
}

// TestDedupSchemaSpark: dropDuplicates over a string and an int column has the key and value
// schema Spark wrote for dropDuplicates("k", "b") (testdata/spark-state/*/dedup-hdfs).
func TestDedupSchemaSpark(t *testing.T) {
	q := &query.Query{Checkpoint: "mem://x", Sink: "noop", Select: []string{"string(key) AS k", "partition AS b", "value"}, DropDuplicates: []string{"k, b"}}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDeduplicator(r, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"3.5.8", "4.1.4"} {
		f := "../../testdata/spark-state/" + rel + "/dedup-hdfs/checkpoint/state/0/0/_metadata/schema"
		s, data := sparkSchema(t, f)
		ours, err := statefmt.EncodeSchemaV2(d.keyType, d.valueType)
		if err != nil {
			t.Fatal(err)
		}
		if string(ours) != string(data) {
			t.Errorf("%s: schema file\n%q\nSpark's (key %s, value %s)\n%q", rel, ours, s.Families[0].KeyString, s.Families[0].ValueString, data)
		}
	}
}

// TestDedupCrashRerun: a crash at every phase of batch 1 (after offsets/1, mid-sink, before
// commits/1: the last two after state version 2 was written), then a restart: batch 1 re-runs
// against state version 1, so it outputs its new keys again (the version the crashed attempt
// wrote would have dropped them) and nothing else.
func TestDedupCrashRerun(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKV(t, b.Addr(), "in", 0, dedupKeys, 0, 21)
	ctx := context.Background()
	for _, phase := range []string{PhaseAfterOffsets, PhaseMidSink, PhaseBeforeCommit} {
		t.Run(phase, func(t *testing.T) {
			store := storage.NewMem()
			crashAt(t, ctx, resolve(t, dedupQuery(b.Addr())), store, &collectSink{}, 1, phase)
			sink := &collectSink{}
			st, err := runQuery(t, ctx, resolve(t, dedupQuery(b.Addr())), store, runOpts{sink: sink})
			if err != nil {
				t.Fatal(err)
			}
			if st.Reran == nil || *st.Reran != 1 || st.LastBatch != 2 {
				t.Errorf("restart: %+v, want batch 1 re-run and batch 2 last", st)
			}
			var got []string
			for _, bt := range sink.batches {
				got = append(got, batchOutput(t, bt))
			}
			if fmt.Sprint(got) != fmt.Sprint(dedupFirst[1:]) {
				t.Errorf("restart output %q, want %q", got, dedupFirst[1:])
			}
			if v, keys := dedupState(t, store); v != 3 || fmt.Sprint(keys) != "[a b c d e f g h i j]" {
				t.Errorf("state version %d keys %v", v, keys)
			}
		})
	}
}

// TestDedupOtherStateRefused: a restart whose dedup columns are not those of the state on
// disk, or of an aggregation's checkpoint, fails before the batch writes anything.
func TestDedupOtherStateRefused(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKV(t, b.Addr(), "in", 0, dedupKeys, 0, 10)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		first *query.Query
	}{
		{"other-columns", dedupQuery(b.Addr())},
		{"aggregation", aggQuery(b.Addr(), query.OutputUpdate)},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := storage.NewMem()
			if _, err := runQuery(t, ctx, resolve(t, c.first), store, runOpts{sink: &collectSink{}, max: 1}); err != nil {
				t.Fatal(err)
			}
			q := dedupQuery(b.Addr())
			q.DropDuplicates = []string{"k, partition"}
			_, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: &collectSink{}})
			if err == nil || !strings.Contains(err.Error(), "is not the query's (key struct<k:string,partition:int>") {
				t.Fatalf("restart with other dedup columns: %v", err)
			}
			if _, err := store.Stat(ctx, "state/0/0/2.delta"); err == nil {
				t.Error("the refused batch wrote state version 2")
			}
		})
	}
}

// TestDedupNullKey: rows whose dedup column is null share one key, as in Spark (the null bit
// of the key row; hashed to the partition of Murmur3's seed).
func TestDedupNullKey(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i, k := range []string{"", "a", "", "a", ""} {
		r := &kgo.Record{Topic: "in", Value: []byte(fmt.Sprint(i))}
		if k != "" {
			r.Key = []byte(k)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	store := storage.NewMem()
	sink := &collectSink{}
	if _, err := runQuery(t, context.Background(), resolve(t, dedupQuery(b.Addr())), store, runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	if len(sink.batches) != 1 || batchOutput(t, sink.batches[0]) != "<nil>=0 a=1" {
		t.Fatalf("output %+v", sink.batches)
	}
	_, r := readState(t, store)
	n := 0
	if err := r.Each(context.Background(), func(row *state.Row) error {
		n++
		k := row.Key()
		p, err := statefmt.Partition(k, r.Schema().Families[0].Key, []int{0}, 3)
		if err != nil || p != row.Partition {
			t.Errorf("key %v in partition %d, Spark's hash says %d (%v)", k.Values, row.Partition, p, err)
		}
		return nil
	}); err != nil || n != 2 {
		t.Errorf("%d state rows (%v), want 2", n, err)
	}
}
