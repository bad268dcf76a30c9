package engine

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// LogWriter persists the offset and commit logs in the order the engine issues writes. It is the
// only component that writes offsets/ and commits/ (and purges them). The sync engine waits on
// every future; asynchronous progress tracking (async.go) issues writes to the same ordered
// goroutine without waiting (Spark's single "async-log-write" thread with a queue of 2).
type LogWriter interface {
	// AddOffsets writes offsets/id. A file that already exists is Spark's
	// CONCURRENT_STREAM_LOG_UPDATE (ConcurrentUpdateError). Its name may not
	// survive a power loss until Sync, or the commit, is done.
	AddOffsets(ctx context.Context, id int64, o *logformat.OffsetSeq) Future
	// AddCommit writes commits/id, with the same rule.
	AddCommit(ctx context.Context, id int64, c *logformat.Commit) Future
	// Purge deletes offsets and commits below threshold, as HDFSMetadataLog.purge, beside
	// the queued writes (not in their order).
	Purge(ctx context.Context, threshold int64) Future
	// Sync makes every write before it survive a power loss.
	Sync(ctx context.Context) Future
	// Close waits for queued writes and stops the writer.
	Close() error
}

// Future is the result of a queued log write.
type Future <-chan error

// Wait blocks until the write finished.
func (f Future) Wait() error { return <-f }

// ConcurrentUpdateError is Spark's CONCURRENT_STREAM_LOG_UPDATE: the log file for Batch already
// exists, so another query wrote it.
type ConcurrentUpdateError struct {
	Batch int64
	Path  string
}

func (e *ConcurrentUpdateError) Error() string {
	return recovery.ConcurrentLogUpdate(SparkVersion, e.Batch)
}

type logOp struct {
	ctx  context.Context
	path string
	data []byte
	id   int64
	// purge is the async engine's purge (purgeAsync).
	purge bool
	done  chan error
	// after, when set, runs on the writer goroutine with the result, before done is answered
	// (the asynchronous engine's thenApply / exceptionally).
	after func(error)
	// barrier does nothing: its future answers once every operation queued before it is applied.
	barrier bool
	// sync makes the deferred writes before it durable (storage.SyncDeferred).
	sync bool
	// deferred writes without making the new name durable at once (storage.WriteFileDeferred).
	// The sync engine's offsets and commits: the store makes offsets/N durable before
	// commits/N's name and commits/N before offsets/N+1's, each fsync alongside the next file's
	// own, and a sink with durable output asks for offsets/N first (Batch.OffsetsDurable).
	deferred bool
}

// syncLogWriter is the synchronous engine's writer: one goroutine applies operations in FIFO
// order; the engine waits on every future before going on. The queue holds 2 operations besides
// the one being applied, as Spark's "async-log-write" executor, so a producer that does not wait
// (asynchronous progress tracking) blocks when the store cannot keep up.
type syncLogWriter struct {
	store storage.Store
	ops   chan logOp
	quit  chan struct{}
	// lastPurged is HDFSMetadataLog.lastPurgedBatchId, per run, shared by both logs (they are
	// always purged together).
	lastPurged int64
	// async is the asynchronous progress tracking state (nil for the sync engine).
	async *asyncDurable
	// mu is held while an operation is applied; queued counts those submitted and not yet
	// applied (see now).
	mu     sync.Mutex
	queued atomic.Int64
	// The purges run beside the queue (Purge), on one goroutine at a time (purging counts
	// it): the thresholds asked for while one ran are coalesced into the highest (purgeWant,
	// with the latest purgeCtx), and their futures (purgeWaiters) answered by the purge that
	// covers them. One goroutine a purge, each waiting for the one before, piled up without
	// bound where batches are faster than unlinks (tmpfs), each one listing the directory.
	purging      sync.WaitGroup
	purgeMu      sync.Mutex
	purgeRunning bool
	purgeWant    int64
	purgeCtx     context.Context
	purgeWaiters []chan error
}

// asyncDurable is AsyncOffsetSeqLog/AsyncCommitLog's writtenToDurableStorage: the ids of the
// files on disk, oldest first, seeded from the listing at start and extended as writes
// complete. Only the writer goroutine touches it.
type asyncDurable struct {
	minRetain        int
	offsets, commits []int64
}

// QueueCapacity is the number of log operations that wait behind the one being written
// (Spark's async-log-write executor queue).
const QueueCapacity = 2

