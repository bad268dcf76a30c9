package transfer

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// endless is a store whose file big never ends (a corrupt offsets file of one huge line, or
// /dev/zero behind a path): reading it whole is refused by the test, and Open streams zeros.
type endless struct {
	storage.Store
	big  string
	read atomic.Int64
	t    *testing.T
}

func (e *endless) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if p == e.big {
		e.t.Errorf("%s read whole: its cost is its size", p)
		return nil, errors.New("read whole")
	}
	return e.Store.ReadFile(ctx, p)
}

func (e *endless) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	if p == e.big {
		return io.NopCloser(zeros{&e.read}), nil
	}
	return e.Store.Open(ctx, p)
}

type zeros struct{ n *atomic.Int64 }

func (z zeros) Read(b []byte) (int, error) {
	clear(b)
	z.n.Add(int64(len(b)))
	return len(b), nil
}

// A log file Spark reads whole costs cp at most logformat.MaxFileBytes (CKPT_MAX_FILE_BYTES):
// over it, cp refuses the copy naming the file and the limit. Before, a 1 GiB line cost over
// 1 GiB of memory.
func TestCopyCapsLogFiles(t *testing.T) {
	defer func(n int64) { logformat.MaxFileBytes = n }(logformat.MaxFileBytes)
	logformat.MaxFileBytes = 1 << 20
	for _, tc := range []struct{ kind, big string }{
		{KindCheckpoint, "offsets/1"},
		{KindCheckpoint, "commits/0"},
		{KindCheckpoint, "metadata"},
		{KindCheckpoint, "sources/0/1"},
		{KindSink, "_spark_metadata/1"},
	} {
		ck, out := storage.NewMem(), storage.NewMem()
		fixture(t, ck, out)
		src := ck
		if tc.kind == KindSink {
			src = out
		}
		e := &endless{Store: src, big: tc.big, t: t}
		_, err := Copy(ctx, []Pair{{tc.kind, e, storage.NewMem()}}, Options{})
		var le *logformat.Error
		if !errors.As(err, &le) || le.Kind != logformat.KindLineTooLong || le.File != tc.big {
			t.Errorf("%s: got %v, want the file refused as too large", tc.big, err)
		}
		if n := e.read.Load(); n > logformat.MaxFileBytes+64<<10 {
			t.Errorf("%s: read %d bytes of it, limit %d", tc.big, n, logformat.MaxFileBytes)
		}
	}
}

// A data file is not a log: any size is copied (whole, one file per worker).
func TestCappedOnlyLogs(t *testing.T) {
	for p, want := range map[string]bool{
		"metadata": true, "offsets/7": true, "commits/.7.crc": true, "sources/0/3": true,
		"sources/0/9.compact": false, "state/0/0/1.delta": false, "part-0": false,
	} {
		if got := capped(KindCheckpoint, p); got != want {
			t.Errorf("capped(checkpoint, %s) = %v, want %v", p, got, want)
		}
	}
	for p, want := range map[string]bool{"_spark_metadata/3": true, "_spark_metadata/9.compact": false, "part-0": false, "offsets/1": false} {
		if got := capped(KindSink, p); got != want {
			t.Errorf("capped(sink, %s) = %v, want %v", p, got, want)
		}
	}
}
