package recovery_test

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// TestClassifyGaps is the one gap classification doctor describes the logs by and detection
// takes the async engine from. The cases marked "was" are where the two former classifiers
// disagreed or detection was wrong.
func TestClassifyGaps(t *testing.T) {
	cases := []struct {
		name             string
		offsets, commits []int64
		kind             recovery.GapKind
		async            bool // WrittenByAsync: detection takes the async engine
	}{
		{"async run, Spark's suite", []int64{0, 3, 4, 7}, []int64{0, 3, 4, 7}, recovery.GapsAsync, true},
		{"async, last batch in flight", []int64{0, 2, 5}, []int64{0, 2}, recovery.GapsAsync, true},
		{"sync", []int64{0, 1, 2, 3}, []int64{0, 1, 2}, recovery.GapsNone, false},
		{"sync after a purge", []int64{100, 101, 102}, []int64{100, 101, 102}, recovery.GapsNone, false},
		{"an orphan offsets file", []int64{0, 1, 2, 3, 9}, []int64{0, 1, 2, 3}, recovery.GapsOrphan, false},
		// Sparse offsets look like async progress tracking to doctor, but a commit without its
		// offsets file is no engine's writing: detection keeps the sync engine.
		{"a commit without offsets", []int64{0, 3, 7}, []int64{0, 3, 5}, recovery.GapsAsync, false},
		{"sparse offsets, no commits", []int64{0, 3, 7}, nil, recovery.GapsAsync, false},
		{"one commit", []int64{0, 3}, []int64{3}, recovery.GapsAmbiguous, false},
		{"holes", []int64{0, 1, 2, 4, 5, 6, 7, 8}, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}, recovery.GapsHoles, false},
		// was: detect's own rule took the async engine because both logs had a gap somewhere,
		// though the commit hole (1) and the offsets gap (4..6) are in different places: an
		// orphan offsets/7 over a log with a deleted commit, which doctor called an orphan.
		{"gaps in different places", []int64{0, 1, 2, 3, 7}, []int64{0, 2, 3}, recovery.GapsOrphan, false},
		// was: detect required every commit to have its offsets file, but Spark's async purge
		// keeps the newest minBatchesToRetain persisted files of each log, and commits, a
		// subset of the offsets ids, then reach further back than offsets.
		{"async after its purge", []int64{3, 7, 11}, []int64{0, 3, 7}, recovery.GapsAsync, true},
	}
	for _, c := range cases {
		g := recovery.ClassifyGaps(c.offsets, c.commits)
		if g.Kind != c.kind || g.WrittenByAsync() != c.async {
			t.Errorf("%s: kind %q written by async %v, want %q %v", c.name, g.Kind, g.WrittenByAsync(), c.kind, c.async)
		}
	}
	g := recovery.ClassifyGaps([]int64{0, 3, 4, 7}, nil)
	if g.Count != 2 || len(g.Missing) != 2 || g.Missing[0] != (recovery.Span{From: 1, To: 2}) || g.Missing[1] != (recovery.Span{From: 5, To: 6}) {
		t.Errorf("missing %v (%d gaps)", g.Missing, g.Count)
	}
}

