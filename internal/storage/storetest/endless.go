package storetest

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Endless wraps a store so that the file at Path never ends (a corrupt log file of one huge
// line, /dev/zero behind a name): Open streams zeros and counts them (Read), and ReadFile of it
// fails T, since reading it whole would cost its whole size. Tests of bounded reads use it.
type Endless struct {
	storage.Store
	Path string
	T    *testing.T
	read atomic.Int64
}

// Read is how many bytes of Path were read.
func (e *Endless) Read() int64 { return e.read.Load() }

// ReadFile fails T for Path.
func (e *Endless) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if p == e.Path {
		e.T.Errorf("%s read whole: its cost is its size", p)
		return nil, errors.New("read whole")
	}
	return e.Store.ReadFile(ctx, p)
}

// Open streams zeros without end for Path.
func (e *Endless) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	if p == e.Path {
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
