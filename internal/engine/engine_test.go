package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func expectValues(topics []string, parts int32, from, n int) []string {
	var out []string
	for _, t := range topics {
		for p := int32(0); p < parts; p++ {
			for i := from; i < from+n; i++ {
				out = append(out, fmt.Sprintf("%s/%d/%d", t, p, i))
			}
		}
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

func readOffsets(t *testing.T, store storage.Store, id int64) *logformat.OffsetSeq {
	t.Helper()
	data, err := store.ReadFile(context.Background(), fmt.Sprintf("offsets/%d", id))
	if err != nil {
		t.Fatal(err)
	}
	seq, err := logformat.ParseOffsets("offsets", data)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func endOffsets(t *testing.T, store storage.Store, id int64) map[logformat.TopicPartition]int64 {
	t.Helper()
	k, err := logformat.ParseKafkaOffsets("o", readOffsets(t, store, id).Sources[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	return k.Map()
}

// End to end: several topics and partitions, rate-limited availableNow, every record once, and a
// checkpoint that is Spark's bytes and passes doctor.
func TestEndToEndSeveralTopics(t *testing.T) {
	n := 400
	if raceEnabled {
		n = 60
	}
	b := startBroker(t, embedkafka.TopicSpec{Name: "a", Partitions: 3}, embedkafka.TopicSpec{Name: "b", Partitions: 2})
	for p := int32(0); p < 3; p++ {
		produce(t, b.Addr(), "a", p, 0, n)
	}
	for p := int32(0); p < 2; p++ {
		produce(t, b.Addr(), "b", p, 0, n)
	}
	q := kafkaQuery(b.Addr(), "subscribe=a,b", fmt.Sprintf("maxOffsetsPerTrigger=%d", n))
	q.Trigger = "availableNow"
	store := storage.NewMem()
	sink := &collectSink{}
	st, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	want := append(expectValues([]string{"a"}, 3, 0, n), expectValues([]string{"b"}, 2, 0, n)...)
	if got := sorted(sink.values()); !slices.Equal(got, sorted(want)) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	if st.Batches != 5 || st.Rows != int64(5*n) || st.Stopped != "availableNow" {
		t.Errorf("stats %+v", st)
	}
	checkConformance(t, store, nil)
}

func TestStartingOffsets(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "s", Partitions: 2})
	produce(t, b.Addr(), "s", 0, 0, 10)
	produce(t, b.Addr(), "s", 1, 0, 10)
	cases := []struct {
		starting string
		want     int // rows of the once batch
	}{
		{"earliest", 20},
		{"latest", 0},
		{`{"s":{"0":-2,"1":-1}}`, 10},
		{`{"s":{"0":4,"1":-2}}`, 16},
		{`{"s":{"0":-1,"1":7}}`, 3},
	}
	for _, c := range cases {
		t.Run(c.starting, func(t *testing.T) {
			q := kafkaQuery(b.Addr(), "subscribe=s", "startingOffsets="+c.starting)
			q.Trigger = "once"
			store := storage.NewMem()
			sink := &collectSink{}
			if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			if got := len(sink.values()); got != c.want {
				t.Errorf("rows = %d, want %d", got, c.want)
			}
			// sources/0/0 is written on the first trigger even with no data (Spark's initialOffset).
			if _, err := store.ReadFile(context.Background(), "sources/0/0"); err != nil {
				t.Errorf("sources/0/0: %v", err)
			}
			if c.want == 0 {
				if cp, _ := checkpoint.Load(context.Background(), store); len(cp.Offsets.IDs()) != 0 {
					t.Errorf("a trigger with no data wrote offsets %v", cp.Offsets.IDs())
				}
			}
		})
	}
}

// Spark's KafkaMicroBatchStream.rateLimit: prorate = limit*size/total, ceil below 1, floor above.
func TestRateLimitSparkFormula(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "r", Partitions: 3})
	produce(t, b.Addr(), "r", 0, 0, 100)
	produce(t, b.Addr(), "r", 1, 0, 10)
	produce(t, b.Addr(), "r", 2, 0, 1)
	q := kafkaQuery(b.Addr(), "subscribe=r", "maxOffsetsPerTrigger=20")
	store := storage.NewMem()
	if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: &collectSink{}, max: 2}); err != nil {
		t.Fatal(err)
	}
	got := endOffsets(t, store, 0)
	// sizes 100,10,1 (total 111): 20*100/111=18.02→18, 20*10/111=1.80→1, 20*1/111=0.18→ceil 1
	want := map[logformat.TopicPartition]int64{{Topic: "r", Partition: 0}: 18, {Topic: "r", Partition: 1}: 1, {Topic: "r", Partition: 2}: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batch 0 end = %v, want %v", got, want)
	}
	// batch 1 from (18,1,1): sizes 82,9,0 (total 91): 20*82/91=18.02→18, 20*9/91=1.98→1, p2 unchanged
	got = endOffsets(t, store, 1)
	want = map[logformat.TopicPartition]int64{{Topic: "r", Partition: 0}: 36, {Topic: "r", Partition: 1}: 2, {Topic: "r", Partition: 2}: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batch 1 end = %v, want %v", got, want)
	}
}

