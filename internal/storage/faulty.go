package storage

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// ErrInjected is the error Faulty injects when a fault is configured without
// one of its own.
var ErrInjected = errors.New("storage: injected fault")

// Faulty wraps a Store and injects faults, for testing how ckpt behaves when
// storage is slow, fails, or lists lazily (as S3 listings could). A zero
// configuration passes everything through unchanged. Faulty is safe for
// concurrent use, and its settings may change while operations run.
//
// Each operation, in order: is counted; if it is a mutation (WriteFile, Create
// or Delete) takes the next mutation number; sleeps the latency configured for
// its Op; calls the hook; applies the configured failure; then calls the
// inner store. Injected errors come back as *PathError wrapping the
// configured error.
type Faulty struct {
	inner Store

	mu         sync.Mutex
	latency    map[Op]time.Duration
	sleep      func(ctx context.Context, d time.Duration) error
	hook       func(ctx context.Context, op Op, path string) error
	failMut    map[int64]mutFault
	failRead   map[string]error
	listLimit  int
	listFilter func(op Op, dir string, entries []Entry) []Entry
	counts     map[Op]int64
	mutations  int64
}

type mutFault struct {
	err   error
	after bool
}

// NewFaulty wraps inner with no faults configured.
func NewFaulty(inner Store) *Faulty {
	f := &Faulty{inner: inner}
	f.Clear()
	f.sleep = sleepCtx
	f.counts = map[Op]int64{}
	return f
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Inner returns the wrapped store.
func (f *Faulty) Inner() Store { return f.inner }

// Clear removes every configured fault, latency, hook and listing change.
// Counters and the sleep function are kept.
func (f *Faulty) Clear() *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = map[Op]time.Duration{}
	f.hook = nil
	f.failMut = map[int64]mutFault{}
	f.failRead = map[string]error{}
	f.listLimit = -1
	f.listFilter = nil
	return f
}

// SetLatency makes every op of kind op wait d before running. Default: 0
// (no wait). The wait honours ctx cancellation.
func (f *Faulty) SetLatency(op Op, d time.Duration) *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency[op] = d
	return f
}

// SetSleep replaces the function that waits out latency, so tests can record
// or skip the waits instead of spending wall time. Default: a timer that
// returns ctx.Err() early when ctx is done. nil restores the default.
func (f *Faulty) SetSleep(sleep func(ctx context.Context, d time.Duration) error) *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sleep == nil {
		sleep = sleepCtx
	}
	f.sleep = sleep
	return f
}

// SetHook installs a function called before every operation (after the
// latency); a non-nil result fails the operation with that error and the
// inner store is not called. Default: none.
func (f *Faulty) SetHook(hook func(ctx context.Context, op Op, path string) error) *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
	return f
}

// FailMutation makes the k-th mutation (1-based, counting WriteFile, Create
// and Delete calls since NewFaulty or ResetCounts, failed ones included) fail
// with err before it reaches the inner store, so nothing changes. A nil err
// means ErrInjected.
func (f *Faulty) FailMutation(k int, err error) *Faulty {
	return f.failMutation(k, err, false)
}

// FailMutationAfter makes the k-th mutation reach the inner store and then
// report err (if the inner call succeeded) - a write whose acknowledgement
// was lost, the case a repair journal must survive. A nil err means
// ErrInjected.
func (f *Faulty) FailMutationAfter(k int, err error) *Faulty {
	return f.failMutation(k, err, true)
}

func (f *Faulty) failMutation(k int, err error, after bool) *Faulty {
	if err == nil {
		err = ErrInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failMut[int64(k)] = mutFault{err: err, after: after}
	return f
}

// FailReads makes ReadFile and Open of path (as given, cleaned) fail with
// err; a nil err means ErrInjected. Stat and listings are unaffected.
func (f *Faulty) FailReads(path string, err error) *Faulty {
	if err == nil {
		err = ErrInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRead[Join(path)] = err
	return f
}

// TruncateList makes List and Walk return at most the first n entries (in
// sorted order) of each result, like a listing that has not caught up with
// the newest files. n < 0 turns it off (the default); 0 returns nothing.
func (f *Faulty) TruncateList(n int) *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listLimit = n
	return f
}

// SetListFilter rewrites every List and Walk result (after TruncateList) -
// e.g. to hide one file. Default: none.
func (f *Faulty) SetListFilter(filter func(op Op, dir string, entries []Entry) []Entry) *Faulty {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listFilter = filter
	return f
}

// Count returns how many operations of kind op were attempted, injected
// failures included.
func (f *Faulty) Count(op Op) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// Counts returns a copy of all per-op counters.
func (f *Faulty) Counts() map[Op]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[Op]int64, len(f.counts))
	for k, v := range f.counts {
		m[k] = v
	}
	return m
}

