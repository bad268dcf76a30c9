package checkpoint_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// A checkpoint loaded from an overlay made from a loaded checkpoint (Checkpoint.Overlay) lists
// nothing and reads only what the overlay changed or the first load has not read: planners load
// their overlay at every step (repair up to ten times), and each load listed the root and both
// logs again. What it sees is what a plain Load of a plain overlay sees.
func TestOverlayOfCheckpointListsNothing(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	files := map[string]string{
		"metadata":            `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`,
		"offsets/.5.crc":      "crc",
		"offsets/007":         "v1\n{}\n{\"logOffset\":7}", // an alternative spelling of 7
		"offsets/x":           "?",
		"commits/.0.uuid.tmp": "",
		"state/0/0/1.delta":   "d",
		"sources/0/0":         "s",
	}
	for i := range 6 {
		files[fmt.Sprintf("offsets/%d", i)] = fmt.Sprintf("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"logOffset\":%d}", 1700000000000+i, i)
		files[fmt.Sprintf("commits/%d", i)] = "v1\n{\"nextBatchWatermarkMs\":0}"
	}
	for p, d := range files {
		if err := mem.WriteFile(ctx, p, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	f := storage.NewFaulty(mem)
	cp, err := checkpoint.Load(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.ReadOffsets(ctx, 5); err != nil {
		t.Fatal(err)
	}
	change := func(o *checkpoint.Overlay) {
		o.Hide("offsets/5")
		o.Hide("offsets/.5.crc")
		o.Set("commits/6", []byte("v1\n{\"nextBatchWatermarkMs\":0}"))
		o.Set("offsets/sub/deeper", []byte("x")) // implies a directory
		o.Set("offsets/4", []byte("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"logOffset\":44}"))
	}
	f.ResetCounts()
	ov := cp.Overlay(nil)
	change(ov)
	for step := range 3 { // a planner's steps
		got, err := checkpoint.Load(ctx, ov)
		if err != nil {
			t.Fatal(err)
		}
		plain := checkpoint.NewOverlay(mem, nil)
		change(plain)
		want, err := checkpoint.Load(ctx, plain)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range [][2]*checkpoint.Log{{got.Offsets, want.Offsets}, {got.Commits, want.Commits}} {
			if !reflect.DeepEqual(l[0].IDs(), l[1].IDs()) || !reflect.DeepEqual(paths(l[0].Others), paths(l[1].Others)) ||
				!reflect.DeepEqual(paths(l[0].Temps), paths(l[1].Temps)) || !reflect.DeepEqual(paths(l[0].Checksums), paths(l[1].Checksums)) ||
				l[0].FilePath(7) != l[1].FilePath(7) {
				t.Errorf("step %d, %s: ids %v others %v temps %v crcs %v, want %v %v %v %v", step, l[1].Dir,
					l[0].IDs(), paths(l[0].Others), paths(l[0].Temps), paths(l[0].Checksums),
					l[1].IDs(), paths(l[1].Others), paths(l[1].Temps), paths(l[1].Checksums))
			}
		}
		if !reflect.DeepEqual(paths(got.Root), paths(want.Root)) {
			t.Errorf("root %v, want %v", paths(got.Root), paths(want.Root))
		}
		// Changed files read as the overlay has them, the others as the base.
		if seq, err := got.ReadOffsets(ctx, 4); err != nil || fmt.Sprint(seq.Sources) != fmt.Sprint(mustOffsets(t, want, 4)) {
			t.Errorf("offsets/4 = %v, %v", seq, err)
		}
		if _, err := got.ReadOffsets(ctx, 5); err == nil {
			t.Error("offsets/5 is hidden, read anyway")
		}
		for _, id := range []int64{3, 2} {
			if _, err := got.ReadOffsets(ctx, id); err != nil {
				t.Error(err)
			}
		}
		if _, err := got.ReadMetadata(ctx); err != nil {
			t.Error(err)
		}
		if n, err := got.Size(ctx, "offsets/3"); err != nil || n != int64(len(files["offsets/3"])) {
			t.Errorf("size of offsets/3 = %d, %v", n, err)
		}
		for _, d := range []string{"state", "sources"} {
			if _, err := got.Store.Walk(ctx, d); err != nil {
				t.Error(err)
			}
		}
	}
	// offsets/2 and 3 and the metadata once each, for all three loads; state/ and sources/ walked
	// once; nothing listed, nothing stat'ed.
	c := f.Counts()
	if c[storage.OpList] != 0 || c[storage.OpStat] != 0 || c[storage.OpWalk] != 2 || c[storage.OpOpen]+c[storage.OpRead] != 3 {
		t.Errorf("requests of three loads of the overlay: %v, want 0 lists, 0 stats, 2 walks, 3 reads", c)
	}
}

func mustOffsets(t *testing.T, cp *checkpoint.Checkpoint, id int64) any {
	t.Helper()
	seq, err := cp.ReadOffsets(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return seq.Sources
}
