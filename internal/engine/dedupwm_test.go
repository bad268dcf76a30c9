package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// dedupWMInput is TestSparkLiveDedupHandOver's watermark input (5 records a batch, "key
// second"): batch 0 moves the watermark to 10 s, batch 2 to 30 s (a@3 late), batch 4 to 40 s
// (b@29 late), so a no-data batch 5 runs.
const dedupWMInput = "a 0, b 5, a 0, c 20, b 5, a 0, d 12, b 6, c 20, e 15, a 3, f 40, a 30, d 12, g 11, b 20, h 35, g 11, c 25, f 40, c 31, h 36, b 29, i 50, c 31"

// The outputs and watermarks Spark 3.5.7 and 4.1.1 gave for it (the live test compares the
// hand-over's with a Spark-only run's), batch by batch, "key@second".
var (
	dedupWMOut     = []string{"a@0 b@5 c@20", "b@6 d@12 e@15", "a@30 f@40 g@11", "b@20 c@25 h@35", "c@31 h@36 i@50", ""}
	dedupWithinOut = []string{"a@0 b@5 c@20", "d@12 e@15", "a@30 f@40 g@11", "h@35", "c@31 i@50", ""}
	dedupWMMarks   = "0/10 10/10 10/30 30/30 30/40 40/40"
)

func produceKeyedAtSecs(t testing.TB, addr string, input string) {
	t.Helper()
	var recs []*kgo.Record
	for _, r := range strings.Split(input, ", ") {
		var k string
		var s int
		fmt.Sscanf(r, "%s %d", &k, &s)
		recs = append(recs, &kgo.Record{Topic: "in", Key: []byte(k), Value: []byte(fmt.Sprintf("%s@%d", k, s)), Timestamp: winT0.Add(time.Duration(s) * time.Second)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func dedupWMQuery(addr string, within bool) *query.Query {
	q := kafkaQuery(addr, "subscribe=in", "maxOffsetsPerTrigger=5")
	q.Trigger = "availableNow"
	q.Select = []string{"string(key) AS k", "timestamp", "string(value) AS v"}
	q.Watermark = "timestamp=10 seconds"
	if within {
		q.DropDuplicatesWithinWatermark = []string{"k"}
	} else {
		q.DropDuplicates = []string{"k, timestamp"}
	}
	q.Conf = map[string]string{"spark.sql.shuffle.partitions": "2"}
	return q
}

// dedupWMRows renders each collected batch's values, sorted.
func dedupWMRows(s *collectSink) []string {
	var out []string
	for _, b := range s.batches {
		var rows []string
		for _, p := range b.Parts {
			for _, r := range p.Values {
				rows = append(rows, fmt.Sprint(r[2]))
			}
		}
		slices.Sort(rows)
		out = append(out, strings.Join(rows, " "))
	}
	return out
}

// dedupWMState renders the state as "key@second" (dropDuplicates: the event-time key column)
// or "key<expiry second" (within the watermark: the value).
func dedupWMState(t *testing.T, store storage.Store) string {
	t.Helper()
	_, r := readState(t, store)
	var out []string
	if err := r.Each(context.Background(), func(row *state.Row) error {
		k, v := row.Key().Values, row.Value().Values
		if len(k) == 2 {
			out = append(out, fmt.Sprintf("%v@%d", k[0], (int64(k[1].(statefmt.Timestamp))-winT0.UnixMicro())/1e6))
		} else {
			out = append(out, fmt.Sprintf("%v<%d", k[0], (v[0].(int64)-winT0.UnixMicro())/1e6))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestDedupWatermark: late rows dropped, keys evicted at or below the batch's watermark (by
// the event-time key column, or by expiry within the watermark), the watermark advanced and a
// no-data batch run, as Spark did over the same input.
func TestDedupWatermark(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKeyedAtSecs(t, b.Addr(), dedupWMInput)
	for _, c := range []struct {
		within bool
		out    []string
		state  string
	}{{false, dedupWMOut, "i@50"}, {true, dedupWithinOut, "c<41 f<50 h<45 i<60"}} {
		t.Run(fmt.Sprint("within=", c.within), func(t *testing.T) {
			store, sink := storage.NewMem(), &collectSink{}
			if _, err := runQuery(t, context.Background(), resolve(t, dedupWMQuery(b.Addr(), c.within)), store, runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			if got := dedupWMRows(sink); !slices.Equal(got, c.out) {
				t.Errorf("output %q, want %q", got, c.out)
			}
			if got, want := watermarks(t, store), strings.Replace(dedupWMMarks, "0/", fmt.Sprintf("%d/", -winT0.Unix()), 1); got != want {
				t.Errorf("watermarks %s, want %s", got, want)
			}
			if got := dedupWMState(t, store); got != c.state {
				t.Errorf("state %s, want %s", got, c.state)
			}
		})
	}
}

// TestDedupWatermarkCrashRerun: a crash at each phase of batch 2 (the one with late rows and
// a key again after its eviction), then a restart: batch 2 re-runs against state version 2
// and the run ends as an uninterrupted one.
func TestDedupWatermarkCrashRerun(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 1})
	produceKeyedAtSecs(t, b.Addr(), dedupWMInput)
	ctx := context.Background()
	for _, phase := range []string{PhaseAfterOffsets, PhaseMidStateCommit, PhaseMidSink, PhaseBeforeCommit} {
		t.Run(phase, func(t *testing.T) {
			store := storage.NewMem()
			crashAt(t, ctx, resolve(t, dedupWMQuery(b.Addr(), true)), store, &collectSink{}, 2, phase)
			sink := &collectSink{}
			st, err := runQuery(t, ctx, resolve(t, dedupWMQuery(b.Addr(), true)), store, runOpts{sink: sink})
			if err != nil {
				t.Fatal(err)
			}
			if st.Reran == nil || *st.Reran != 2 || st.LastBatch != 5 {
				t.Errorf("restart: %+v, want batch 2 re-run and batch 5 last", st)
			}
			if got := dedupWMRows(sink); !slices.Equal(got, dedupWithinOut[2:]) {
				t.Errorf("restart output %q, want %q", got, dedupWithinOut[2:])
			}
			if got := dedupWMState(t, store); got != "c<41 f<50 h<45 i<60" {
				t.Errorf("state %s", got)
			}
		})
	}
}
