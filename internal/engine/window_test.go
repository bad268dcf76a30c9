package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

var winT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// produceAtSecs writes one record per event time (seconds after winT0) to partition 0.
func produceAtSecs(t testing.TB, addr, topic string, secs ...int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, s := range secs {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(s)), Timestamp: winT0.Add(time.Duration(s) * time.Second)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func windowQuery(addr, mode, window string) *query.Query {
	q := kafkaQuery(addr, "subscribe=in", "maxOffsetsPerTrigger=3")
	q.Trigger = "availableNow"
	q.GroupBy = []string{window + " AS w"}
	q.Agg = []string{"count(*) AS n"}
	q.Watermark = "timestamp=10 seconds"
	q.OutputMode = mode
	q.Conf = map[string]string{"spark.sql.shuffle.partitions": "2"}
	return q
}

// windowRows renders a sink's output rows as "batch:start-end=n" (seconds after winT0).
func windowRows(s *collectSink) string {
	var out []string
	for _, b := range s.batches {
		var rows []string
		for _, p := range b.Parts {
			for _, r := range p.Values {
				w := r[0].(transform.Window)
				rows = append(rows, fmt.Sprintf("%d:%d-%d=%d", b.ID, int(w.Start.Sub(winT0).Seconds()), int(w.End.Sub(winT0).Seconds()), r[1]))
			}
		}
		sort.Strings(rows)
		out = append(out, rows...)
	}
	return strings.Join(out, " ")
}

// watermarks renders batchWatermarkMs/nextBatchWatermarkMs of every batch, in seconds.
func watermarks(t *testing.T, store storage.Store) string {
	t.Helper()
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range cp.Offsets.IDs() {
		seq, err := cp.ReadOffsets(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cp.ReadCommit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d/%d", (seq.Metadata.BatchWatermarkMs-winT0.UnixMilli())/1000, (c.NextBatchWatermarkMs-winT0.UnixMilli())/1000))
	}
	return strings.Join(out, " ")
}

// stateWindows renders the state rows as "start-end=n".
func stateWindows(t *testing.T, store storage.Store) string {
	t.Helper()
	_, r := readState(t, store)
	var out []string
	if err := r.Each(context.Background(), func(row *state.Row) error {
		w := windowOutput(row.Key().Values[0].(*statefmt.Object)).(transform.Window)
		out = append(out, fmt.Sprintf("%d-%d=%v", int(w.Start.Sub(winT0).Seconds()), int(w.End.Sub(winT0).Seconds()), row.Value().Values[0]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestWindowAppendWatermark: a count per 1-minute window with a 10-second watermark in
// append mode over two runs. Batch 0 (5s, 20s, 40s) moves the watermark to 30s, batch 1 (55s,
// 70s, 75s) to 65s, and the no-data batch 2 evicts and emits [0s, 60s). After the restart,
// batch 3 (50s, 80s, 130s) drops the late 50s (its window ended at or below the previous
// batch's watermark, 65s) and moves the watermark to 120s; the no-data batch 4 emits
// [60s, 120s). The values are those Spark wrote in TestSparkLiveWindowHandOver's phases.
func TestWindowAppendWatermark(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceAtSecs(t, b.Addr(), "in", 5, 20, 40, 55, 70, 75)
	store, ctx := storage.NewMem(), context.Background()
	sink := &collectSink{}
	if _, err := runQuery(t, ctx, resolve(t, windowQuery(b.Addr(), "append", "window(timestamp, '1 minute')")), store, runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	produceAtSecs(t, b.Addr(), "in", 50, 80, 130)
	if _, err := runQuery(t, ctx, resolve(t, windowQuery(b.Addr(), "append", "window(timestamp, '1 minute')")), store, runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	if got := windowRows(sink); got != "2:0-60=4 4:60-120=3" {
		t.Errorf("output %s", got)
	}
	t0 := winT0.Unix()
	if got, want := watermarks(t, store), fmt.Sprintf("%d/30 30/65 65/65 65/120 120/120", -t0); got != want {
		t.Errorf("watermarks %s, want %s", got, want)
	}
	if got := stateWindows(t, store); got != "120-180=1" {
		t.Errorf("state %s", got)
	}
	// The same query without its watermark is refused before anything is written.
	noWM := windowQuery(b.Addr(), "update", "window(timestamp, '1 minute')")
	noWM.Watermark = ""
	if _, err := runQuery(t, ctx, resolve(t, noWM), store, runOpts{sink: &collectSink{}}); err == nil || !strings.Contains(err.Error(), "give the query's --watermark") {
		t.Errorf("a run without the watermark: %v", err)
	}
	// The planner and doctor (state checks included) read the checkpoint, no-data batches and
	// delete records included, with no warning and no finding.
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion})
	if err != nil || plan.Outcome != recovery.OutcomeResume || len(plan.Warnings) > 0 {
		t.Errorf("planner: %v %s, warnings %v", err, plan.Verdict(), plan.Warnings)
	}
	rep, err := doctor.Run(ctx, cp, doctor.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("doctor: %s %s %s", f.Code, f.Severity, f.Message)
	}
}

// TestWindowCrashRerun: a crash at every phase of data batch 1 and of the no-data batch 2,
// then a restart: the batch re-runs against the previous state version with the watermarks
// of its offsets file (eviction) and the one before (late rows), so the watermarks, the state
// and the window the restart emits are those of a run without a crash.
func TestWindowCrashRerun(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceAtSecs(t, b.Addr(), "in", 5, 20, 40, 55, 70, 75)
	ctx := context.Background()
	q := func() *query.Resolved {
		return resolve(t, windowQuery(b.Addr(), "append", "window(timestamp, '1 minute')"))
	}
	wantMarks := fmt.Sprintf("%d/30 30/65 65/65", -winT0.Unix())
	for _, batch := range []int64{1, 2} {
		for _, phase := range []string{PhaseAfterOffsets, PhaseMidSink, PhaseBeforeCommit} {
			t.Run(fmt.Sprintf("batch%d-%s", batch, phase), func(t *testing.T) {
				store := storage.NewMem()
				func() {
					defer func() {
						if r := recover(); r != nil && r != (crashed{}) {
							panic(r)
						}
					}()
					e, err := New(ctx, Options{Query: q(), Store: store, Sink: &collectSink{},
						FailAt: &FailAt{Batch: batch, Phase: phase}, Exit: func(int) { panic(crashed{}) }, PollingDelay: time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					_, _ = e.Run(ctx)
					t.Fatal("no crash")
				}()
				sink := &collectSink{}
				st, err := runQuery(t, ctx, q(), store, runOpts{sink: sink})
				if err != nil {
					t.Fatal(err)
				}
				if st.Reran == nil || *st.Reran != batch || st.LastBatch != 2 {
					t.Errorf("restart: %+v, want batch %d re-run and batch 2 last", st, batch)
				}
				if got := windowRows(sink); got != "2:0-60=4" {
					t.Errorf("restart's output %q, want 2:0-60=4", got)
				}
				if got := watermarks(t, store); got != wantMarks {
					t.Errorf("watermarks %s, want %s", got, wantMarks)
				}
				if got := stateWindows(t, store); got != "60-120=2" {
					t.Errorf("state %s, want 60-120=2", got)
				}
			})
		}
	}
}

// TestWindowUpdateSliding: update mode over 1-minute windows sliding by 30 seconds outputs
// the windows each batch changed, drops the late row's closed windows, and evicts without
// output (the no-data batch outputs nothing); a restart without new data runs no batch, as
// Spark runs a no-data batch only after a batch of the same run.
func TestWindowUpdateSliding(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceAtSecs(t, b.Addr(), "in", 5, 20, 40, 55, 70, 75, 50, 80, 130)
	store, ctx := storage.NewMem(), context.Background()
	q := func() *query.Resolved {
		return resolve(t, windowQuery(b.Addr(), "update", "window(timestamp, '1 minute', '30 seconds')"))
	}
	sink := &collectSink{}
	if _, err := runQuery(t, ctx, q(), store, runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	// Batch 0: 5 20 40 (watermark 30s). Batch 1: 55 70 75 (late 0s, evict 30s: [-30,30)
	// goes; watermark 65s). Batch 2: 50 80 130 (late 30s: 50's windows [0,60) and [30,90)
	// kept; evict 65s: [0,60) goes; watermark 120s). No-data batch 3 (evict 120s).
	want := "0:-30-30=2 0:0-60=3 0:30-90=1 " +
		"1:0-60=4 1:30-90=4 1:60-120=2 " +
		"2:0-60=5 2:120-180=1 2:30-90=6 2:60-120=3 2:90-150=1"
	if got := windowRows(sink); got != want {
		t.Errorf("output\n%s, want\n%s", got, want)
	}
	if got := stateWindows(t, store); got != "120-180=1 90-150=1" {
		t.Errorf("state %s", got)
	}
	st, err := runQuery(t, ctx, q(), store, runOpts{sink: &collectSink{}})
	if err != nil || st.Batches != 0 {
		t.Errorf("restart without data: %+v %v, want no batch", st, err)
	}
}

// TestWindowKeySchemaSpark: the key field of a tumbling window over timestamp with a
// watermark is, byte for byte in the schema file's JSON, the window field Spark 3.5-4.2 wrote
// for window(ts, '7 days') with withWatermark("ts", "1 day")
// (testdata/spark-repartition/restart/*/window-hdfs).
func TestWindowKeySchemaSpark(t *testing.T) {
	q := &query.Query{Checkpoint: "mem://x", Sink: "noop", GroupBy: []string{"window(timestamp, '7 days')"},
		Agg: []string{"count(*) AS n"}, Watermark: "timestamp=1 day"}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAggregator(r, "")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := statefmt.Struct(a.keyType.Fields[0]).StructJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"3.5.7", "4.0.0", "4.1.1", "4.2.0"} {
		f := "../../testdata/spark-repartition/restart/" + rel + "/window-hdfs/checkpoint/state/0/0/_metadata/schema"
		s, _ := sparkSchema(t, f)
		spark, err := statefmt.Struct(s.Families[0].Key.Fields[0]).StructJSON()
		if err != nil {
			t.Fatal(err)
		}
		if mine != spark {
			t.Errorf("%s: window key field\n%s\nSpark's\n%s", rel, mine, spark)
		}
	}
}

// TestWindowCompleteKeepsLate: complete mode with a watermark drops nothing and evicts
// nothing (StateStoreSaveExec in complete mode puts every row), and runs no no-data batch.
func TestWindowCompleteKeepsLate(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceAtSecs(t, b.Addr(), "in", 5, 20, 40, 55, 70, 75, 50)
	store, ctx := storage.NewMem(), context.Background()
	sink := &collectSink{}
	st, err := runQuery(t, ctx, resolve(t, windowQuery(b.Addr(), "complete", "window(timestamp, '1 minute')")), store, runOpts{sink: sink})
	if err != nil || st.Batches != 3 {
		t.Fatalf("%+v %v, want 3 data batches and no no-data batch", st, err)
	}
	if got := windowRows(sink); !strings.HasSuffix(got, "2:0-60=5 2:60-120=2") {
		t.Errorf("output %s, want the last batch 2:0-60=5 2:60-120=2", got)
	}
	if got := stateWindows(t, store); got != "0-60=5 60-120=2" {
		t.Errorf("state %s", got)
	}
}
