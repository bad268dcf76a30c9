package recovery_test

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func loadScenario(t *testing.T, name string) (*checkpoint.Checkpoint, storage.Store) {
	t.Helper()
	ctx := context.Background()
	s, ok := scenario.Get(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	st, forget, err := s.Mem(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(forget)
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	return cp, st
}

func TestWhatIf(t *testing.T) {
	ctx := context.Background()
	sink := int64(7)
	cases := []struct {
		scenario, point string
		sink            *int64
		next            int64
		rerun           int64 // -1: none
		endUnknown      bool
		sinkStatus      string
	}{
		// committed: C == L = 7, the next batch is 8.
		{"committed", recovery.CrashAfterOffsets, &sink, 8, 8, true, recovery.SinkWritesRerun},
		{"committed", recovery.CrashBeforeCommit, &sink, 8, 8, true, recovery.SinkSkipsRerun},
		{"committed", recovery.CrashAfterCommit, &sink, 9, -1, false, recovery.SinkInSync},
		// rerun-last: batch 7 re-runs; its offsets already exist.
		{"rerun-last", recovery.CrashAfterOffsets, nil, 7, 7, false, ""},
		{"rerun-last", recovery.CrashAfterCommit, nil, 8, -1, false, ""},
		// a fresh checkpoint: batch 0 is new.
		{"fresh-metadata-only", recovery.CrashAfterOffsets, nil, 0, 0, true, ""},
	}
	for _, c := range cases {
		t.Run(c.scenario+"/"+c.point, func(t *testing.T) {
			cp, st := loadScenario(t, c.scenario)
			res, err := recovery.WhatIf(ctx, cp, recovery.Options{SinkLatest: c.sink}, c.point, recovery.NextBatch{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() || res.NextBatch != c.next {
				t.Fatalf("%s (next %d), want next %d", res.Verdict(), res.NextBatch, c.next)
			}
			if (res.RerunBatch == nil) != (c.rerun < 0) || (res.RerunBatch != nil && *res.RerunBatch != c.rerun) {
				t.Fatalf("rerun %v, want %d", res.RerunBatch, c.rerun)
			}
			if c.endUnknown {
				for _, e := range res.RerunRange.End {
					if string(e) != "null" {
						t.Errorf("end %s, want null (unknown)", e)
					}
				}
				for _, k := range res.Kafka {
					if k.End != nil || k.Records != nil {
						t.Errorf("kafka %+v: end should be unknown", k)
					}
				}
			}
			if c.sinkStatus != "" && (res.Sink == nil || res.Sink.Status != c.sinkStatus) {
				t.Errorf("sink %+v, want %s", res.Sink, c.sinkStatus)
			}
			if len(res.Warnings) == 0 {
				t.Error("no what-if note")
			}
			// The real store is untouched.
			cp2, err := checkpoint.Load(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if len(cp2.Offsets.IDs()) != len(cp.Offsets.IDs()) || len(cp2.Commits.IDs()) != len(cp.Commits.IDs()) {
				t.Error("WhatIf changed the store")
			}
		})
	}

	// Given end offsets are used as they are.
	cp, _ := loadScenario(t, "committed")
	res, err := recovery.WhatIf(ctx, cp, recovery.Options{}, recovery.CrashAfterOffsets,
		recovery.NextBatch{Offsets: []string{scenario.KafkaOffsets("events", 95, 100, 110)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kafka) != 3 || res.Kafka[0].Records == nil || *res.Kafka[0].Records != 15 {
		t.Errorf("kafka %+v, want 15 records on partition 0 (80 → 95)", res.Kafka)
	}

	// A failing restart never reaches the point.
	cp, _ = loadScenario(t, "async-trap-0-3-7")
	res, err = recovery.WhatIf(ctx, cp, recovery.Options{}, recovery.CrashAfterCommit, recovery.NextBatch{})
	if err != nil || !res.Failed() {
		t.Fatalf("%v %v", res, err)
	}
	if _, err := recovery.WhatIf(ctx, cp, recovery.Options{}, "crash-somewhere", recovery.NextBatch{}); err == nil {
		t.Error("unknown point accepted")
	}
}
