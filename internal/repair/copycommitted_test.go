package repair

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// asyncCrash builds the async crash: async progress tracking wrote offsets 0,3,7,12 and commits
// 0,3,7, then the query died before committing 12 and is restarted without async tracking.
func asyncCrash(t *testing.T, stateful bool) *storage.Mem {
	t.Helper()
	b := scenario.NewBuilder("async-crash")
	b.Metadata()
	b.KafkaInitial(0, scenario.KafkaOffsets("events", 0, 0, 0))
	for _, id := range []int64{0, 3, 7, 12} {
		b.Offsets(id, scenario.Kafka("events", id, 3))
	}
	for _, id := range []int64{0, 3, 7} {
		b.Commit(id)
	}
	if stateful {
		b.Raw("state/0/0/8.delta", "x")
	}
	s := storage.NewMem()
	if err := b.WriteTo(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCopyCommittedRecommendedAndRestartable(t *testing.T) {
	ctx := context.Background()
	s := asyncCrash(t, false)
	orig := journaltest.Snapshot(t, s)
	sync := recovery.Options{Mode: recovery.ModeSync}
	if before := journaltest.ReplayNow(t, s, sync); !before.Failed() {
		t.Fatalf("the async crash must fail a sync restart, got %s", before.Verdict())
	}
	p, err := NewPlan(ctx, s, Options{Planner: sync})
	if err != nil {
		t.Fatal(err)
	}
	if p.Recommended != StrategyCopyCommitted || p.Strategy != StrategyCopyCommitted {
		t.Fatalf("recommended %q, picked %q; want copy-committed (choices %+v)", p.Recommended, p.Strategy, p.Choices)
	}
	for _, c := range p.Choices {
		if c.Strategy == StrategyCopyPrevious && c.Feasible {
			t.Errorf("copy-previous loses records here and must be refused: %+v", c.Replay)
		}
	}
	if len(p.Actions) != 1 || p.Actions[0].Path != "offsets/11" || p.Actions[0].From != "offsets/7" {
		t.Fatalf("actions %+v, want a copy of offsets/7 as offsets/11", p.Actions)
	}
	if n := deref(p.Replay.LostRecords); n != 0 {
		t.Errorf("copy-committed loses %d records, want 0", n)
	}
	// The re-run of 12 reads (end of 7, end of 12] on every partition: 5 batches' worth.
	if p.Replay.RerunRecords == nil || *p.Replay.RerunRecords != 5*(10+11+12) {
		t.Errorf("rerun records %v, want %d", p.Replay.RerunRecords, 5*(10+11+12))
	}
	j, err := journal.Apply(ctx, s, p.JournalPlan(), execOpts())
	if err != nil {
		t.Fatal(err)
	}
	// Proven with the one planner on the checkpoint as it now is.
	got := journaltest.ReplayNow(t, s, sync)
	if got.Failed() || got.RerunBatch == nil || *got.RerunBatch != 12 || got.NextBatch != 12 {
		t.Fatalf("after --execute: %s, want a re-run of batch 12", got.Verdict())
	}
	for _, k := range got.Kafka {
		if k.Start == nil || *k.Start != 8*int64(10+k.Partition) {
			t.Errorf("partition %d re-run starts at %v, want the end of batch 7 (%d)", k.Partition, k.Start, 8*(10+k.Partition))
		}
	}
	if _, err := journal.Undo(ctx, s, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}, execOpts()); err != nil {
		t.Fatal(err)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, s)); d != "" {
		t.Fatalf("undo left:\n%s", d)
	}
}

func TestCopyCommittedRefusedWhenStateful(t *testing.T) {
	s := asyncCrash(t, true)
	p, err := NewPlan(context.Background(), s, Options{Planner: recovery.Options{Mode: recovery.ModeSync}, Strategy: StrategyCopyCommitted})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Refused, "stateful") || len(p.Actions) != 0 {
		t.Fatalf("refused %q, actions %v; want a stateful refusal", p.Refused, p.Actions)
	}
}

func TestCopyCommittedOnlyOfferedForTheAsyncCrash(t *testing.T) {
	s := storage.NewMem()
	journaltest.BuildScenario(t, "async-trap-0-3-7", s)
	p, err := NewPlan(context.Background(), s, Options{Planner: recovery.Options{Mode: recovery.ModeSync}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Choices {
		if c.Strategy == StrategyCopyCommitted {
			t.Fatalf("copy-committed offered for a committed latest batch (it would be copy-previous): %+v", c)
		}
	}
}
