package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/demo"
)

// The README's first command run twice on the same checkpoint: the second run met a new broker
// (the first removed its data at the end) and failed with "Partition demo-0's offset was changed
// from 11 to 3". The demo's own checkpoint (its marker) is started afresh and says so; another
// checkpoint with batches is refused with what to do.
func TestRunDemoTwiceOnOneCheckpoint(t *testing.T) {
	_, _, tmp := newOptions(t)
	ck := filepath.Join(tmp, "ckpt-demo-readme")
	for i := range 2 {
		o, errOut, _ := newOptions(t)
		o.Demo, o.Sink, o.Trigger, o.MaxBatches, o.DemoRate, o.Checkpoint = true, "noop", "100ms", 2, 1000, ck
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := run(ctx, o)
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, errOut)
		}
		if afresh := strings.Contains(errOut.String(), "starting it afresh"); afresh != (i == 1) {
			t.Errorf("run %d: afresh=%v:\n%s", i+1, afresh, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(ck, demo.MarkerPath)); err != nil {
		t.Errorf("no demo marker: %v", err)
	}

	// A checkpoint the demo did not write is not removed: the run is refused with what to do.
	if err := os.Remove(filepath.Join(ck, demo.MarkerPath)); err != nil {
		t.Fatal(err)
	}
	o, errOut, _ := newOptions(t)
	o.Demo, o.Sink, o.Trigger, o.MaxBatches, o.DemoRate, o.Checkpoint = true, "noop", "100ms", 1, 1000, ck
	err := run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "Give a new --checkpoint") {
		t.Fatalf("foreign checkpoint: %v\n%s", err, errOut)
	}
	if _, err := os.Stat(filepath.Join(ck, "offsets")); err != nil {
		t.Errorf("the foreign checkpoint was touched: %v", err)
	}
}
