package purge

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func build(t *testing.T, offsets, commits int64) storage.Store {
	t.Helper()
	s := storage.NewMem()
	b := scenario.NewBuilder("purge").Metadata()
	b.OffsetsRange(0, offsets-1, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
	b.Commits(0, commits-1)
	b.Raw("offsets/.5.crc", "crc")
	if err := b.WriteTo(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKeepNewest(t *testing.T) {
	p, err := NewPlan(context.Background(), build(t, 300, 300), Options{Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	if p.From != 200 || p.Offsets != 200 || p.Commits != 200 || len(p.Actions) != 401 || p.Refused != "" {
		t.Fatalf("from %d offsets %d commits %d actions %d refused %q", p.From, p.Offsets, p.Commits, len(p.Actions), p.Refused)
	}
	if p.Actions[0].Path != "commits/0" || p.Actions[1].Path != "offsets/0" {
		t.Errorf("not oldest first, commit before offsets: %s, %s", p.Actions[0].Path, p.Actions[1].Path)
	}
	crc := false
	for _, a := range p.Actions {
		crc = crc || a.Path == "offsets/.5.crc"
		if a.Before.Absent() {
			t.Fatalf("%s has no digest", a.Path)
		}
	}
	if !crc {
		t.Error("the checksum of offsets/5 stays behind")
	}
	if p.After.Verdict() != p.Before.Verdict() {
		t.Errorf("restart changes: %s -> %s", p.Before.Verdict(), p.After.Verdict())
	}
}

// TestKeepsWhatTheRestartReads: commits stop at 149, so the restart re-runs from there and the
// purge stops below the latest commit whatever --keep says.
func TestKeepsWhatTheRestartReads(t *testing.T) {
	p, err := NewPlan(context.Background(), build(t, 300, 150), Options{Keep: 100})
	if err != nil {
		t.Fatal(err)
	}
	if p.From != 149 || !strings.Contains(p.Why, "latest commit is batch 149") {
		t.Fatalf("from %d: %s", p.From, p.Why)
	}
	if p.Refused != "" {
		t.Fatal(p.Refused)
	}
}

func TestNeverBelowMinBatchesToRetain(t *testing.T) {
	if _, err := NewPlan(context.Background(), build(t, 10, 10), Options{Keep: 5}); err == nil || !strings.Contains(err.Error(), "below minBatchesToRetain 100") {
		t.Fatalf("got %v", err)
	}
	p, err := NewPlan(context.Background(), build(t, 10, 10), Options{Keep: 100})
	if err != nil || p.From != -1 || len(p.Actions) != 0 {
		t.Fatalf("a small checkpoint: from %d, %d actions, %v", p.From, len(p.Actions), err)
	}
}