// availableNow: the end is the snapshot at start; maxOffsetsPerTrigger splits it into batches;
// records produced during the run are left for the next run.
func TestAvailableNowSplitting(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "n", Partitions: 1})
	produce(t, b.Addr(), "n", 0, 0, 1000)
	q := kafkaQuery(b.Addr(), "subscribe=n", "maxOffsetsPerTrigger=300")
	q.Trigger = "availableNow"
	store := storage.NewMem()
	sink := &collectSinkHook{after: func(id int64) {
		if id == 0 {
			produce(t, b.Addr(), "n", 0, 1000, 50) // after the snapshot: not in this run
		}
	}}
	st, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if got := sink.sizes(); !slices.Equal(got, []int64{300, 300, 300, 100}) {
		t.Errorf("batch sizes %v, want [300 300 300 100]", got)
	}
	if st.Stopped != "availableNow" {
		t.Errorf("stopped: %s", st.Stopped)
	}
	// The next run picks up the 50 records.
	sink2 := &collectSink{}
	if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: sink2}); err != nil {
		t.Fatal(err)
	}
	if got := sink2.sizes(); !slices.Equal(got, []int64{50}) {
		t.Errorf("second run batch sizes %v, want [50]", got)
	}
	checkConformance(t, store, nil)
}

type collectSinkHook struct {
	collectSink
	after func(id int64)
}

func (c *collectSinkHook) AddBatch(ctx context.Context, b *Batch) error {
	if err := c.collectSink.AddBatch(ctx, b); err != nil {
		return err
	}
	if c.after != nil {
		c.after(b.ID)
	}
	return nil
}

// processingTime: batches start on multiples of the interval (ProcessingTimeExecutor); a batch
// that overruns is followed at once; no data, no batch.
func TestProcessingTimeCadence(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "c", Partitions: 1})
	produce(t, b.Addr(), "c", 0, 0, 5)
	t0 := time.UnixMilli(1_700_000_003_500) // 3.5 s past a 10 s boundary
	clock := NewManualClock(t0)
	q := kafkaQuery(b.Addr(), "subscribe=c")
	q.Trigger = "10s"
	store := storage.NewMem()
	sink := &collectSinkHook{}
	sink.after = func(id int64) {
		if id == 1 {
			produce(t, b.Addr(), "c", 0, 200, 1)
			clock.Advance(25 * time.Second) // batch 1 overruns its interval
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: sink, clock: clock, max: 3})
		done <- err
	}()
	step := func(produceFirst bool, d time.Duration) {
		select {
		case <-clock.Waiting:
		case err := <-done:
			t.Fatalf("engine stopped early: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("engine did not wait")
		}
		if produceFirst {
			produce(t, b.Addr(), "c", 0, 100, 1)
		}
		clock.Advance(d)
	}
	step(false, 6500*time.Millisecond) // batch 0 ran at t0; the next trigger is the boundary at +6.5 s: no data, no batch
	step(true, 10*time.Second)         // +16.5 s: batch 1, which overruns by 25 s; batch 2 follows at once
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ts := []int64{}
	for id := int64(0); id < 3; id++ {
		ts = append(ts, readOffsets(t, store, id).Metadata.BatchTimestampMs-t0.UnixMilli())
	}
	if want := []int64{0, 16500, 41500}; !slices.Equal(ts, want) {
		t.Errorf("batch timestamps relative to t0 = %v, want %v", ts, want)
	}
}

// Restart: a batch whose commit is missing runs again with the same end offsets and batch
// timestamp, and no new offsets file.
func TestRestartRerunsBatch(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "x", Partitions: 2})
	produce(t, b.Addr(), "x", 0, 0, 30)
	produce(t, b.Addr(), "x", 1, 0, 30)
	q := kafkaQuery(b.Addr(), "subscribe=x", "maxOffsetsPerTrigger=20")
	q.Trigger = "availableNow"
	store := storage.NewMem()
	if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: &collectSink{}}); err != nil {
		t.Fatal(err)
	}
	before := readOffsets(t, store, 2)
	if err := store.Delete(context.Background(), "commits/2"); err != nil {
		t.Fatal(err)
	}
	produce(t, b.Addr(), "x", 0, 30, 5)
	sink := &collectSink{}
	st, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if st.Reran == nil || *st.Reran != 2 {
		t.Fatalf("reran %v, want batch 2", st.Reran)
	}
	after := readOffsets(t, store, 2)
	if string(after.Marshal()) != string(before.Marshal()) {
		t.Errorf("offsets/2 changed")
	}
	if got := sink.sizes(); len(got) != 2 || got[0] != 20 || got[1] != 5 {
		t.Errorf("batch sizes %v, want [20 5]", got)
	}
	checkConformance(t, store, nil)
}

