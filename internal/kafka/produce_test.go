package kafka

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// smallTopic creates a topic whose batches may not exceed 200 bytes: a record with a larger value
// fails with MESSAGE_TOO_LARGE on the broker.
func smallTopic(t *testing.T) string {
	t.Helper()
	name := newTopic(t, 1) + "-small"
	if err := testBroker.Cluster().CreateTopic(name, 1, map[string]string{"max.message.bytes": "200"}); err != nil {
		t.Fatal(err)
	}
	return name
}

func bigRows(topic string, n int) []OutRow {
	rows := make([]OutRow, n)
	for i := range rows {
		rows[i] = OutRow{Topic: topic, Value: []byte(strings.Repeat("x", 1000) + fmt.Sprint(i))}
	}
	return rows
}

// Produce does not wait; Flush makes everything produced so far durable, from any goroutine.
func TestSinkProduceFlush(t *testing.T) {
	topic := newTopic(t, 3)
	ctx := testCtx(t)
	s := newSink(t, map[string]string{"topic": topic}, "q")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range 5 {
				if err := s.Produce(ctx, rowsOf(fmt.Sprintf("g%dc%d-", g, c), 50)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(t, topic, false); len(got) != 4*5*50 {
		t.Fatalf("%d records, want %d", len(got), 4*5*50)
	}
	// Nothing produced: Flush returns at once.
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// A record the broker refuses fails the batch at Flush (and is seen by a later Produce); the next
// batch starts clean.
func TestSinkProduceErrorAtFlush(t *testing.T) {
	good, bad := newTopic(t, 1), smallTopic(t)
	ctx := testCtx(t)
	s := newSink(t, nil, "q") // no topic option: every row names its topic
	if err := s.Produce(ctx, rowsOfTopic(good, "a", 5)); err != nil {
		t.Fatal(err)
	}
	_ = s.Produce(ctx, bigRows(bad, 3)) // may already report an earlier failure
	err := s.Flush(ctx)
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Flush = %v, want MESSAGE_TOO_LARGE", err)
	}
	// The error was the batch's: the next batch succeeds.
	if err := s.Produce(ctx, rowsOfTopic(good, "b", 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("next batch: %v", err)
	}
	// AddBatch is Produce and Flush: the same error.
	if err := s.AddBatch(ctx, 7, bigRows(bad, 1)); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("AddBatch = %v, want MESSAGE_TOO_LARGE", err)
	}
	if got := values(consumeAll(t, good, false)); got != values(recordsOf(rowsOfTopic(good, "a", 5), rowsOfTopic(good, "b", 5))) {
		t.Errorf("good topic: %s", got)
	}
}

// Rows without a topic fail with Spark's text before anything is produced.
func TestSinkProduceNullTopic(t *testing.T) {
	good := newTopic(t, 1)
	ctx := testCtx(t)
	s := newSink(t, nil, "q")
	rows := append(rowsOfTopic(good, "a", 2), OutRow{Value: []byte("x")})
	if err := s.Produce(ctx, rows); err == nil || !strings.Contains(err.Error(), "null topic present in the data") {
		t.Fatalf("Produce = %v", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(t, good, false); len(got) != 0 {
		t.Errorf("%d records produced", len(got))
	}
}

// The exactly-once sink writes transactions with AddBatch only.
func TestSinkProduceExactlyOnceRefused(t *testing.T) {
	topic := newTopic(t, 1)
	s := newSink(t, map[string]string{"topic": topic, "exactlyOnce": "true"}, "q-refused")
	if err := s.Produce(testCtx(t), rowsOf("a", 1)); err == nil || !strings.Contains(err.Error(), "at-least-once") {
		t.Fatalf("Produce = %v", err)
	}
}

// An exactly-once batch with a record the broker refuses aborts: nothing of it becomes visible,
// no marker commits, and the re-run of the batch commits normally.
func TestSinkExactlyOnceProduceErrorAborts(t *testing.T) {
	topic := smallTopic(t)
	ctx := testCtx(t)
	s := newSink(t, map[string]string{"topic": topic, "exactlyOnce": "true"}, "q-eo-err")
	if err := s.AddBatch(ctx, 0, rowsOf("a", 3)); err != nil {
		t.Fatal(err)
	}
	rows := append(rowsOf("b", 3), bigRows("", 1)...)
	if err := s.AddBatch(ctx, 1, rows); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("AddBatch(1) = %v, want MESSAGE_TOO_LARGE", err)
	}
	if last, ok, err := s.LastCommittedBatch(ctx); err != nil || !ok || last != 0 {
		t.Fatalf("LastCommittedBatch = %d %v %v, want 0", last, ok, err)
	}
	if got := values(consumeAll(t, topic, true)); got != values(recordsOf(rowsOf("a", 3))) {
		t.Fatalf("read_committed after the failed batch: %s", got)
	}
	if err := s.AddBatch(ctx, 1, rowsOf("c", 3)); err != nil {
		t.Fatalf("re-run of batch 1: %v", err)
	}
	if got := values(consumeAll(t, topic, true)); got != values(recordsOf(rowsOf("a", 3), rowsOf("c", 3))) {
		t.Fatalf("read_committed after the re-run: %s", got)
	}
	// A fresh instance reads the markers: batch 1 committed.
	s2 := newSink(t, map[string]string{"topic": topic, "exactlyOnce": "true"}, "q-eo-err")
	if last, ok, err := s2.LastCommittedBatch(ctx); err != nil || !ok || last != 1 {
		t.Fatalf("restarted LastCommittedBatch = %d %v %v, want 1", last, ok, err)
	}
}

// BeforeCommit runs inside the open transaction: the records are acknowledged but invisible to
// read_committed consumers until the commit.
func TestSinkBeforeCommit(t *testing.T) {
	topic := newTopic(t, 2)
	ctx := testCtx(t)
	s := newSink(t, map[string]string{"topic": topic, "exactlyOnce": "true"}, "q-hook")
	adm := admin(t)
	calls := 0
	s.BeforeCommit = func() {
		calls++
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Error(err)
			return
		}
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Error(err)
			return
		}
		var written, stable int64
		for _, ps := range ends {
			for _, o := range ps {
				written += o.Offset
			}
		}
		for _, ps := range lso {
			for _, o := range ps {
				stable += o.Offset
			}
		}
		if written < 4 || stable != 0 {
			t.Errorf("in the hook: %d records written, last stable offsets sum %d; want ≥ 4 written and 0 stable", written, stable)
		}
	}
	if err := s.AddBatch(ctx, 0, rowsOf("a", 4)); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("hook ran %d times", calls)
	}
	if got := values(consumeAll(t, topic, true)); got != values(recordsOf(rowsOf("a", 4))) {
		t.Errorf("after the commit: %s", got)
	}
	// A batch that already committed is skipped: no transaction, no hook.
	if err := s.AddBatch(ctx, 0, rowsOf("a", 4)); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("hook ran for a skipped batch")
	}
}

