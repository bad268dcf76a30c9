package checkpoint_test

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Checking a location and loading it lists the root once (LoadAt reuses Require's listing), and
// the size of a file already read costs no Stat; before, every command listed the root twice and
// doctor stat'ed offsets/L, offsets/L-1 and commits/C (a HEAD each on S3).
func TestLoadAtAndSizeAvoidRequests(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	for p, data := range map[string]string{
		"metadata":  `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`,
		"offsets/0": "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1700000000000,\"conf\":{}}\n{\"logOffset\":0}",
		"commits/0": "v1\n{\"nextBatchWatermarkMs\":0}",
	} {
		if err := mem.WriteFile(ctx, p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	f := storage.NewFaulty(mem)
	loc, err := checkpoint.Require(ctx, f, checkpoint.RequireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.LoadAt(ctx, f, loc)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Count(storage.OpList); n != 3 { // the root, offsets/, commits/
		t.Errorf("%d listings, want 3", n)
	}
	if !cp.HasMetadata() {
		t.Error("the reused root listing lost the metadata file")
	}
	if _, err := cp.ReadCommit(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := cp.Size(ctx, "commits/0"); err != nil || n != 29 {
		t.Errorf("Size(commits/0) = %d, %v; want 29", n, err)
	}
	if n := f.Count(storage.OpStat); n != 0 {
		t.Errorf("%d stats for a file already read", n)
	}
	// Not read: one Stat, then known.
	for range 2 {
		if n, err := cp.Size(ctx, "offsets/0"); err != nil || n == 0 {
			t.Errorf("Size(offsets/0) = %d, %v", n, err)
		}
	}
	if n := f.Count(storage.OpStat); n != 1 {
		t.Errorf("%d stats, want 1", n)
	}
	// A location of another store is listed again.
	if _, err := checkpoint.LoadAt(ctx, storage.NewMem(), loc); err != nil {
		t.Fatal(err)
	}
}
