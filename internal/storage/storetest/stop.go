package storetest

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StopBefore shows that run notices a cancelled context in the work it does between two store
// calls (a planning loop over a million batches), not only at its next call: a signal must not
// wait for the loop. It runs run once and finds the first call named first ("read commits/0",
// "walk state": an op and a path); it runs it again, cancels the context as the call before
// that one returns, and fails unless run then returns context.Canceled without another call.
func StopBefore(t *testing.T, st storage.Store, first string, run func(ctx context.Context, st storage.Store) error) {
	t.Helper()
	rec := &stopper{Store: st, after: -1}
	if err := run(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	k := slices.Index(rec.calls, first)
	if k < 1 {
		t.Fatalf("no call %q after another among %d calls", first, len(rec.calls))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := &stopper{Store: st, after: k, cancel: cancel}
	err := run(ctx, stop)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled as %q returned: got %v, want context.Canceled", rec.calls[k-1], err)
	}
	if len(stop.late) > 0 {
		t.Errorf("cancelled as %q returned, it went on to %q: the work between them did not look at the context", rec.calls[k-1], stop.late)
	}
}

// stopper records the calls to a store and cancels after the after-th (after < 0: never).
type stopper struct {
	storage.Store
	after  int
	cancel context.CancelFunc

	mu    sync.Mutex
	calls []string
	late  []string
}

func (s *stopper) call(op storage.Op, p string, f func() error) {
	s.mu.Lock()
	if s.after >= 0 && len(s.calls) >= s.after {
		s.late = append(s.late, string(op)+" "+p)
	}
	s.calls = append(s.calls, string(op)+" "+p)
	n := len(s.calls)
	s.mu.Unlock()
	_ = f()
	if n == s.after {
		s.cancel()
	}
}

func (s *stopper) List(ctx context.Context, dir string) (es []storage.Entry, err error) {
	s.call(storage.OpList, dir, func() error { es, err = s.Store.List(ctx, dir); return err })
	return es, err
}

func (s *stopper) Walk(ctx context.Context, dir string) (es []storage.Entry, err error) {
	s.call(storage.OpWalk, dir, func() error { es, err = s.Store.Walk(ctx, dir); return err })
	return es, err
}

func (s *stopper) Stat(ctx context.Context, p string) (e storage.Entry, err error) {
	s.call(storage.OpStat, p, func() error { e, err = s.Store.Stat(ctx, p); return err })
	return e, err
}

func (s *stopper) ReadFile(ctx context.Context, p string) (data []byte, err error) {
	s.call(storage.OpRead, p, func() error { data, err = s.Store.ReadFile(ctx, p); return err })
	return data, err
}

func (s *stopper) Open(ctx context.Context, p string) (rc io.ReadCloser, err error) {
	s.call(storage.OpOpen, p, func() error { rc, err = s.Store.Open(ctx, p); return err })
	return rc, err
}

func (s *stopper) WriteFile(ctx context.Context, p string, data []byte) (err error) {
	s.call(storage.OpWrite, p, func() error { err = s.Store.WriteFile(ctx, p, data); return err })
	return err
}

func (s *stopper) Create(ctx context.Context, p string, src storage.Source) (err error) {
	s.call(storage.OpWrite, p, func() error { err = s.Store.Create(ctx, p, src); return err })
	return err
}

func (s *stopper) Delete(ctx context.Context, p string) (err error) {
	s.call(storage.OpDelete, p, func() error { err = s.Store.Delete(ctx, p); return err })
	return err
}
