package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// durabilityLog is a store that records its changes and its SyncDeferred calls, in one list
// shared by the checkpoint and the sink's output, as a DeferredSyncer would see them.
type durabilityLog struct {
	storage.Store
	name   string
	mu     *sync.Mutex
	events *[]string
}

func (d *durabilityLog) add(e string) {
	d.mu.Lock()
	*d.events = append(*d.events, d.name+e)
	d.mu.Unlock()
}

func (d *durabilityLog) WriteFile(ctx context.Context, p string, data []byte) error {
	d.add("write " + p)
	return d.Store.WriteFile(ctx, p, data)
}

func (d *durabilityLog) WriteFileDeferred(ctx context.Context, p string, data []byte) error {
	d.add("deferred " + p)
	return d.Store.WriteFile(ctx, p, data)
}

func (d *durabilityLog) DeleteDeferred(ctx context.Context, p string) error {
	d.add("deferred-delete " + p)
	return d.Store.Delete(ctx, p)
}

func (d *durabilityLog) SyncDeferred(context.Context) error {
	d.add("sync")
	return nil
}

// runBatches runs a query of n batches from src into sink with its checkpoint in store.
func runBatches(t *testing.T, store storage.Store, src Source, sink Sink, n int) {
	t.Helper()
	r := resolve(t, &query.Query{Sink: "noop", Checkpoint: "unused"})
	e, err := New(context.Background(), Options{Query: r, Store: store, Source: src, Sink: sink, MaxBatches: n, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestOffsetsDurableBeforeSinkOutput: offsets/N is written deferred and made durable
// (SyncDeferred) before any output of batch N can outlive a power loss: before the file
// sink's log entry, but after its data files (the fsync runs alongside them); before a sink
// that does not say when (LateOffsetsSink) runs at all; and, for the noop sink, only by the
// store's own ordering when commits/N is written (no SyncDeferred in the batch).
func TestOffsetsDurableBeforeSinkOutput(t *testing.T) {
	for _, sinkName := range []string{"file", "collect", "noop"} {
		t.Run(sinkName, func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			ckpt := &durabilityLog{Store: storage.NewMem(), name: "", mu: &mu, events: &events}
			out := &durabilityLog{Store: storage.NewMem(), name: "out:", mu: &mu, events: &events}
			var sink Sink
			switch sinkName {
			case "file":
				sink = NewFileSink(out, "json", nil)
			case "collect":
				sink = &collectSink{}
			default:
				sink = NoopSink{}
			}
			runBatches(t, ckpt, &tickSource{}, sink, 4)
			mu.Lock()
			defer mu.Unlock()
			at := func(from int, ev string) int {
				i := slices.Index(events[from:], ev)
				if i < 0 {
					t.Fatalf("no %q after event %d in %q", ev, from, events)
				}
				return from + i
			}
			for n := range 4 {
				id := strconv.Itoa(n)
				o := at(0, "deferred offsets/"+id)
				c := at(o, "deferred commits/"+id)
				between := events[o:c]
				syncs := slices.Index(between, "sync")
				switch sinkName {
				case "noop":
					if syncs >= 0 {
						t.Errorf("batch %d: the engine synced for the noop sink: %q", n, between)
					}
				case "collect":
					if syncs < 0 {
						t.Errorf("batch %d: no sync before a sink that does not say when it needs it: %q", n, between)
					}
				case "file":
					logEntry := slices.Index(between, "out:write _spark_metadata/"+id)
					data := slices.IndexFunc(between, func(s string) bool { return strings.HasPrefix(s, "out:write part-") })
					if syncs < 0 || logEntry < syncs || data < 0 || data > syncs {
						t.Errorf("batch %d: want data files, then the sync, then the log entry: %q", n, between)
					}
				}
			}
		})
	}
}

// streamLog is a streaming sink that durabilityLog's list sees: each write is an event.
type streamLog struct{ log *durabilityLog }

func (s streamLog) Description() string                    { return "stream" }
func (s streamLog) Close() error                           { return nil }
func (s streamLog) AddBatch(context.Context, *Batch) error { return errors.New("streamLog: AddBatch") }
func (s streamLog) Streams() bool                          { return true }
func (s streamLog) WritePart(_ context.Context, id int64, _ []transform.Column, p *Part) error {
	s.log.add(fmt.Sprintf("write %d (%d rows)", id, p.Len()))
	return nil
}
func (s streamLog) FinishBatch(_ context.Context, id int64) error {
	s.log.add(fmt.Sprintf("finish %d", id))
	return nil
}

// readLog is tickSource, whose Read is an event of the list.
type readLog struct {
	tickSource
	log *durabilityLog
}

func (r *readLog) Read(ctx context.Context, start, end logformat.KafkaOffsets, n int, fn func(logformat.TopicPartition, []transform.Row) error) error {
	r.log.add("read")
	return r.tickSource.Read(ctx, start, end, n, fn)
}

// stallSync is durabilityLog whose SyncDeferred waits until the source reads (or 10 seconds:
// a loaded machine may take a while to start the read's goroutine).
type stallSync struct {
	*durabilityLog
	read chan struct{}
}

func (s *stallSync) SyncDeferred(ctx context.Context) error {
	select {
	case <-s.read:
	case <-time.After(10 * time.Second):
		s.add("sync waited 10 s for the read")
	}
	return s.durabilityLog.SyncDeferred(ctx)
}

// TestStreamingReadOverlapsOffsetsSync: with a streaming sink that needs offsets/N durable before
// its output (the at-least-once Kafka sink), the source reads while offsets/N is fsync'd, and the
// sink's first write of the batch waits for the fsync.
func TestStreamingReadOverlapsOffsetsSync(t *testing.T) {
	var mu sync.Mutex
	var events []string
	log := &durabilityLog{Store: storage.NewMem(), mu: &mu, events: &events}
	store := &stallSync{durabilityLog: log, read: make(chan struct{})}
	var once sync.Once
	src := &readSignal{readLog: &readLog{log: log}, signal: func() { once.Do(func() { close(store.read) }) }}
	runBatches(t, store, src, streamLog{log}, 3)
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(events, "sync waited 10 s for the read") {
		t.Fatalf("offsets/0 was fsync'd before the source read: %q", events)
	}
	for n := range 3 {
		o := slices.Index(events, fmt.Sprintf("deferred offsets/%d", n))
		c := slices.Index(events, fmt.Sprintf("deferred commits/%d", n))
		if o < 0 || c < o {
			t.Fatalf("batch %d: no offsets, then commits: %q", n, events)
		}
		between := events[o:c]
		s, w := slices.Index(between, "sync"), slices.Index(between, fmt.Sprintf("write %d (1 rows)", n))
		if s < 0 || w < s {
			t.Errorf("batch %d: the sink wrote before offsets/%d was durable: %q", n, n, between)
		}
	}
}

// readSignal calls signal when Read starts.
type readSignal struct {
	*readLog
	signal func()
}

func (r *readSignal) Read(ctx context.Context, start, end logformat.KafkaOffsets, n int, fn func(logformat.TopicPartition, []transform.Row) error) error {
	r.signal()
	return r.readLog.Read(ctx, start, end, n, fn)
}