// Purge keeps minBatchesToRetain batches, as §5.5.
func TestPurge(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "p", Partitions: 1})
	produce(t, b.Addr(), "p", 0, 0, 12)
	q := kafkaQuery(b.Addr(), "subscribe=p", "maxOffsetsPerTrigger=1")
	q.Trigger = "availableNow"
	q.Conf = map[string]string{query.ConfMinBatchesToRetain: "3"}
	store := storage.NewMem()
	if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: &collectSink{}, max: 10}); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cp.Offsets.IDs()) != "[6 7 8 9]" || fmt.Sprint(cp.Commits.IDs()) != "[6 7 8 9]" {
		t.Errorf("offsets %v commits %v, want [6 7 8 9] both", cp.Offsets.IDs(), cp.Commits.IDs())
	}
	// A restart purges by listing (lastPurgedBatchId starts at -1 again).
	if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: &collectSink{}, max: 1}); err != nil {
		t.Fatal(err)
	}
	cp, _ = checkpoint.Load(context.Background(), store)
	if fmt.Sprint(cp.Offsets.IDs()) != "[7 8 9 10]" {
		t.Errorf("after restart offsets %v, want [7 8 9 10]", cp.Offsets.IDs())
	}
}

// A checkpoint Spark refuses is refused with Spark's error and the commands that help.
func TestRefusesLikeSpark(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "f", Partitions: 1})
	produce(t, b.Addr(), "f", 0, 0, 5)
	q := kafkaQuery(b.Addr(), "subscribe=f", "maxOffsetsPerTrigger=1")
	q.Trigger = "availableNow"
	store := storage.NewMem()
	if _, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: &collectSink{}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"offsets/3", "commits/4"} {
		if err := store.Delete(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	_, err := runQuery(t, context.Background(), resolve(t, q), store, runOpts{sink: &collectSink{}})
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want RefusedError", err)
	}
	if !strings.Contains(err.Error(), "java.lang.IllegalStateException: batch 3 doesn't exist") || re.Checkpoint != store.URI() {
		t.Errorf("refusal: %v (checkpoint %q, trap %v)", err, re.Checkpoint, re.Trap)
	}
	cp, _ := checkpoint.Load(context.Background(), store)
	if l, _ := cp.Offsets.Latest(); l != 4 {
		t.Errorf("refused start wrote offsets: latest %d", l)
	}
}

// A checkpoint written by a query with two sources is refused by the planner's source-count
// assertion: the engine tells the planner it runs one source rather than checking by itself.
func TestRefusesOtherSourceCount(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "g", Partitions: 1})
	produce(t, b.Addr(), "g", 0, 0, 3)
	q := kafkaQuery(b.Addr(), "subscribe=g")
	q.Trigger = "availableNow"
	store := storage.NewMem()
	ctx := context.Background()
	if _, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: &collectSink{}}); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := cp.Offsets.Latest()
	seq, err := cp.ReadOffsets(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	seq.Sources = append(seq.Sources, logformat.SourceOffset{JSON: `{"logOffset":0}`})
	if err := store.Delete(ctx, cp.Offsets.Path(l)); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteFile(ctx, cp.Offsets.Path(l), seq.Marshal()); err != nil {
		t.Fatal(err)
	}
	_, err = runQuery(t, ctx, resolve(t, q), store, runOpts{sink: &collectSink{}})
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want RefusedError", err)
	}
	want := "There are [2] sources in the checkpoint offsets and now there are [1] sources requested by the query."
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error lacks %q:\n%s", want, err)
	}
}