// NewSyncLogWriter returns the synchronous LogWriter over store.
func NewSyncLogWriter(store storage.Store) LogWriter {
	w := &syncLogWriter{store: store, ops: make(chan logOp, QueueCapacity), quit: make(chan struct{}), lastPurged: -1}
	go w.loop()
	return w
}

// newAsyncLogWriter is the writer of asynchronous progress tracking: the same ordered goroutine
// and queue; it records which files reached the store (offsetIDs and commitIDs seed it with the
// listing at start) and purges by that record (Spark's AsyncProgressTrackingMicroBatchExecution
// .purge: keep the newest minRetain persisted files of each log).
func newAsyncLogWriter(store storage.Store, minRetain int, offsetIDs, commitIDs []int64) *syncLogWriter {
	w := &syncLogWriter{store: store, ops: make(chan logOp, QueueCapacity), quit: make(chan struct{}), lastPurged: -1,
		async: &asyncDurable{minRetain: minRetain, offsets: slices.Clone(offsetIDs), commits: slices.Clone(commitIDs)}}
	go w.loop()
	return w
}

func (w *syncLogWriter) loop() {
	defer close(w.quit)
	for op := range w.ops {
		w.mu.Lock()
		w.apply(op)
		w.queued.Add(-1)
		w.mu.Unlock()
	}
}

// apply applies one operation and answers its future; w.mu is held.
func (w *syncLogWriter) apply(op logOp) {
	var err error
	switch {
	case op.barrier:
	case op.sync:
		err = storage.SyncDeferred(op.ctx, w.store)
	case op.purge: // the async engine's; the sync engine's runs beside the queue (Purge)
		err = w.purgeAsync(op.ctx)
	case op.deferred:
		err = storage.WriteFileDeferred(op.ctx, w.store, op.path, op.data)
		if errors.Is(err, fs.ErrExist) {
			err = &ConcurrentUpdateError{Batch: op.id, Path: op.path}
		}
	default:
		err = w.store.WriteFile(op.ctx, op.path, op.data)
		if errors.Is(err, fs.ErrExist) {
			err = &ConcurrentUpdateError{Batch: op.id, Path: op.path}
		}
		if err == nil && w.async != nil {
			if strings.HasPrefix(op.path, checkpoint.DirOffsets+"/") {
				w.async.offsets = append(w.async.offsets, op.id)
			} else {
				w.async.commits = append(w.async.commits, op.id)
			}
		}
	}
	if op.after != nil {
		op.after(err)
	}
	op.done <- err
}