// LatestAvailable reports the latest offsets before the limit.
func TestLatestAvailable(t *testing.T) {
	topic := newTopic(t, 2)
	produceN(t, topic, 0, 0, 30)
	produceN(t, topic, 1, 0, 10)
	ctx := testCtx(t)
	clock := &fakeClock{}
	s, _ := newSource(t, map[string]string{"subscribe": topic}, clock)
	start := offs(topic, 0, 0, 1, 0)
	latest := offs(topic, 0, 30, 1, 10)
	end, avail, _, err := s.LatestAvailable(ctx, start, ReadLimit{MaxRows: 8})
	if err != nil {
		t.Fatal(err)
	}
	if end.JSON() != offs(topic, 0, 6, 1, 2).JSON() || avail.JSON() != latest.JSON() {
		t.Errorf("MaxRows: end %s available %s", end.JSON(), avail.JSON())
	}
	// A delayed batch (MinRows) ends at start; the available offsets are still reported.
	if _, _, _, err := s.LatestAvailable(ctx, start, ReadLimit{MinRows: 1, MaxTriggerDelay: 0}); err != nil {
		t.Fatal(err)
	}
	end, avail, _, err = s.LatestAvailable(ctx, start, ReadLimit{MinRows: 1000, MaxTriggerDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if end.JSON() != start.JSON() || avail.JSON() != latest.JSON() {
		t.Errorf("MinRows: end %s available %s", end.JSON(), avail.JSON())
	}
	end, avail, _, err = s.LatestAvailable(ctx, start, ReadLimit{AllAvailable: true})
	if err != nil || end.JSON() != latest.JSON() || avail.JSON() != latest.JSON() {
		t.Errorf("AllAvailable: end %s available %s err %v", end.JSON(), avail.JSON(), err)
	}
	// Latest is LatestAvailable's end.
	e2, _, err := s.Latest(ctx, start, ReadLimit{MaxRows: 8})
	if err != nil || e2.JSON() != offs(topic, 0, 6, 1, 2).JSON() {
		t.Errorf("Latest: %s %v", e2.JSON(), err)
	}
}

func rowsOfTopic(topic, prefix string, n int) []OutRow {
	rows := rowsOf(prefix, n)
	for i := range rows {
		rows[i].Topic = topic
	}
	return rows
}

func recordsOf(rowss ...[]OutRow) []*kgo.Record {
	var out []*kgo.Record
	for _, rows := range rowss {
		for _, r := range rows {
			out = append(out, &kgo.Record{Value: r.Value})
		}
	}
	return out
}

// ProduceFunc produces rows made on demand, like Produce, and checks the topics first.
func TestSinkProduceFunc(t *testing.T) {
	topic := newTopic(t, 2)
	ctx := testCtx(t)
	s := newSink(t, nil, "q")
	rows := rowsOfTopic(topic, "f", 30)
	if err := s.ProduceFunc(ctx, len(rows), func(i int) OutRow { return rows[i] }); err != nil {
		t.Fatal(err)
	}
	bad := func(i int) OutRow {
		if i == 2 {
			return OutRow{Value: []byte("no topic")}
		}
		return rows[i]
	}
	if err := s.ProduceFunc(ctx, 3, bad); err == nil || !strings.Contains(err.Error(), "null topic present in the data") {
		t.Fatalf("ProduceFunc without a topic = %v", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := values(consumeAll(t, topic, false)); got != values(recordsOf(rows)) {
		t.Errorf("got %s", got)
	}
	eo := newSink(t, map[string]string{"topic": topic, "exactlyOnce": "true"}, "q-func")
	if err := eo.ProduceFunc(ctx, 1, func(int) OutRow { return rows[0] }); err == nil {
		t.Error("the exactly-once sink accepted ProduceFunc")
	}
}

// The sink stamps records itself, once per slab: every record's CreateTime falls between the
// start of its Produce call and its acknowledgement, in milliseconds as Kafka keeps it, and a
// later call's records are not stamped earlier than it started.
func TestSinkRecordTimestamps(t *testing.T) {
	topic := newTopic(t, 1)
	ctx := testCtx(t)
	s := newSink(t, map[string]string{"topic": topic}, "q")
	var windows [2][2]time.Time
	for c := range 2 {
		windows[c][0] = time.Now().Truncate(time.Millisecond)
		// Three slabs and a part of one.
		if err := s.Produce(ctx, rowsOf(fmt.Sprintf("c%d-", c), 3*recordSlab+5)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		windows[c][1] = time.Now()
		time.Sleep(5 * time.Millisecond)
	}
	got := consumeAll(t, topic, false)
	if len(got) != 2*(3*recordSlab+5) {
		t.Fatalf("%d records", len(got))
	}
	for i, r := range got {
		w := windows[i/(3*recordSlab+5)]
		if r.Timestamp.Before(w[0]) || r.Timestamp.After(w[1]) {
			t.Fatalf("record %d (%s): CreateTime %s outside its call's [%s, %s]", i, r.Value, r.Timestamp.Format(time.StampMicro), w[0].Format(time.StampMicro), w[1].Format(time.StampMicro))
		}
		if i > 0 && r.Timestamp.Before(got[i-1].Timestamp) {
			t.Fatalf("record %d: CreateTime %s before the previous record's %s", i, r.Timestamp, got[i-1].Timestamp)
		}
	}
}

// A slab that may have to wait for buffer space is left to franz-go, which stamps each record
// when it is produced, after any wait.
func TestSlabStamp(t *testing.T) {
	for _, c := range []struct {
		buffered int64
		stamped  bool
	}{{0, true}, {maxBufferedRecords - recordSlab, true}, {maxBufferedRecords - recordSlab + 1, false}, {maxBufferedRecords, false}} {
		t0 := time.Now()
		got := slabStamp(c.buffered)
		if c.stamped != !got.IsZero() || c.stamped && got.Before(t0) {
			t.Errorf("slabStamp(%d) = %v, want stamped %v", c.buffered, got, c.stamped)
		}
	}
}
