package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// A change that leaves the file sink's log short of the checkpoint's commits is not "applied and
// verified" (issue 26 item 4: offsets/60 without _spark_metadata/60 made every read of the output
// fail while resume said verified and sink verify said OK): verification checks the sink, and
// the change is rolled back.
func TestSinkHoleNotVerified(t *testing.T) {
	ctx := context.Background()
	ck, out := storage.NewMem(), storage.NewMem()
	b := scenario.NewBuilder("sinkhole").Metadata()
	b.OffsetsRange(0, 2, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
	b.Commits(0, 2)
	if err := b.WriteTo(ctx, ck); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := out.WriteFile(ctx, fmt.Sprintf("%s/%d", sinklog.Dir, i), []byte("v1\n")); err != nil {
			t.Fatal(err)
		}
	}
	origCk, origOut := journaltest.Snapshot(t, ck), journaltest.Snapshot(t, out)
	cp, err := checkpoint.Load(ctx, ck)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := Action{Op: OpDelete, Store: StoreSink, Path: sinklog.Dir + "/2", Reason: "a hole in the sink's log"}
	if err := Fill(ctx, out, &a); err != nil {
		t.Fatal(err)
	}
	p := &Plan{Strategy: "delete", Actions: []Action{a}, After: res}
	o := execOpts()
	o.Sink = out
	_, err = Apply(ctx, ck, p, o)
	var mm *MismatchError
	if !errors.As(err, &mm) || !mm.RolledBack || !strings.Contains(mm.Problem, "ends at batch 1, but the checkpoint commits batch 2") {
		t.Fatalf("execute = %v, want a rolled-back MismatchError about the sink's log", err)
	}
	if d := journaltest.DiffSnapshots(origCk, journaltest.Snapshot(t, ck)) + journaltest.DiffSnapshots(origOut, journaltest.Snapshot(t, out)); d != "" {
		t.Errorf("not rolled back:\n%s", d)
	}
}