// purgeAsync keeps the newest minRetain persisted files of each log and deletes every id below
// the oldest kept (the threshold Spark's purge gets is ignored). Nothing is deleted while a log
// has no persisted file.
func (w *syncLogWriter) purgeAsync(ctx context.Context) error {
	a := w.async
	for _, l := range []struct {
		dir string
		ids *[]int64
	}{{checkpoint.DirOffsets, &a.offsets}, {checkpoint.DirCommits, &a.commits}} {
		if n := len(*l.ids) - a.minRetain; n > 0 {
			*l.ids = (*l.ids)[n:]
		}
		if len(*l.ids) == 0 {
			continue
		}
		threshold := (*l.ids)[0]
		entries, err := w.store.List(ctx, l.dir)
		if err != nil {
			return err
		}
		log := checkpoint.NewLog(l.dir, entries)
		for _, id := range log.IDs() {
			if id < threshold {
				if err := w.store.Delete(ctx, log.Path(id)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *syncLogWriter) submit(op logOp) Future {
	op.done = make(chan error, 1)
	w.queued.Add(1) // not under mu: a producer waits only for a full queue, never for a write
	w.ops <- op
	return op.done
}

// now applies op on the caller's goroutine when nothing is queued before it, else queues it:
// the synchronous engine waits for its offsets and commits at once, and handing each to the
// writer goroutine and back cost two thread wake-ups, as much as an fsync on a fast disk. The
// order stays FIFO: an operation queued meanwhile waits for w.mu.
func (w *syncLogWriter) now(op logOp) Future {
	w.mu.Lock()
	if w.queued.Load() > 0 {
		w.mu.Unlock()
		return w.submit(op)
	}
	op.done = make(chan error, 1)
	w.apply(op)
	w.mu.Unlock()
	return op.done
}

func (w *syncLogWriter) AddOffsets(ctx context.Context, id int64, o *logformat.OffsetSeq) Future {
	return w.now(logOp{ctx: ctx, path: checkpoint.DirOffsets + "/" + strconv.FormatInt(id, 10), data: o.Marshal(), id: id, deferred: true})
}

func (w *syncLogWriter) Sync(ctx context.Context) Future {
	return w.now(logOp{ctx: ctx, sync: true})
}

func (w *syncLogWriter) AddCommit(ctx context.Context, id int64, c *logformat.Commit) Future {
	return w.now(logOp{ctx: ctx, path: checkpoint.DirCommits + "/" + strconv.FormatInt(id, 10), data: c.Marshal(), id: id, deferred: true})
}

// addAsync queues a write without waiting; after runs on the writer goroutine with its result.
func (w *syncLogWriter) addAsync(ctx context.Context, dir string, id int64, data []byte, after func(error)) {
	w.submit(logOp{ctx: ctx, path: dir + "/" + strconv.FormatInt(id, 10), data: data, id: id, after: after})
}

// purgeAsyncOp queues an asynchronous purge; after gets its result.
func (w *syncLogWriter) purgeAsyncOp(ctx context.Context, after func(error)) {
	w.submit(logOp{ctx: ctx, purge: true, after: after})
}

func (w *syncLogWriter) Purge(ctx context.Context, threshold int64) Future {
	// Not in the queue: the deletes of old files need no order with the new writes (they are
	// deferred, and may come back after a power loss anyway), and an offsets write queued behind
	// two unlinks would wait for them.
	done := make(chan error, 1)
	w.purgeMu.Lock()
	defer w.purgeMu.Unlock()
	w.purgeWant = max(w.purgeWant, threshold)
	w.purgeCtx = ctx
	w.purgeWaiters = append(w.purgeWaiters, done)
	if !w.purgeRunning {
		w.purgeRunning = true
		w.purging.Add(1)
		go w.purgeLoop()
	}
	return done
}

// purgeLoop runs the purges asked for until none waits.
func (w *syncLogWriter) purgeLoop() {
	defer w.purging.Done()
	for {
		w.purgeMu.Lock()
		if len(w.purgeWaiters) == 0 {
			w.purgeRunning = false
			w.purgeMu.Unlock()
			return
		}
		threshold, ctx, waiters := w.purgeWant, w.purgeCtx, w.purgeWaiters
		w.purgeWaiters = nil
		w.purgeMu.Unlock()
		err := w.purge(ctx, threshold)
		for _, c := range waiters {
			c <- err
		}
	}
}

// flush waits until every operation queued before it has been applied.
func (w *syncLogWriter) flush() {
	<-w.submit(logOp{barrier: true})
}

// Close also makes the deferred changes (the last commit, the last purge) durable, so that a
// query that stopped leaves nothing to a power loss.
func (w *syncLogWriter) Close() error {
	close(w.ops)
	<-w.quit
	w.purging.Wait()
	return storage.SyncDeferred(context.Background(), w.store)
}

// purge is StreamExecution.purge: offsetLog.purge(t) then commitLog.purge(t), each
// HDFSMetadataLog.purge: at most 3 candidates are deleted by name, more by listing. After the
// run's first purge, candidates are always deleted by name: that purge left nothing below its
// threshold, so every file below a later one is a candidate (Spark, purging every batch, never
// has more than one; coalesced purges may). The deletes are deferred (storage.DeleteDeferred):
// a file that reappears after a power loss is one more retained batch, deleted by the next
// run's first purge (which lists).
func (w *syncLogWriter) purge(ctx context.Context, threshold int64) error {
	for _, dir := range []string{checkpoint.DirOffsets, checkpoint.DirCommits} {
		if threshold-(w.lastPurged+1) <= 3 || w.lastPurged >= 0 {
			for id := w.lastPurged + 1; id < threshold; id++ {
				if err := storage.DeleteDeferred(ctx, w.store, dir+"/"+strconv.FormatInt(id, 10)); err != nil {
					return err
				}
			}
			continue
		}
		entries, err := w.store.List(ctx, dir)
		if err != nil {
			return err
		}
		log := checkpoint.NewLog(dir, entries)
		for _, id := range log.IDs() {
			if id < threshold {
				if err := storage.DeleteDeferred(ctx, w.store, log.Path(id)); err != nil {
					return err
				}
			}
		}
	}
	w.lastPurged = max(w.lastPurged, threshold-1)
	return nil
}
