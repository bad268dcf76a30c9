package recovery_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// A caller that knows its query's sources (ckpt run) gets Spark's assertion from the planner
// when the checkpoint disagrees, instead of checking it a second time itself.
func TestQuerySourcesKnown(t *testing.T) {
	ctx := context.Background()
	s, ok := scenario.Get("kafka-and-file-source")
	if !ok {
		t.Fatal("scenario kafka-and-file-source is gone")
	}
	st := storage.NewMem()
	if err := s.WriteTo(ctx, st); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Plan(ctx, cp, recovery.Options{QuerySources: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != recovery.OutcomeFail || res.Reason != recovery.ReasonSourceCountMismatch {
		t.Fatalf("outcome %s reason %q, want fail %s", res.Outcome, res.Reason, recovery.ReasonSourceCountMismatch)
	}
	want := "There are [2] sources in the checkpoint offsets and now there are [1] sources requested by the query. Cannot continue."
	if !strings.Contains(res.ErrorText(), want) {
		t.Errorf("error %q lacks %q", res.ErrorText(), want)
	}
	res, err = recovery.Plan(ctx, cp, recovery.Options{QuerySources: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Errorf("matching source count fails: %s", res.ErrorText())
	}
}
