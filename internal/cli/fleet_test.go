package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// doctor -r nope said "no checkpoint below nope" as if nope were a folder without checkpoints.
func TestNoCheckpointBelowMissingPath(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "nope"), "the path does not exist"},
		{dir, "a checkpoint is a folder with"},
	} {
		s, err := storage.Open(ctx, c.path, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := NoCheckpointBelow(ctx, s, c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}
