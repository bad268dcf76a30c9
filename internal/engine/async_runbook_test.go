package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The runbook "switching off async progress tracking", end to end: a query runs with async
// progress tracking (500 ms interval, clock-driven) into the at-least-once Kafka sink and is
// killed while the logs have gaps; doctor names the trap; then each way out (repair delete,
// repair copy-previous, Spark's procedure) followed by a run without async progress tracking
// loses no record, and the records written twice are exactly those ckpt replay predicted the
// restart reads again.
func TestAsyncSwitchOffRunbook(t *testing.T) {
	const perPartition = 40 // records per input partition; 4 per batch (2 per partition)
	for _, strategy := range []string{"delete", "copy-previous", "spark-procedure"} {
		t.Run(strategy, func(t *testing.T) {
			b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 2}, embedkafka.TopicSpec{Name: "out", Partitions: 2})
			produce(t, b.Addr(), "in", 0, 0, perPartition)
			produce(t, b.Addr(), "in", 1, 0, perPartition)
			dir := t.TempDir()
			store := mustLocal(t, dir)
			mkQuery := func(async bool, interval string) *query.Resolved {
				q := kafkaQuery(b.Addr(), "subscribe=in", "maxOffsetsPerTrigger=4")
				q.Sink = "kafka"
				q.SinkOptions = map[string]string{"kafka.bootstrap.servers": b.Addr(), "topic": "out"}
				if async {
					q.SinkOptions[query.OptAsyncProgressTracking] = "true"
					q.SinkOptions[query.OptAsyncCheckpointInterval] = interval
				}
				q.Checkpoint = dir
				return resolve(t, q)
			}

			// 1. Async, 500 ms, batches 100 ms apart: offsets and commits 0, 5, 10; killed in the
			// middle of writing batch 13 to the sink.
			clock := NewManualClock(time.UnixMilli(1_700_000_000_000))
			killed := make(chan struct{})
			e, err := New(context.Background(), Options{Query: mkQuery(true, "500"), Store: store, Clock: clock, PollingDelay: time.Millisecond,
				FailAt: &FailAt{Batch: 13, Phase: PhaseMidSink}, Exit: func(int) { close(killed); select {} },
				OnProgress: func(*Progress) { clock.Advance(100 * time.Millisecond) }})
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = e.Run(context.Background()) }()
			select {
			case <-killed:
			case <-time.After(30 * time.Second):
				t.Fatal("the async run never reached batch 13")
			}
			// Writes in flight land, as they may before a kill: wait until the writer has applied
			// everything queued (the engine is parked in Exit, so nothing more is queued).
			e.async.w.flush()
			cp, err := checkpoint.Load(context.Background(), store)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(cp.Offsets.IDs(), cp.Commits.IDs()) != "[0 5 10] [0 5 10]" {
				t.Fatalf("after the kill offsets %v commits %v, want [0 5 10] both", cp.Offsets.IDs(), cp.Commits.IDs())
			}
			delivered := readTopic(t, b.Addr(), "out", false)

			// 2. doctor: the normal engine fails (missing-previous-offsets), the gaps are async's.
			out, code := runCkpt(t, []string{"doctor", dir}, time.Minute)
			if code != 3 || !strings.Contains(out, "missing-previous-offsets") || !strings.Contains(out, "async progress tracking") {
				t.Fatalf("doctor (sync): exit %d\n%s", code, out)
			}
			out, _ = runCkpt(t, []string{"doctor", dir, "--mode", "async"}, time.Minute)
			if !strings.Contains(out, "async-progress-gaps") {
				t.Fatalf("doctor --mode async:\n%s", out)
			}
			// A run without async refuses, touching nothing.
			var refused *RefusedError
			if _, err := runQuery(t, context.Background(), mkQuery(false, ""), store, runOpts{}); !errors.As(err, &refused) || refused.Trap == nil {
				t.Fatalf("sync run: %v, want the switch-off trap's refusal", err)
			}

			// 3. The way out, and ckpt replay's prediction of the restart that follows it.
			mode := "sync"
			if strategy == "spark-procedure" {
				mode = "async" // the prediction is for the async restart of the procedure
			} else {
				out, code := runCkpt(t, []string{"repair", dir, "--strategy", strategy, "--execute", "--yes", "--force"}, time.Minute)
				if code != 0 {
					t.Fatalf("repair: exit %d\n%s", code, out)
				}
			}
			out, code = runCkpt(t, []string{"replay", dir, "--mode", mode, "-o", "json"}, time.Minute)
			if code != 0 {
				t.Fatalf("replay: exit %d\n%s", code, out)
			}
			start := predictedStart(t, store, out)
			if strategy == "spark-procedure" {
				if _, err := runQuery(t, context.Background(), mkQuery(true, "0"), store, runOpts{max: 2}); err != nil {
					t.Fatal(err)
				}
			}

			// 4. Without async progress tracking, to the end of the input.
			r := mkQuery(false, "")
			r.Trigger = query.Trigger{Kind: query.TriggerAvailableNow}
			if _, err := runQuery(t, context.Background(), r, store, runOpts{}); err != nil {
				t.Fatal(err)
			}
			final := readTopic(t, b.Addr(), "out", false)
			dups := 0
			for p := int32(0); p < 2; p++ {
				for i := int64(0); i < perPartition; i++ {
					v := fmt.Sprintf("in/%d/%d", p, i)
					want := delivered[v]
					if i >= start[p] {
						want++ // read again by the restart, as predicted
					}
					if final[v] != want {
						t.Errorf("%s written %d times, want %d (before the kill %d; predicted restart start %d)", v, final[v], want, delivered[v], start[p])
					}
					if final[v] > 1 {
						dups++
					}
				}
			}
			t.Logf("%s: restart from %v, %d records written twice, none lost", strategy, start, dups)
		})
	}
}

// predictedStart reads ckpt replay's JSON: the offsets the restart starts reading from per
// partition of topic "in" (a re-run's range start, or the latest offsets file's end).
func predictedStart(t *testing.T, store storage.Store, replayJSON string) map[int32]int64 {
	t.Helper()
	var res struct {
		Outcome       string `json:"outcome"`
		RerunBatch    *int64 `json:"rerunBatch"`
		LatestOffsets *int64 `json:"latestOffsets"`
		Kafka         []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Start     *int64 `json:"start"`
		} `json:"kafka"`
	}
	if err := json.Unmarshal([]byte(replayJSON), &res); err != nil || res.Outcome != "resume" {
		t.Fatalf("replay: %v\n%s", err, replayJSON)
	}
	start := map[int32]int64{}
	if res.RerunBatch != nil {
		for _, k := range res.Kafka {
			if k.Start == nil {
				t.Fatalf("replay: re-run from the initial offsets: %s", replayJSON)
			}
			start[k.Partition] = *k.Start
		}
		return start
	}
	cp, err := checkpoint.Load(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := cp.ReadOffsets(context.Background(), *res.LatestOffsets)
	if err != nil {
		t.Fatal(err)
	}
	k, err := logformat.ParseKafkaOffsets("offsets", seq.Sources[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	for tp, o := range k.Map() {
		start[tp.Partition] = o
	}
	return start
}
