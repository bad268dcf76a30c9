package checkpoint_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// An offsets or commits file larger than logformat.MaxFileBytes is refused after reading at most
// one byte past the limit (the listing carries no sizes): a sparse 1 GB file here, opened as a
// stream and never read whole with ReadFile.
func TestReadTooLargeStopsAtLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, d := range []string{"offsets", "commits"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, d, "0"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 30); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	l, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewFaulty(l).SetHook(func(_ context.Context, op storage.Op, p string) error {
		if op == storage.OpRead {
			t.Errorf("%s %s: the file was read whole", op, p)
			return errors.New("read")
		}
		return nil
	})
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	_, oerr := cp.ReadOffsets(ctx, 0)
	_, cerr := cp.ReadCommit(ctx, 0)
	for i, err := range []error{oerr, cerr} {
		var le *logformat.Error
		if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong || le.File != []string{"offsets/0", "commits/0"}[i] {
			t.Errorf("err = %v, want a too-large error naming the file", err)
		}
	}
}
