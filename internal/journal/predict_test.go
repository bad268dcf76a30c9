package journal

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Predict is the planner's answer for the checkpoint with the actions applied: the same as
// applying them to a copy of the store and planning there, for every kind of action, each
// filled as the actions before it leave the files. The store itself is not changed.
func TestPredictIsThePlanAfterTheActions(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m) // offsets 0..5, commits 0..7
	orig := journaltest.Snapshot(t, m)
	cp, err := checkpoint.Load(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	as := []Action{
		{Op: OpDelete, Path: "commits/7"},
		{Op: OpDelete, Path: "commits/6"},
		{Op: OpDelete, Path: "commits/5"},
		{Op: OpCopy, Path: "commits/5", From: "commits/4"}, // the file the delete before it removed
		{Op: OpWrite, Path: "offsets/.9.crc", Data: []byte("x")},
	}
	got, err := Predict(ctx, cp, as, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !as[3].Before.Absent() || as[3].After != DigestOf([]byte(orig["commits/4"])) || as[4].After != DigestOf([]byte("x")) {
		t.Errorf("actions not filled in order: %+v", as)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("Predict changed the store:\n%s", d)
	}
	c := journaltest.CloneMem(t, m)
	for _, p := range []string{"commits/7", "commits/6", "commits/5"} {
		if err := c.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteFile(ctx, "commits/5", []byte(orig["commits/4"])); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile(ctx, "offsets/.9.crc", []byte("x")); err != nil {
		t.Fatal(err)
	}
	want := journaltest.ReplayNow(t, c, recovery.Options{})
	if !journaltest.SameRestart(got, want) {
		t.Fatalf("Predict = %q, the plan after applying the actions = %q", got.Verdict(), want.Verdict())
	}
	if before := journaltest.ReplayNow(t, m, recovery.Options{}); journaltest.SameRestart(got, before) {
		t.Fatalf("the actions change nothing the planner sees (%q): the test proves nothing", before.Verdict())
	}
}

// An overlay holds the checkpoint's files only: an action on the file sink's store is refused
// rather than filled from the checkpoint.
func TestOverlayRefusesSinkActions(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	cp, err := checkpoint.Load(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	a := Action{Op: OpDelete, Store: StoreSink, Path: "_spark_metadata/0"}
	if err := NewOverlay(cp).Add(ctx, &a); err == nil || !strings.Contains(err.Error(), "not the checkpoint's") {
		t.Fatalf("Add of a sink action = %v, want it refused", err)
	}
}
