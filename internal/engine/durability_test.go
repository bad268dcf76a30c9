package engine

import (
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
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
			r := resolve(t, &query.Query{Sink: "noop", Checkpoint: "unused"})
			e, err := New(context.Background(), Options{Query: r, Store: ckpt, Source: &tickSource{}, Sink: sink,
				MaxBatches: 4, Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
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