// failOnDataLoss end to end through the engine: deleted records, a recreated topic, added
// partitions.
func TestFailOnDataLoss(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, failOnDataLoss string) (*embedkafka.Broker, *kadm.Client, *query.Resolved, storage.Store) {
		b := startBroker(t, embedkafka.TopicSpec{Name: "d", Partitions: 2})
		produce(t, b.Addr(), "d", 0, 0, 10)
		produce(t, b.Addr(), "d", 1, 0, 10)
		q := kafkaQuery(b.Addr(), "subscribe=d", "failOnDataLoss="+failOnDataLoss)
		q.Trigger = "availableNow"
		r := resolve(t, q)
		store := storage.NewMem()
		if _, err := runQuery(t, ctx, r, store, runOpts{sink: &collectSink{}}); err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return b, kadm.NewClient(cl), r, store
	}
	t.Run("deleted-records", func(t *testing.T) {
		b, adm, r, store := setup(t, "true")
		produce(t, b.Addr(), "d", 0, 10, 10)
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: "d", Partition: 0, At: 15})
		if _, err := adm.DeleteRecords(ctx, o); err != nil {
			t.Fatal(err)
		}
		_, err := runQuery(t, ctx, r, store, runOpts{sink: &collectSink{}})
		if err == nil || !strings.Contains(err.Error(), "Some data may have been lost") {
			t.Fatalf("err = %v, want Spark's data-loss error", err)
		}
		// The batch was planned (offsets written) and is re-run by the next start.
		cp, _ := checkpoint.Load(ctx, store)
		lo, _ := cp.Offsets.Latest()
		lc, _ := cp.Commits.Latest()
		if lo != lc+1 {
			t.Errorf("offsets %v commits %v", cp.Offsets.IDs(), cp.Commits.IDs())
		}
	})
	t.Run("deleted-records-no-fail", func(t *testing.T) {
		b, adm, r, store := setup(t, "false")
		produce(t, b.Addr(), "d", 0, 10, 10)
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: "d", Partition: 0, At: 15})
		if _, err := adm.DeleteRecords(ctx, o); err != nil {
			t.Fatal(err)
		}
		sink := &collectSink{}
		if _, err := runQuery(t, ctx, r, store, runOpts{sink: sink}); err != nil {
			t.Fatal(err)
		}
		if got := len(sink.values()); got != 5 {
			t.Errorf("rows %d, want the 5 records left", got)
		}
	})
	t.Run("recreated-topic", func(t *testing.T) {
		b, adm, r, store := setup(t, "true")
		if _, err := adm.DeleteTopics(ctx, "d"); err != nil {
			t.Fatal(err)
		}
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "d"); err != nil {
			t.Fatal(err)
		}
		produce(t, b.Addr(), "d", 0, 0, 3)
		produce(t, b.Addr(), "d", 1, 0, 3)
		_, err := runQuery(t, ctx, r, store, runOpts{sink: &collectSink{}})
		if err == nil || !strings.Contains(err.Error(), "offset was changed from 10 to 3") {
			t.Fatalf("err = %v, want Spark's offset-changed error", err)
		}
	})
	t.Run("added-partitions", func(t *testing.T) {
		b, adm, r, store := setup(t, "true")
		if _, err := adm.CreatePartitions(ctx, 1, "d"); err != nil {
			t.Fatal(err)
		}
		produce(t, b.Addr(), "d", 2, 0, 4)
		sink := &collectSink{}
		if _, err := runQuery(t, ctx, r, store, runOpts{sink: sink}); err != nil {
			t.Fatal(err)
		}
		if got := sorted(sink.values()); !slices.Equal(got, expectValues([]string{"d"}, 0, 0, 0)) && len(got) != 4 {
			t.Errorf("rows from the added partition: %v", got)
		}
		checkConformance(t, store, nil)
	})
}

// Temporary files of interrupted writes are left in place at start, as Spark leaves them, and
// the driver log says so.
func TestStartLeavesTempFiles(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "t", Partitions: 1})
	produce(t, b.Addr(), "t", 0, 0, 4)
	q := kafkaQuery(b.Addr(), "subscribe=t", "maxOffsetsPerTrigger=2")
	q.Trigger = "availableNow"
	store := storage.NewMem()
	ctx := context.Background()
	if _, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: &collectSink{}}); err != nil {
		t.Fatal(err)
	}
	temps := []string{"offsets/.2.6b1e0f3a-1b2c-4d5e-8f90-a1b2c3d4e5f6.tmp", "commits/.1.7c1e0f3a-1b2c-4d5e-8f90-a1b2c3d4e5f6.tmp"}
	for _, p := range temps {
		if err := store.WriteFile(ctx, p, []byte("half")); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, b.Addr(), "t", 0, 4, 2)
	var log bytes.Buffer
	if _, err := runQuery(t, ctx, resolve(t, q), store, runOpts{sink: &collectSink{}, log: &log}); err != nil {
		t.Fatal(err)
	}
	for _, p := range temps {
		if data, err := store.ReadFile(ctx, p); err != nil || string(data) != "half" {
			t.Errorf("%s after the run: %q, %v", p, data, err)
		}
	}
	if !strings.Contains(log.String(), "Left 2 temporary file(s) of interrupted writes in place, as Spark does (never read): offsets/.2.6b1e0f3a") || !strings.Contains(log.String(), "commits/.1.7c1e0f3a") {
		t.Errorf("driver log:\n%s", log.String())
	}
}