// Mutations returns how many WriteFile and Delete calls were attempted.
func (f *Faulty) Mutations() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mutations
}

// ResetCounts zeroes the counters, so FailMutation numbers count from here.
func (f *Faulty) ResetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts = map[Op]int64{}
	f.mutations = 0
}

// URI returns the inner store's URI.
func (f *Faulty) URI() string { return f.inner.URI() }

// before runs the common prelude; it returns a fault to apply after the inner
// call (FailMutationAfter) or an error that replaces the call.
func (f *Faulty) before(ctx context.Context, op Op, path string) (after error, err error) {
	f.mu.Lock()
	f.counts[op]++
	var mf mutFault
	var isMut bool
	if op == OpWrite || op == OpDelete {
		f.mutations++
		mf, isMut = f.failMut[f.mutations]
	}
	d, sleep, hook := f.latency[op], f.sleep, f.hook
	var readErr error
	if op == OpRead || op == OpOpen {
		readErr = f.failRead[Join(path)]
	}
	f.mu.Unlock()

	if d > 0 {
		if err := sleep(ctx, d); err != nil {
			return nil, pathErr(op, f.URI(), path, err)
		}
	}
	if hook != nil {
		if err := hook(ctx, op, path); err != nil {
			return nil, pathErr(op, f.URI(), path, err)
		}
	}
	if readErr != nil {
		return nil, pathErr(op, f.URI(), path, readErr)
	}
	if isMut {
		if mf.after {
			return pathErr(op, f.URI(), path, mf.err), nil
		}
		return nil, pathErr(op, f.URI(), path, mf.err)
	}
	return nil, nil
}

func (f *Faulty) listing(op Op, dir string, es []Entry) []Entry {
	f.mu.Lock()
	limit, filter := f.listLimit, f.listFilter
	f.mu.Unlock()
	if limit >= 0 && len(es) > limit {
		es = es[:limit]
	}
	if filter != nil {
		es = filter(op, dir, es)
	}
	return es
}

// List implements Store.
func (f *Faulty) List(ctx context.Context, dir string) ([]Entry, error) {
	if _, err := f.before(ctx, OpList, dir); err != nil {
		return nil, err
	}
	es, err := f.inner.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	return f.listing(OpList, dir, es), nil
}

// Walk implements Store.
func (f *Faulty) Walk(ctx context.Context, dir string) ([]Entry, error) {
	if _, err := f.before(ctx, OpWalk, dir); err != nil {
		return nil, err
	}
	es, err := f.inner.Walk(ctx, dir)
	if err != nil {
		return nil, err
	}
	return f.listing(OpWalk, dir, es), nil
}

// Stat implements Store.
func (f *Faulty) Stat(ctx context.Context, path string) (Entry, error) {
	if _, err := f.before(ctx, OpStat, path); err != nil {
		return Entry{}, err
	}
	return f.inner.Stat(ctx, path)
}

// ReadFile implements Store.
func (f *Faulty) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if _, err := f.before(ctx, OpRead, path); err != nil {
		return nil, err
	}
	return f.inner.ReadFile(ctx, path)
}

// Open implements Store.
func (f *Faulty) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	if _, err := f.before(ctx, OpOpen, path); err != nil {
		return nil, err
	}
	return f.inner.Open(ctx, path)
}

// WriteFile implements Store.
func (f *Faulty) WriteFile(ctx context.Context, path string, data []byte) error {
	after, err := f.before(ctx, OpWrite, path)
	if err != nil {
		return err
	}
	if err := f.inner.WriteFile(ctx, path, data); err != nil {
		return err
	}
	return after
}

// Create implements Store, as a write (OpWrite) for the counters and faults.
func (f *Faulty) Create(ctx context.Context, path string, src Source) error {
	after, err := f.before(ctx, OpWrite, path)
	if err != nil {
		return err
	}
	if err := f.inner.Create(ctx, path, src); err != nil {
		return err
	}
	return after
}

// Delete implements Store.
func (f *Faulty) Delete(ctx context.Context, path string) error {
	after, err := f.before(ctx, OpDelete, path)
	if err != nil {
		return err
	}
	if err := f.inner.Delete(ctx, path); err != nil {
		return err
	}
	return after
}
