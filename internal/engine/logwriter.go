package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// LogWriter persists the offset and commit logs in the order the engine issues writes. It is the
// only component that writes offsets/ and commits/ (and purges them), so asynchronous progress
// tracking can later be a LogWriter that returns before the write is durable: the futures keep
// the order (Spark's single "async-log-write" thread with a queue of 2).
type LogWriter interface {
	// AddOffsets writes offsets/id. A file that already exists is Spark's
	// CONCURRENT_STREAM_LOG_UPDATE (ConcurrentUpdateError).
	AddOffsets(ctx context.Context, id int64, o *logformat.OffsetSeq) Future
	// AddCommit writes commits/id, with the same rule.
	AddCommit(ctx context.Context, id int64, c *logformat.Commit) Future
	// Purge deletes offsets and commits below threshold, as HDFSMetadataLog.purge.
	Purge(ctx context.Context, threshold int64) Future
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
	// Spark 3.5 (QueryExecutionErrors.concurrentStreamLogUpdate; 3.5 prints no SQLSTATE).
	return fmt.Sprintf("org.apache.spark.SparkException: [CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. "+
		"Multiple streaming jobs detected for %d.\nPlease make sure only one streaming job runs on a specific checkpoint location at a time.", e.Batch)
}

type logOp struct {
	ctx  context.Context
	path string
	data []byte
	id   int64
	// purge
	purge     bool
	threshold int64
	done      chan error
}

// syncLogWriter is the synchronous engine's writer: one goroutine applies operations in FIFO
// order; the engine waits on every future before going on.
type syncLogWriter struct {
	store storage.Store
	ops   chan logOp
	quit  chan struct{}
	// lastPurged is HDFSMetadataLog.lastPurgedBatchId, per run, shared by both logs (they are
	// always purged together).
	lastPurged int64
}

// NewSyncLogWriter returns the synchronous LogWriter over store.
func NewSyncLogWriter(store storage.Store) LogWriter {
	w := &syncLogWriter{store: store, ops: make(chan logOp, 2), quit: make(chan struct{}), lastPurged: -1}
	go w.loop()
	return w
}

func (w *syncLogWriter) loop() {
	defer close(w.quit)
	for op := range w.ops {
		if op.purge {
			op.done <- w.purge(op.ctx, op.threshold)
			continue
		}
		err := w.store.WriteFile(op.ctx, op.path, op.data)
		if errors.Is(err, fs.ErrExist) {
			err = &ConcurrentUpdateError{Batch: op.id, Path: op.path}
		}
		op.done <- err
	}
}

func (w *syncLogWriter) submit(op logOp) Future {
	op.done = make(chan error, 1)
	w.ops <- op
	return op.done
}

func (w *syncLogWriter) AddOffsets(ctx context.Context, id int64, o *logformat.OffsetSeq) Future {
	return w.submit(logOp{ctx: ctx, path: checkpoint.DirOffsets + "/" + strconv.FormatInt(id, 10), data: o.Marshal(), id: id})
}

func (w *syncLogWriter) AddCommit(ctx context.Context, id int64, c *logformat.Commit) Future {
	return w.submit(logOp{ctx: ctx, path: checkpoint.DirCommits + "/" + strconv.FormatInt(id, 10), data: c.Marshal(), id: id})
}

func (w *syncLogWriter) Purge(ctx context.Context, threshold int64) Future {
	return w.submit(logOp{ctx: ctx, purge: true, threshold: threshold})
}

func (w *syncLogWriter) Close() error {
	close(w.ops)
	<-w.quit
	return nil
}

// purge is StreamExecution.purge: offsetLog.purge(t) then commitLog.purge(t), each
// HDFSMetadataLog.purge: at most 3 candidates are deleted by name, more by listing.
func (w *syncLogWriter) purge(ctx context.Context, threshold int64) error {
	for _, dir := range []string{checkpoint.DirOffsets, checkpoint.DirCommits} {
		if threshold-(w.lastPurged+1) <= 3 {
			for id := w.lastPurged + 1; id < threshold; id++ {
				if err := w.store.Delete(ctx, dir+"/"+strconv.FormatInt(id, 10)); err != nil {
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
		for _, id := range log.IDs {
			if id < threshold {
				if err := w.store.Delete(ctx, log.Path(id)); err != nil {
					return err
				}
			}
		}
	}
	w.lastPurged = threshold - 1
	return nil
}