func scenarioCheckpoint(t *testing.T, name string) (storage.Store, *checkpoint.Checkpoint) {
	t.Helper()
	s, ok := scenario.Get(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	st := storage.NewMem()
	if err := s.WriteTo(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return st, cp
}

// TestAssessTrap: the switch-off trap is one decision, whatever engine the plan is asked for.
func TestAssessTrap(t *testing.T) {
	ctx := context.Background()
	_, cp := scenarioCheckpoint(t, "async-trap-0-3-7")
	for _, mode := range []recovery.Mode{recovery.ModeSync, recovery.ModeAsync} {
		a, err := recovery.Assess(ctx, cp, recovery.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if a.Plan.Mode != mode || a.Trap == nil || !a.SyncMissesPrevious() || !a.Gaps.WrittenByAsync() {
			t.Fatalf("%s: plan %s, trap %v, sync misses previous %v, gaps %+v", mode, a.Plan.Verdict(), a.Trap, a.SyncMissesPrevious(), a.Gaps)
		}
		if a.Trap.Sync.Mode != recovery.ModeSync || a.Trap.Sync.Reason != recovery.ReasonMissingPreviousOffsets || a.Trap.Async.Mode != recovery.ModeAsync || a.Trap.Async.Failed() {
			t.Errorf("%s: trap sync %s / async %s", mode, a.Trap.Sync.Verdict(), a.Trap.Async.Verdict())
		}
	}
	_, cp = scenarioCheckpoint(t, "commits-behind")
	a, err := recovery.Assess(ctx, cp, recovery.Options{Mode: recovery.ModeAsync})
	if err != nil {
		t.Fatal(err)
	}
	if a.Trap != nil || a.SyncMissesPrevious() || a.Sync == nil || a.Sync.Failed() {
		t.Errorf("consecutive latest files: trap %v, sync %s", a.Trap, a.Sync.Verdict())
	}
}

// TestAssessNoTrapWhenAsyncFails: offsets/L-1 missing and the async engine's previous file
// corrupt. Switching async off still fails (doctor's warning), but async progress tracking is
// no way out either, so it is no trap (no advice to keep or pass async).
func TestAssessNoTrapWhenAsyncFails(t *testing.T) {
	ctx := context.Background()
	st, _ := scenarioCheckpoint(t, "async-trap-0-3-7")
	if err := st.Delete(ctx, "offsets/3"); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, "offsets/3", []byte("v1\n{not json")); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	a, err := recovery.Assess(ctx, cp, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Trap != nil || !a.SyncMissesPrevious() {
		t.Errorf("trap %v, sync misses previous %v (%s)", a.Trap, a.SyncMissesPrevious(), a.Sync.Verdict())
	}
}

// TestConcurrentLogUpdate: the engine's text for a log file already there is the planner's
// (Spark 3.5: the error condition without SQLSTATE; 4.0: with it).
func TestConcurrentLogUpdate(t *testing.T) {
	want := "org.apache.spark.SparkException: [CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for 8.\n" +
		"Please make sure only one streaming job runs on a specific checkpoint location at a time."
	if got := recovery.ConcurrentLogUpdate("3.5", 8); got != want {
		t.Errorf("3.5:\n%s\nwant\n%s", got, want)
	}
	if got := recovery.ConcurrentLogUpdate("4.0", 8); got != want+" SQLSTATE: 40000" {
		t.Errorf("4.0:\n%s", got)
	}
}

// TestPlanKafkaRestartFresh: without offsets, a restart reads each Kafka source from
// sources/<i>/0 (repair's replay cost counts from there); a missing one is startingOffsets
// resolved again, an unreadable one is left out.
func TestPlanKafkaRestartFresh(t *testing.T) {
	ctx := context.Background()
	st, _ := scenarioCheckpoint(t, "fresh-metadata-only")
	if err := st.WriteFile(ctx, "sources/0/0", []byte("\x00v1\n{\"t\":{\"0\":7}}")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile(ctx, "sources/2/0", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := recovery.PlanKafkaRestart(ctx, cp, res); err != nil || len(rs.Sources) != 0 {
		t.Fatalf("PlanKafkaRestart: %v, %+v", err, rs)
	}
	rs, err := recovery.PlanKafkaRestartFresh(ctx, cp, res, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Sources) != 2 {
		t.Fatalf("sources %+v", rs.Sources)
	}
	s0, s1 := rs.Sources[0], rs.Sources[1]
	if s0.Index != 0 || s0.Start == nil || s0.Start.JSON() != `{"t":{"0":7}}` || s0.StartFile != "sources/0/0" || s0.ResolvesStartingOffsets() || s0.Batch != 0 {
		t.Errorf("source 0: %+v", s0)
	}
	if s1.Index != 1 || s1.Start != nil || !s1.ResolvesStartingOffsets() {
		t.Errorf("source 1: %+v", s1)
	}
}
