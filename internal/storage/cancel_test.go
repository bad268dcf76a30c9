package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// lateCancel is a context whose Err says cancelled from its n-th call on: a signal that
// arrives while a listing is under way, at a point a test can name.
type lateCancel struct {
	context.Context
	n     int32
	calls atomic.Int32
}

func (c *lateCancel) Err() error {
	if c.calls.Add(1) >= c.n {
		return context.Canceled
	}
	return nil
}

// Listing a directory of thousands of files stats each one: a signal during it stops it there,
// not after the last stat (300,000 batch files took seconds after SIGTERM).
func TestLocalListingStopsAtSignal(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "offsets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if err := os.WriteFile(filepath.Join(dir, "offsets", fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The call that starts the listing finds the context live; a later look finds it cancelled.
	if es, err := l.List(&lateCancel{Context: context.Background(), n: 3}, "offsets"); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %d entries, %v; want context.Canceled", len(es), err)
	}
	if es, _, err := l.WalkLinks(&lateCancel{Context: context.Background(), n: 3}, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("WalkLinks: %d entries, %v; want context.Canceled", len(es), err)
	}
}

// A file opened on the local disk stops being read once the context is done (a state read of a
// 1 GiB snapshot went on to its end after SIGTERM), and still offers ReadAt and Stat.
func TestLocalOpenStopsAtSignal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := l.Open(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 4096)
	if _, err := rc.Read(buf); err != nil {
		t.Fatal(err)
	}
	f, ok := rc.(interface {
		io.ReaderAt
		Stat() (fs.FileInfo, error)
	})
	if !ok {
		t.Fatal("no ReadAt and Stat: SST files would be copied to a temporary file")
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("Stat: %v, %v", fi, err)
	}
	cancel()
	if _, err := rc.Read(buf); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after the cancel: %v, want context.Canceled", err)
	}
	if _, err := f.ReadAt(buf, 4096); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadAt after the cancel: %v, want context.Canceled", err)
	}
}
