package recovery_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func deltaOffset(id string, v, idx int64, snapshot bool) string {
	return logformat.DeltaSourceOffset{SourceVersion: 1, ReservoirID: id, ReservoirVersion: v, Index: idx, IsStartingVersion: snapshot}.JSON()
}

// deltaCheckpoint writes offsets 0..n-1 of one Delta source (offset i from off(i)) and commits
// 0..committed.
func deltaCheckpoint(t *testing.T, n, committed int64, off func(int64) string) *checkpoint.Checkpoint {
	t.Helper()
	ctx := context.Background()
	b := scenario.NewBuilder("delta")
	b.Metadata()
	for id := int64(0); id < n; id++ {
		b.Offsets(id, off(id))
		if id <= committed {
			b.Commit(id)
		}
	}
	mem := storage.NewMem()
	if err := b.WriteTo(ctx, mem); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func plan(t *testing.T, cp *checkpoint.Checkpoint, tb *deltalog.Table) *recovery.Result {
	t.Helper()
	res, err := recovery.Plan(context.Background(), cp, recovery.Options{Delta: []recovery.DeltaTable{{Source: 0, Table: tb}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Delta) != 1 {
		t.Fatalf("delta verdicts %+v", res.Delta)
	}
	return res
}

func commits(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

// A re-run reads from the offsets before it: the start's version is the one that must be there.
func TestDeltaRerunNeedsStartVersion(t *testing.T) {
	cp := deltaCheckpoint(t, 3, 1, func(id int64) string { return deltaOffset("T", id+4, -1, false) })
	tb := &deltalog.Table{Location: "t", ID: "T", Commits: commits(6, 9), Latest: 9, EarliestCommit: 6}
	res := plan(t, cp, tb)
	if !res.Failed() || res.Reason != recovery.ReasonDeltaVersionsExpired || res.FailedFile != "offsets/1" {
		t.Fatalf("outcome %s reason %s file %s", res.Outcome, res.Reason, res.FailedFile)
	}
	if !strings.Contains(res.ErrorText(), "expecting process data from version 5,\nbut the earliest available version in the _delta_log directory is 6.") {
		t.Errorf("error %q", res.ErrorText())
	}
	// The checkpoint's own prediction stands: batch 2 re-runs.
	if res.RerunBatch == nil || *res.RerunBatch != 2 {
		t.Errorf("rerun %v", res.RerunBatch)
	}
	// With version 5 still there, the restart reads on.
	tb.Commits, tb.EarliestCommit = commits(5, 9), 5
	if res := plan(t, cp, tb); res.Failed() || res.Delta[0].Status != recovery.DeltaOK || res.Delta[0].NeededVersion != 5 || res.Delta[0].VersionsBehind != 4 {
		t.Errorf("outcome %s, verdict %+v", res.Outcome, res.Delta[0])
	}
}

// An offset in the initial snapshot needs the snapshot: a checkpoint at or below it and every
// commit after.
func TestDeltaSnapshotOffset(t *testing.T) {
	cp := deltaCheckpoint(t, 2, 1, func(id int64) string { return deltaOffset("T", 7, id, true) })
	tb := &deltalog.Table{Location: "t", ID: "T", Commits: commits(9, 12), Latest: 12, EarliestCommit: 9,
		Checkpoints: []deltalog.Checkpoint{{Version: 10}}}
	res := plan(t, cp, tb)
	if res.Reason != recovery.ReasonDeltaVersionsExpired || !res.ErrorInexact || res.Delta[0].SparkError == "" {
		t.Fatalf("reason %s, verdict %+v", res.Reason, res.Delta[0])
	}
	tb.Checkpoints = []deltalog.Checkpoint{{Version: 6}}
	tb.Commits, tb.EarliestCommit = commits(7, 12), 7
	if res := plan(t, cp, tb); res.Failed() {
		t.Errorf("snapshot 7 from checkpoint 6 and commit 7: %s", res.ErrorText())
	}
}

// The id is checked before the log, as delta-spark parses the offset first; a checkpoint that
// fails on its own keeps its reason.
func TestDeltaReplacedAndOrder(t *testing.T) {
	cp := deltaCheckpoint(t, 3, 2, func(id int64) string { return deltaOffset("OLD", id, -1, false) })
	tb := &deltalog.Table{Location: "t", ID: "NEW", Commits: commits(8, 9), Latest: 9, EarliestCommit: 8}
	res := plan(t, cp, tb)
	if res.Reason != recovery.ReasonDeltaTableReplaced || res.Exception != recovery.DeltaException ||
		!strings.Contains(res.ErrorText(), "(id = 'NEW'). \nIt used to read from another Delta table (id = 'OLD')") {
		t.Fatalf("reason %s: %s", res.Reason, res.ErrorText())
	}

	// Offsets 0 and 2 without 1: the checkpoint fails first (missing-previous-offsets).
	b := scenario.NewBuilder("gap")
	b.Metadata()
	b.Offsets(0, deltaOffset("OLD", 0, -1, false)).Commit(0)
	b.Offsets(2, deltaOffset("OLD", 2, -1, false))
	mem := storage.NewMem()
	if err := b.WriteTo(context.Background(), mem); err != nil {
		t.Fatal(err)
	}
	cp2, err := checkpoint.Load(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	if res := plan(t, cp2, tb); res.Reason != recovery.ReasonMissingPreviousOffsets {
		t.Errorf("reason %s, want the checkpoint's own", res.Reason)
	}
}

func TestDeltaVersionsBehind(t *testing.T) {
	for _, c := range []struct {
		o      logformat.DeltaSourceOffset
		latest int64
		want   int64
	}{
		{logformat.DeltaSourceOffset{ReservoirVersion: 3, Index: -1}, 3, 1},
		{logformat.DeltaSourceOffset{ReservoirVersion: 4, Index: -1}, 3, 0},
		{logformat.DeltaSourceOffset{ReservoirVersion: 3, Index: 2}, 8, 5},
		{logformat.DeltaSourceOffset{ReservoirVersion: 3, Index: -1, IsStartingVersion: true}, 8, 5},
		{logformat.DeltaSourceOffset{ReservoirVersion: 9, Index: 0}, 3, 0},
	} {
		if got := recovery.DeltaVersionsBehind(c.o, c.latest); got != c.want {
			t.Errorf("%+v latest %d: %d, want %d", c.o, c.latest, got, c.want)
		}
	}
}

// A Delta sink's txn version is the planner's sink input with the Delta sink's words.
func TestDeltaSinkVerdict(t *testing.T) {
	cp := deltaCheckpoint(t, 3, 1, func(id int64) string { return deltaOffset("T", id, -1, false) })
	two := int64(2)
	res, err := recovery.Plan(context.Background(), cp, recovery.Options{SinkLatest: &two, SinkKind: recovery.SinkKindDelta})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Sink; s == nil || s.Kind != "delta" || s.Status != recovery.SinkSkipsRerun || !strings.Contains(s.Message, "the Delta sink skips the re-run") {
		t.Fatalf("sink %+v", s)
	}
	if _, err := recovery.Plan(context.Background(), cp, recovery.Options{SinkKind: "kafka"}); err == nil {
		t.Error("unknown sink kind accepted")
	}
}
