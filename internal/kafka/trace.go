package kafka

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaTrace is where --verbose/--debug send the Kafka requests of every client ClientOpts
// configures (broker reads, `ckpt run`'s source and sink). It is process state, set once by the
// root command before a command runs, because the clients are made deep inside the commands,
// from options built before the global flags are parsed.
var kafkaTrace atomic.Pointer[kafkaTracer]

type kafkaTracer struct {
	mu    sync.Mutex
	w     io.Writer
	debug bool
}

// SetTrace makes every client of ClientOpts log its requests to w (nil: none); debug adds the
// Kafka client's own debug log.
func SetTrace(w io.Writer, debug bool) {
	if w == nil {
		kafkaTrace.Store(nil)
		return
	}
	kafkaTrace.Store(&kafkaTracer{w: w, debug: debug})
}

// OnBrokerE2E logs one request and its response.
func (t *kafkaTracer) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	res := "ok"
	if err := e2e.Err(); err != nil {
		res = "error: " + err.Error()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "ckpt: kafka %s -> broker %d %s:%d: %s (%s, %d bytes out, %d in)\n",
		kmsg.NameForKey(key), meta.NodeID, meta.Host, meta.Port, res, e2e.DurationE2E(), e2e.BytesWritten, e2e.BytesRead)
}

// traceOpts are the client options the trace needs, none when it is off.
func traceOpts() []kgo.Opt {
	t := kafkaTrace.Load()
	if t == nil {
		return nil
	}
	opts := []kgo.Opt{kgo.WithHooks(t)}
	if t.debug {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(t.w, kgo.LogLevelDebug, func() string { return "ckpt: kafka-client " })))
	}
	return opts
}
