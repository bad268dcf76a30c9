package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// A running query purges old offsets files between inspect's listing and its reads: the
// vanished file is a problem of its batch, and every other batch is still shown.
func TestBatchesFileVanishedSinceListing(t *testing.T) {
	s := storage.NewFaulty(memStore(t, kafkaCheckpoint())).
		FailReads("offsets/1", fmt.Errorf("purged: %w", fs.ErrNotExist))
	l, err := Batches(ctx, s, BatchesOptions{})
	if err != nil {
		t.Fatalf("a vanished file failed the whole listing: %v", err)
	}
	m := toJSON(t, l)
	rows := get(t, m, "batches").([]any)
	if len(rows) < 3 {
		t.Fatalf("rows %d, want at least 3", len(rows))
	}
	eq(t, "1 problem kind", get(t, rows[1], "problem", "kind"), "unreadable")
	eq(t, "0 records", get(t, rows[0], "records"), 15)
	if p, ok := rows[2].(map[string]any)["problem"]; ok {
		t.Errorf("batch 2 has a problem: %v", p)
	}

	// Any other read error still fails: ckpt must not hide a broken store.
	s = storage.NewFaulty(memStore(t, kafkaCheckpoint())).FailReads("offsets/1", errors.New("connection reset"))
	if _, err := Batches(ctx, s, BatchesOptions{}); err == nil {
		t.Error("a read error other than not-exist was swallowed")
	}
}
