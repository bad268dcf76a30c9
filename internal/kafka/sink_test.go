package kafka

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeAll reads every record of topic visible at isolation level.
func consumeAll(t *testing.T, topic string, readCommitted bool) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t)
	adm := admin(t)
	list := adm.ListEndOffsets
	if readCommitted {
		list = adm.ListCommittedOffsets
	}
	l, err := list(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	opts := []kgo.Opt{kgo.SeedBrokers(testBroker.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(100 * time.Millisecond)}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	done := func() bool {
		for p, e := range ends {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	var out []*kgo.Record
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %v (at %v, ends %v)", topic, err, next, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

func values(rs []*kgo.Record) string {
	var v []string
	for _, r := range rs {
		v = append(v, string(r.Value))
	}
	sort.Strings(v)
	return strings.Join(v, " ")
}

func rowsOf(prefix string, n int) []OutRow {
	rows := make([]OutRow, n)
	for i := range rows {
		rows[i] = OutRow{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s%02d", prefix, i))}
	}
	return rows
}

func newSink(t *testing.T, opts map[string]string, queryID string) *Sink {
	t.Helper()
	all := map[string]string{"kafka.bootstrap.servers": testBroker.Addr()}
	for k, v := range opts {
		all[k] = v
	}
	s, err := NewSink(testCtx(t), all, queryID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSinkAtLeastOnce(t *testing.T) {
	topic := newTopic(t, 3)
	ctx := testCtx(t)
	s := newSink(t, map[string]string{"topic": topic}, "q1")
	if err := s.AddBatch(ctx, 0, rowsOf("a", 10)); err != nil {
		t.Fatal(err)
	}
	// A re-run batch writes again: at least once.
	if err := s.AddBatch(ctx, 0, rowsOf("a", 10)); err != nil {
		t.Fatal(err)
	}
	got := consumeAll(t, topic, false)
	if len(got) != 20 {
		t.Fatalf("%d records, want 20", len(got))
	}
	if _, ok, err := s.LastCommittedBatch(ctx); ok || err != nil {
		t.Errorf("at-least-once sink keeps no batch record: %v %v", ok, err)
	}
	// Keys pick partitions as Kafka's murmur2 partitioner: the same key, the same partition.
	byKey := map[string]int32{}
	for _, r := range got {
		if p, ok := byKey[string(r.Key)]; ok && p != r.Partition {
			t.Errorf("key %s on partitions %d and %d", r.Key, p, r.Partition)
		}
		byKey[string(r.Key)] = r.Partition
	}

	// Without a topic option, each row names its topic; the option wins when set.
	other := newTopic(t, 1)
	s2 := newSink(t, nil, "q2")
	p := int32(0)
	if err := s2.AddBatch(ctx, 0, []OutRow{{Topic: other, Value: []byte("x"), Partition: &p, Headers: []Header{{Key: "h", Value: []byte("v")}}}}); err != nil {
		t.Fatal(err)
	}
	got = consumeAll(t, other, false)
	if len(got) != 1 || string(got[0].Value) != "x" || len(got[0].Headers) != 1 || got[0].Headers[0].Key != "h" {
		t.Errorf("row topic: %v", got)
	}
	err := s2.AddBatch(ctx, 1, []OutRow{{Value: []byte("lost")}})
	if err == nil || err.Error() != "null topic present in the data. Use the topic option for setting a topic." {
		t.Errorf("null topic: %v", err)
	}
	bad := int32(7)
	if err := s2.AddBatch(ctx, 2, []OutRow{{Topic: other, Value: []byte("y"), Partition: &bad}}); err == nil {
		t.Error("partition 7 of a 1-partition topic: want error")
	}
}

func TestSinkExactlyOnce(t *testing.T) {
	topic := newTopic(t, 2)
	ctx := testCtx(t)
	opts := map[string]string{"topic": topic, "exactlyOnce": "true"}
	s := newSink(t, opts, "query-1")
	if s.TransactionalID() != "ckpt-query-1-"+topic || s.MarkerTopic() != topic+".ckpt-batches" {
		t.Errorf("txn id %q marker %q", s.TransactionalID(), s.MarkerTopic())
	}
	if _, ok, err := s.LastCommittedBatch(ctx); ok || err != nil {
		t.Fatalf("fresh sink: %v %v", ok, err)
	}
	for b := range int64(3) {
		if err := s.AddBatch(ctx, b, rowsOf(fmt.Sprintf("b%d-", b), 4)); err != nil {
			t.Fatal(err)
		}
	}
	// The engine re-runs batch 2 after a crash between the sink's commit and commits/2.
	if err := s.AddBatch(ctx, 2, rowsOf("b2-", 4)); err != nil {
		t.Fatal(err)
	}
	if last, ok, err := s.LastCommittedBatch(ctx); last != 2 || !ok || err != nil {
		t.Fatalf("last %d %v %v", last, ok, err)
	}
	s.Close()

	// A restarted query (a new Sink, same query id) learns batch 2 committed and skips it.
	s2 := newSink(t, opts, "query-1")
	if last, ok, err := s2.LastCommittedBatch(ctx); last != 2 || !ok || err != nil {
		t.Fatalf("after restart: last %d %v %v", last, ok, err)
	}
	if err := s2.AddBatch(ctx, 2, rowsOf("b2-", 4)); err != nil {
		t.Fatal(err)
	}
	if err := s2.AddBatch(ctx, 3, rowsOf("b3-", 4)); err != nil {
		t.Fatal(err)
	}
	got := consumeAll(t, topic, true)
	want := values(append(append(toRecs(rowsOf("b0-", 4)), toRecs(rowsOf("b1-", 4))...), append(toRecs(rowsOf("b2-", 4)), toRecs(rowsOf("b3-", 4))...)...))
	if values(got) != want {
		t.Errorf("read_committed sees\n%s\nwant\n%s", values(got), want)
	}

	// Another query on the same topic has its own transactional id and batch sequence.
	s3 := newSink(t, opts, "query-2")
	if _, ok, _ := s3.LastCommittedBatch(ctx); ok {
		t.Error("query-2 must not see query-1's markers")
	}
}

func toRecs(rows []OutRow) []*kgo.Record {
	out := make([]*kgo.Record, len(rows))
	for i, r := range rows {
		out[i] = &kgo.Record{Value: r.Value}
	}
	return out
}

// TestSinkExactlyOnceAbort: a batch that fails mid-way is aborted: read_committed consumers never
// see its records, and it does not count as committed.
func TestSinkExactlyOnceAbort(t *testing.T) {
	topic := newTopic(t, 1)
	ctx := testCtx(t)
	s := newSink(t, map[string]string{"topic": topic, "exactlyOnce": "true"}, "q-abort")
	if err := s.AddBatch(ctx, 0, rowsOf("ok-", 3)); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf("bad-", 5)
	bad := int32(5) // no such partition: the produce fails after other records were sent
	rows[4].Partition = &bad
	if err := s.AddBatch(ctx, 1, rows); err == nil {
		t.Fatal("want an error")
	}
	if last, _, _ := s.LastCommittedBatch(ctx); last != 0 {
		t.Errorf("last committed %d after the abort, want 0", last)
	}
	if err := s.AddBatch(ctx, 1, rowsOf("retry-", 2)); err != nil {
		t.Fatal(err)
	}
	if got, want := values(consumeAll(t, topic, true)), "ok-00 ok-01 ok-02 retry-00 retry-01"; got != want {
		t.Errorf("read_committed: %s, want %s", got, want)
	}
	// read_uncommitted shows the aborted records that did reach the log.
	if got := values(consumeAll(t, topic, false)); !strings.Contains(got, "bad-00") {
		t.Errorf("read_uncommitted: %s", got)
	}
}

// TestSinkFencing: a second instance of the same query fences the first, whose next batch fails.
func TestSinkFencing(t *testing.T) {
	topic := newTopic(t, 1)
	ctx := testCtx(t)
	opts := map[string]string{"topic": topic, "exactlyOnce": "true"}
	zombie := newSink(t, opts, "q-fence")
	if err := zombie.AddBatch(ctx, 0, rowsOf("z-", 1)); err != nil {
		t.Fatal(err)
	}
	fresh := newSink(t, opts, "q-fence")
	if err := fresh.AddBatch(ctx, 1, rowsOf("f-", 1)); err != nil {
		t.Fatal(err)
	}
	if err := zombie.AddBatch(ctx, 2, rowsOf("zz-", 1)); err == nil {
		t.Fatal("the fenced instance committed a batch")
	}
	if got, want := values(consumeAll(t, topic, true)), "f-00 z-00"; got != want {
		t.Errorf("read_committed: %s, want %s", got, want)
	}
}

func TestSinkOptions(t *testing.T) {
	ctx := testCtx(t)
	bs := testBroker.Addr()
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"topic": "t"}, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"},
		{map[string]string{"kafka.bootstrap.servers": bs, "exactlyOnce": "true"}, "Kafka sink option 'exactlyOnce' needs the 'topic' option"},
		{map[string]string{"kafka.bootstrap.servers": bs, "topic": "t", "exactlyOnce": "maybe"}, `For input string: "maybe"`},
		{map[string]string{"kafka.bootstrap.servers": bs, "topic": "t", "path": "/x"}, "unknown Kafka sink option 'path'"},
		{map[string]string{"kafka.bootstrap.servers": bs, "kafka.key.serializer": "x"}, "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."},
	} {
		_, err := NewSink(ctx, tc.opts, "q")
		var oe *OptionError
		if !errors.As(err, &oe) || !strings.Contains(oe.Message, tc.want) {
			t.Errorf("%v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestSinkExactlyOnceCrashMidTransaction: the previous run died with its batch's transaction open
// (records and marker written, no commit). The restarted sink fences it, the broker aborts the
// transaction, the batch does not count as committed, and its re-run is seen once.
func TestSinkExactlyOnceCrashMidTransaction(t *testing.T) {
	topic := newTopic(t, 1)
	ctx := testCtx(t)
	opts := map[string]string{"topic": topic, "exactlyOnce": "true"}
	s := newSink(t, opts, "q-crash")
	if err := s.AddBatch(ctx, 0, rowsOf("b0-", 2)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The dying run: same transactional id, batch 1 written but never committed.
	dead, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()), kgo.TransactionalID(s.TransactionalID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	mv := fmt.Sprintf(`{"queryId":"q-crash","topic":%q,"batchId":1,"records":2}`, topic)
	if err := dead.ProduceSync(ctx,
		&kgo.Record{Topic: topic, Value: []byte("b1-00")}, &kgo.Record{Topic: topic, Value: []byte("b1-01")},
		&kgo.Record{Topic: s.MarkerTopic(), Key: []byte(s.TransactionalID()), Value: []byte(mv)},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dead.Close() // no EndTransaction: the process died

	s2 := newSink(t, opts, "q-crash")
	if last, ok, err := s2.LastCommittedBatch(ctx); last != 0 || !ok || err != nil {
		t.Fatalf("last %d %v %v, want batch 0", last, ok, err)
	}
	if err := s2.AddBatch(ctx, 1, rowsOf("b1-", 2)); err != nil {
		t.Fatal(err)
	}
	if got, want := values(consumeAll(t, topic, true)), "b0-00 b0-01 b1-00 b1-01"; got != want {
		t.Errorf("read_committed: %s, want %s", got, want)
	}
}
