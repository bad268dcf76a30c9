package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The scenarios of Spark's AsyncProgressTrackingMicroBatchExecutionSuite (§6.2, §6.3, §6.5),
// replayed against kfake with the injected clock: one record per batch, the clock advanced
// between batches as the suite's AdvanceManualClock steps.

func logIDs(t *testing.T, store storage.Store) (offsets, commits []int64) {
	t.Helper()
	cp, err := checkpoint.Load(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(cp.Offsets.IDs()), slices.Clone(cp.Commits.IDs())
}

func asyncQuery(addr, topic string, intervalMs string) *query.Query {
	q := kafkaQuery(addr, "subscribe="+topic)
	q.SinkOptions = map[string]string{query.OptAsyncProgressTracking: "true", query.OptAsyncCheckpointInterval: intervalMs}
	return q
}

// stepRun runs one query with max batches: after batch i's sink write, the next record is
// produced and the clock advanced by advance[i] (Spark's AddData + AdvanceManualClock).
type stepRun struct {
	t        *testing.T
	b        *embedkafka.Broker
	topic    string
	clock    *ManualClock
	next     int // next record id to produce
	store    storage.Store
	switchOf bool
}

func (s *stepRun) run(q *query.Query, advance []time.Duration) (*collectSink, Stats, error) {
	s.t.Helper()
	sink := &collectSinkHook{}
	n := 0
	sink.after = func(int64) {
		if n < len(advance) {
			produce(s.t, s.b.Addr(), s.topic, 0, s.next, 1)
			s.next++
			s.clock.Advance(advance[n])
		}
		n++
	}
	e, err := New(context.Background(), Options{Query: resolve(s.t, q), Store: s.store, Sink: sink, Clock: s.clock,
		MaxBatches: len(advance) + 1, PollingDelay: time.Millisecond, AsyncSwitchOff: s.switchOf})
	if err != nil {
		s.t.Fatal(err)
	}
	st, err := e.Run(context.Background())
	return &sink.collectSink, st, err
}

func newStepRun(t *testing.T) *stepRun {
	b := startBroker(t, embedkafka.TopicSpec{Name: "a", Partitions: 1})
	produce(t, b.Addr(), "a", 0, 0, 1)
	return &stepRun{t: t, b: b, topic: "a", clock: NewManualClock(time.UnixMilli(1_700_000_000_100)), next: 1, store: storage.NewMem()}
}

func wantIDs(t *testing.T, store storage.Store, wantOffsets, wantCommits []int64) {
	t.Helper()
	o, c := logIDs(t, store)
	if !slices.Equal(o, wantOffsets) || !slices.Equal(c, wantCommits) {
		t.Fatalf("offsets %v, commits %v; want offsets %v, commits %v", o, c, wantOffsets, wantCommits)
	}
}

const ms = time.Millisecond

// Spark: "interval commits and recovery".
func TestAsyncIntervalCommitsAndRecovery(t *testing.T) {
	s := newStepRun(t)
	q := func() *query.Query { return asyncQuery(s.b.Addr(), "a", "1000") }
	sink, _, err := s.run(q(), []time.Duration{100 * ms, 100 * ms, 800 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if got := sink.sizes(); !slices.Equal(got, []int64{1, 1, 1, 1}) {
		t.Fatalf("batch sizes %v", got)
	}
	wantIDs(t, s.store, []int64{0, 3}, []int64{0, 3})

	// Restart: the first batch after a restart is always persisted.
	produce(t, s.b.Addr(), "a", 0, s.next, 1)
	s.next++
	s.clock.Advance(100 * ms)
	sink, st, err := s.run(q(), []time.Duration{100 * ms, 100 * ms, 800 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if st.Reran != nil || !slices.Equal(sink.sizes(), []int64{1, 1, 1, 1}) {
		t.Fatalf("restart: reran %v, sizes %v", st.Reran, sink.sizes())
	}
	wantIDs(t, s.store, []int64{0, 3, 4, 7}, []int64{0, 3, 4, 7})
	// The sync planner cannot restart this checkpoint (offsets/6 missing); the async one resumes at 8.
	cp, _ := checkpoint.Load(context.Background(), s.store)
	if p, _ := recovery.Plan(context.Background(), cp, recovery.Options{Mode: recovery.ModeSync}); !p.Failed() {
		t.Errorf("sync plan: %s", p.Verdict())
	}
	if p, _ := recovery.Plan(context.Background(), cp, recovery.Options{Mode: recovery.ModeAsync}); p.Failed() || p.NextBatch != 8 {
		t.Errorf("async plan: %s", p.Verdict())
	}
}

// Spark: "with log purging" (minBatchesToRetain=2, asyncLogPurge off).
func TestAsyncLogPurging(t *testing.T) {
	s := newStepRun(t)
	q := func() *query.Query {
		q := asyncQuery(s.b.Addr(), "a", "1000")
		q.Conf = map[string]string{query.ConfMinBatchesToRetain: "2"}
		return q
	}
	steps := []time.Duration{100 * ms, 100 * ms, 800 * ms, 100 * ms, 100 * ms, 100 * ms, 800 * ms, 100 * ms}
	if _, _, err := s.run(q(), steps); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, s.store, []int64{3, 7}, []int64{3, 7})

	// Restart: batch 8 was not persisted, so it runs again as the first batch (persisted);
	// writtenToDurableStorage is seeded with the listing [3, 7].
	sink, _, err := s.run(q(), []time.Duration{100 * ms, 100 * ms, 100 * ms, 800 * ms, 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	if got := sink.sizes(); !slices.Equal(got, []int64{1, 1, 1, 1, 1, 1}) {
		t.Fatalf("batch sizes %v", got)
	}
	wantIDs(t, s.store, []int64{8, 12}, []int64{8, 12})
}

// buildSync writes a sync checkpoint of batches 0..n-1, one record each, then removes the
// given offsets and commits files.
func buildSync(t *testing.T, s *stepRun, n int, dropOffsets, dropCommits []int64) {
	t.Helper()
	q := kafkaQuery(s.b.Addr(), "subscribe=a")
	steps := make([]time.Duration, n-1)
	for i := range steps {
		steps[i] = 100 * ms
	}
	if _, _, err := s.run(q, steps); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range dropOffsets {
		if err := s.store.Delete(ctx, checkpoint.DirOffsets+"/"+itoa(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range dropCommits {
		if err := s.store.Delete(ctx, checkpoint.DirCommits+"/"+itoa(id)); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func values(c *collectSink) []string {
	var out []string
	for _, v := range c.values() {
		out = append(out, v[strings.LastIndex(v, "/")+1:])
	}
	return out
}

// Spark's recovery scenarios (§6.5): the restart re-runs the latest batch from the nearest
// lower offsets file, and the re-run's commit is persisted (first batch of the run).
func TestAsyncRecoveryScenarios(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		n                        int
		dropOffsets, dropCommits []int64
		interval                 string
		steps                    int
		wantFirst                []string // records of the re-run batch
		wantOffsets, wantCommits []int64
	}{
		// offsets [0,2,5], commits [0,2]: re-run 5 over (O[2], O[5]] = 3,4,5.
		{"rerun-0-2-5", 6, []int64{1, 3, 4}, []int64{1, 3, 4, 5}, "1000", 0, []string{"3", "4", "5"}, []int64{0, 2, 5}, []int64{0, 2, 5}},
		// "recovery non-contiguous log": offsets [0,3], commits [0]; interval 0 → [0,3,4,5].
		{"non-contiguous", 4, []int64{1, 2}, []int64{1, 2, 3}, "0", 2, []string{"1", "2", "3"}, []int64{0, 3, 4, 5}, []int64{0, 3, 4, 5}},
		// "recovery when first offset is not zero and not commit log entries": offsets [2].
		{"only-2", 3, []int64{0, 1}, []int64{0, 1, 2}, "0", 3, []string{"0", "1", "2"}, []int64{2, 3, 4, 5}, []int64{2, 3, 4, 5}},
		// offsets [0,2], commits [0]: WARN not trailing, re-run 2 over (O[0], O[2]] = 1,2.
		{"behind-0-2", 3, []int64{1}, []int64{1, 2}, "1000", 0, []string{"1", "2"}, []int64{0, 2}, []int64{0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStepRun(t)
			buildSync(t, s, tc.n, tc.dropOffsets, tc.dropCommits)
			steps := make([]time.Duration, tc.steps)
			for i := range steps {
				steps[i] = 100 * ms
			}
			sink, st, err := s.run(asyncQuery(s.b.Addr(), "a", tc.interval), steps)
			if err != nil {
				t.Fatal(err)
			}
			if st.Reran == nil {
				t.Fatal("no re-run")
			}
			if got := values(sink)[:len(tc.wantFirst)]; !slices.Equal(got, tc.wantFirst) {
				t.Errorf("re-run records %v, want %v", got, tc.wantFirst)
			}
			wantIDs(t, s.store, tc.wantOffsets, tc.wantCommits)
		})
	}
}

// A write error is raised at the next batch (errorNotifier), not in the batch that issued it.
func TestAsyncWriteErrorFailsNextBatch(t *testing.T) {
	s := newStepRun(t)
	faulty := storage.NewFaulty(s.store)
	boom := errors.New("disk on fire")
	faulty.SetHook(func(_ context.Context, op storage.Op, path string) error {
		if op == storage.OpWrite && path == "offsets/1" {
			return boom
		}
		return nil
	})
	s.store = faulty
	var batches []int64
	var e *Engine
	sink := &collectSinkHook{}
	sink.after = func(id int64) {
		batches = append(batches, id)
		produce(t, s.b.Addr(), "a", 0, s.next, 1)
		s.next++
		if id == 1 {
			// the writer fails offsets/1 before batch 2 is planned
			e.async.w.flush()
		}
	}
	e, err := New(context.Background(), Options{Query: resolve(t, asyncQuery(s.b.Addr(), "a", "0")), Store: faulty, Sink: sink, Clock: s.clock,
		MaxBatches: 5, PollingDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the write error", err)
	}
	if !slices.Equal(batches, []int64{0, 1}) {
		t.Errorf("batches run %v, want [0 1]: the error stops the query at the next batch", batches)
	}
}

// The switch-off: Spark's documented procedure (async with interval 0 for two batches, stop,
// restart without async) and --async-switch-off, after a sync restart was refused with the
// ways out and without touching the checkpoint.
func TestAsyncSwitchOff(t *testing.T) {
	for _, procedure := range []string{"spark", "flag"} {
		t.Run(procedure, func(t *testing.T) {
			s := newStepRun(t)
			if _, _, err := s.run(asyncQuery(s.b.Addr(), "a", "1000"), []time.Duration{100 * ms, 100 * ms, 800 * ms, 100 * ms}); err != nil {
				t.Fatal(err)
			}
			wantIDs(t, s.store, []int64{0, 3}, []int64{0, 3})
			before, _ := s.store.Walk(context.Background(), "")

			sync := func() *query.Query { return kafkaQuery(s.b.Addr(), "subscribe=a") }
			_, _, err := s.run(sync(), []time.Duration{100 * ms})
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Trap == nil {
				t.Fatalf("sync restart: %v, want the switch-off trap's refusal", err)
			}
			if !strings.Contains(err.Error(), "java.lang.IllegalStateException: batch 2 doesn't exist") ||
				refused.Trap.Sync.Reason != recovery.ReasonMissingPreviousOffsets || refused.Trap.Async.NextBatch != 4 ||
				!slices.Equal(refused.Offsets, []int64{0, 3}) || !slices.Equal(refused.Commits, []int64{0, 3}) || refused.NoSwitchOff != "" ||
				refused.Checkpoint != s.store.URI() {
				t.Errorf("refusal: %v, trap sync %s, async %s, offsets %v, commits %v, no switch-off %q",
					err, refused.Trap.Sync.Verdict(), refused.Trap.Async.Verdict(), refused.Offsets, refused.Commits, refused.NoSwitchOff)
			}
			after, _ := s.store.Walk(context.Background(), "")
			if len(after) != len(before) {
				t.Fatalf("the refused start changed the checkpoint: %v → %v", before, after)
			}

			var got []string
			if procedure == "spark" {
				// Spark's procedure: async, interval 0, two batches; stop; then without async.
				sink, _, err := s.run(asyncQuery(s.b.Addr(), "a", "0"), []time.Duration{100 * ms, 100 * ms})
				if err != nil {
					t.Fatal(err)
				}
				got = values(sink)
				wantIDs(t, s.store, []int64{0, 3, 4, 5, 6}, []int64{0, 3, 4, 5, 6})
				produce(t, s.b.Addr(), "a", 0, s.next, 1)
				s.next++
				sink, st, err := s.run(sync(), []time.Duration{100 * ms})
				if err != nil {
					t.Fatal(err)
				}
				if st.Reran != nil {
					t.Errorf("sync restart re-ran batch %d", *st.Reran)
				}
				got = append(got, values(sink)...)
			} else {
				s.switchOf = true
				sink, _, err := s.run(sync(), []time.Duration{100 * ms, 100 * ms, 100 * ms})
				s.switchOf = false
				if err != nil {
					t.Fatal(err)
				}
				got = values(sink)
				wantIDs(t, s.store, []int64{0, 3, 4, 5, 6, 7}, []int64{0, 3, 4, 5, 6, 7})
				// From now on the normal engine: one more run without async.
				produce(t, s.b.Addr(), "a", 0, s.next, 1)
				s.next++
				sink, st, err := s.run(sync(), []time.Duration{100 * ms})
				if err != nil {
					t.Fatal(err)
				}
				if st.Reran != nil {
					t.Errorf("sync restart re-ran batch %d", *st.Reran)
				}
				got = append(got, values(sink)...)
			}
			// Nothing lost, nothing twice: batch 4 onwards are records 4, 5, ... in order.
			for i, v := range got {
				if v != strconv.Itoa(4+i) {
					t.Fatalf("records after the switch-off %v, want 4, 5, … each once", got)
				}
			}
			if len(got) != s.next-4 {
				t.Errorf("records after the switch-off %v, want 4..%d", got, s.next-1)
			}
			o, c := logIDs(t, s.store)
			L := o[len(o)-1]
			if o[len(o)-2] != L-1 || c[len(c)-1] != L {
				t.Errorf("offsets %v commits %v: the latest two offsets must be consecutive and committed", o, c)
			}
			cp, _ := checkpoint.Load(context.Background(), s.store)
			if p, _ := recovery.Plan(context.Background(), cp, recovery.Options{Mode: recovery.ModeSync}); p.Failed() || p.RerunBatch != nil {
				t.Errorf("sync plan after the switch-off: %s", p.Verdict())
			}
		})
	}
}

// The writer holds the write in progress plus a queue of 2 (Spark's async-log-write executor);
// a fourth write blocks the engine until the store finishes one.
func TestAsyncWriterQueueBlocks(t *testing.T) {
	gate := make(chan struct{})
	store := storage.NewFaulty(storage.NewMem()).SetHook(func(_ context.Context, op storage.Op, _ string) error {
		if op == storage.OpWrite {
			<-gate
		}
		return nil
	})
	w := newAsyncLogWriter(store, 100, nil, nil)
	ctx := context.Background()
	for id := int64(0); id < 3; id++ {
		w.addAsync(ctx, checkpoint.DirOffsets, id, []byte("v1\n{}"), nil) // in progress, queued, queued
	}
	fourth := make(chan struct{})
	go func() {
		w.addAsync(ctx, checkpoint.DirOffsets, 3, []byte("v1\n{}"), nil)
		close(fourth)
	}()
	select {
	case <-fourth:
		t.Fatal("a fourth write was accepted while the store had not finished any")
	case <-time.After(100 * ms):
	}
	gate <- struct{}{} // the first write finishes: room for the fourth
	select {
	case <-fourth:
	case <-time.After(5 * time.Second):
		t.Fatal("the fourth write stayed blocked after the store finished one")
	}
	close(gate)
	w.Close()
	if o, _ := logIDs(t, store); !slices.Equal(o, []int64{0, 1, 2, 3}) {
		t.Errorf("offsets %v, written in order 0..3", o)
	}
}
