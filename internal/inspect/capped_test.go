package inspect

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// inspect --batches reads each offsets file capped: one over logformat.MaxFileBytes is that
// batch's problem, read no further than the limit, and the other rows are shown. Before, it
// was read whole.
func TestBatchesCapLogFiles(t *testing.T) {
	defer func(n int64) { logformat.MaxFileBytes = n }(logformat.MaxFileBytes)
	logformat.MaxFileBytes = 1 << 20
	ctx := context.Background()
	mem := storage.NewMem()
	b := scenario.NewBuilder("batchcap").Metadata()
	b.OffsetsRange(0, 9, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
	b.Commits(0, 9)
	if err := b.WriteTo(ctx, mem); err != nil {
		t.Fatal(err)
	}
	st := &storetest.Endless{Store: mem, Path: "offsets/3", T: t}
	l, err := Batches(ctx, st, BatchesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Batches) != 10 {
		t.Fatalf("%d rows, want 10", len(l.Batches))
	}
	for _, r := range l.Batches {
		if (r.ID == 3) != (r.Problem != nil) {
			t.Errorf("batch %d: problem %+v", r.ID, r.Problem)
		}
	}
	if n := st.Read(); n > logformat.MaxFileBytes+64<<10 {
		t.Errorf("read %d bytes of offsets/3, limit %d", n, logformat.MaxFileBytes)
	}
}
