package engine

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// blockSink blocks in AddBatch: until release is closed, or (release nil) until its context ends.
type blockSink struct {
	entered chan struct{}
	release chan struct{}
}

func (s *blockSink) Description() string { return "block" }
func (s *blockSink) Close() error        { return nil }
func (s *blockSink) AddBatch(ctx context.Context, b *Batch) error {
	close(s.entered)
	if s.release != nil {
		<-s.release
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func stopRun(t *testing.T, sink *blockSink, timeout time.Duration) (Stats, storage.Store, error) {
	store := storage.NewMem()
	r := resolve(t, &query.Query{Sink: "noop", Checkpoint: "unused"})
	ctx, cancel := context.WithCancel(context.Background())
	e, err := New(ctx, Options{Query: r, Store: store, Source: &tickSource{}, Sink: sink, StopTimeout: timeout, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-sink.entered
		cancel() // SIGINT while batch 0 is in the sink
		if sink.release != nil {
			time.Sleep(50 * time.Millisecond)
			close(sink.release)
		}
	}()
	st, err := e.Run(ctx)
	return st, store, err
}

// A stop finishes the running batch (commit included) when it ends within --stop-timeout.
func TestGracefulStopFinishesBatch(t *testing.T) {
	st, store, err := stopRun(t, &blockSink{entered: make(chan struct{}), release: make(chan struct{})}, 10*time.Second)
	if err != nil || st.Stopped != "signal" || st.Batches != 1 {
		t.Fatalf("stats %+v, err %v", st, err)
	}
	cp, _ := checkpoint.Load(context.Background(), store)
	if len(cp.Commits.IDs()) != 1 {
		t.Errorf("commits %v", cp.Commits.IDs())
	}
}

// A batch that does not end within --stop-timeout is abandoned after offsets/N: no commit, and
// the restart re-runs it.
func TestStopTimeoutAbandonsBatch(t *testing.T) {
	st, store, err := stopRun(t, &blockSink{entered: make(chan struct{})}, 100*time.Millisecond)
	if err != nil || st.Stopped != "abandoned" || st.AbandonedRun == nil || *st.AbandonedRun != 0 {
		t.Fatalf("stats %+v, err %v", st, err)
	}
	cp, _ := checkpoint.Load(context.Background(), store)
	if len(cp.Offsets.IDs()) != 1 || len(cp.Commits.IDs()) != 0 {
		t.Errorf("offsets %v commits %v", cp.Offsets.IDs(), cp.Commits.IDs())
	}
}
