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

// metadata and any other file read whole (sources/0/0) are capped the same way: a 1 GiB
// metadata cost over 1 GiB of memory in doctor, replay and inspect before.
func TestReadMetadataAndFileCapped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, p := range []string{"metadata", "sources/0/0"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, p))
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
	_, merr := cp.ReadMetadata(ctx)
	_, ferr := cp.ReadFile(ctx, "sources/0/0")
	for i, err := range []error{merr, ferr} {
		var le *logformat.Error
		if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong || le.File != []string{"metadata", "sources/0/0"}[i] {
			t.Errorf("err = %v, want a too-large error naming the file", err)
		}
	}
}

// The limit has one home, logformat.MaxFileBytes (CKPT_MAX_FILE_BYTES sets it): lowered, a
// small offsets file is refused; at its size, it is read.
func TestMaxFileBytesIsTheLimit(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	data := []byte("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"logOffset\":0}")
	if err := s.WriteFile(ctx, "offsets/0", data); err != nil {
		t.Fatal(err)
	}
	defer func(old int64) { logformat.MaxFileBytes = old }(logformat.MaxFileBytes)
	for _, limit := range []int64{int64(len(data)) - 1, int64(len(data))} {
		logformat.MaxFileBytes = limit
		cp, err := checkpoint.Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cp.ReadOffsets(ctx, 0)
		if tooLarge := err != nil; tooLarge != (limit < int64(len(data))) {
			t.Errorf("limit %d: err = %v", limit, err)
		}
	}
}
