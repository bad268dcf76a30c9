package position

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// TestResetAndRewindS3 applies a reset and a rewind on a real S3 server (versitygw: conditional
// PUTs, listings) and undoes both, byte for byte.
func TestResetAndRewindS3(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	ctx := context.Background()
	mem := committed(t, 3, nil)
	s := storage.NewS3FromClient(client, bucket, storetest.RandomName("pos-"))
	es, err := mem.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, _ := mem.ReadFile(ctx, e.Path)
		if err := s.WriteFile(ctx, e.Path, b); err != nil {
			t.Fatal(err)
		}
	}
	orig := snapshot(t, s)
	undo := func(j *journal.Record) {
		t.Helper()
		loc := journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}
		if _, err := journal.Undo(ctx, s, loc, execOpts()); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(snapshot(t, s)) != fmt.Sprint(orig) {
			t.Fatal("undo did not restore the checkpoint")
		}
	}

	p, err := PlanReset(ctx, s, ResetOptions{Target: Target{Kind: ShiftBy, Shift: -2}})
	if err != nil || p.Refused != "" {
		t.Fatalf("%v %q", err, p.Refused)
	}
	j, err := journal.Apply(ctx, s, p.JournalPlan(), execOpts())
	if err != nil {
		t.Fatal(err)
	}
	if j.Verified == nil || j.Verified.NextBatch != 5 {
		t.Fatalf("verified %+v", j.Verified)
	}
	undo(j)

	one := int64(1)
	r, err := PlanRewind(ctx, s, RewindOptions{ToBatch: &one})
	if err != nil || r.Refused != "" {
		t.Fatalf("%v %q", err, r.Refused)
	}
	if j, err = journal.Apply(ctx, s, r.JournalPlan(), execOpts()); err != nil {
		t.Fatal(err)
	}
	if j.Verified == nil || j.Verified.NextBatch != 2 {
		t.Fatalf("verified %+v", j.Verified)
	}
	undo(j)
}
