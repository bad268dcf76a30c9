// Package embedkafka runs an embedded, single-node Kafka (franz-go's kfake) for `ckpt broker`,
// `ckpt run --demo` and tests, plus a deterministic record generator.
//
// kfake speaks the real Kafka wire protocol, so every client (franz-go, the Java client, Spark)
// talks to it as to a real broker. It listens on 127.0.0.1 only, keeps everything in memory
// unless DataDir is set, never auto-creates topics, and does not replicate or throttle.
package embedkafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kfake"
)

// DefaultPartitions is the partition count of a topic whose TopicSpec.Partitions is 0 (kfake's
// default, which is also what auto-created topics would get).
const DefaultPartitions = 10

// TopicSpec is a topic created when the broker starts.
type TopicSpec struct {
	// Name is the topic name. Required.
	Name string
	// Partitions is the partition count. Default (0): DefaultPartitions.
	Partitions int32
}

// Options configure Start.
type Options struct {
	// Port is the TCP port on 127.0.0.1. Default (0): any free port; Addr reports it.
	Port int
	// Topics are created before Start returns. Default: none.
	Topics []TopicSpec
	// Generate, when set, starts a producer writing deterministic records in the background
	// (see GeneratorSpec). Its topic is created with DefaultPartitions if Topics does not list it.
	// Default: nil, no generator.
	Generate *GeneratorSpec
	// DataDir keeps the log on disk and reloads it on the next Start with the same directory.
	// Default (""): in memory only.
	DataDir string
}

// Broker is a running embedded Kafka.
type Broker struct {
	cluster *kfake.Cluster
	addr    string

	cancel context.CancelFunc
	done   chan struct{} // closed when the generator (if any) returned

	acked     atomic.Int64
	mu        sync.Mutex
	genErr    error
	closeOnce sync.Once
}

// Start starts a one-node kfake cluster on 127.0.0.1:Port, creates the topics and starts the
// generator. ctx bounds only the generator; Close stops everything.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("broker: port %d out of range 0-65535", opts.Port)
	}
	topics, err := topicSet(opts)
	if err != nil {
		return nil, err
	}
	// Ports overrides NumBrokers (kfake defaults to 3 brokers): one port, one broker.
	kopts := []kfake.Opt{kfake.Ports(opts.Port), kfake.DefaultNumPartitions(DefaultPartitions)}
	if opts.DataDir != "" {
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("broker: start on 127.0.0.1:%d: %w", opts.Port, err)
	}
	// CreateTopic instead of SeedTopics: with DataDir, a restarted broker already has the topics
	// and only the missing ones are created.
	for _, t := range topics {
		if c.TopicInfo(t.Name) != nil {
			continue
		}
		if err := c.CreateTopic(t.Name, t.Partitions, nil); err != nil {
			c.Close()
			return nil, fmt.Errorf("broker: create topic %q: %w", t.Name, err)
		}
	}
	addrs := c.ListenAddrs()
	if len(addrs) == 0 {
		c.Close()
		return nil, errors.New("broker: kfake reported no listen address")
	}
	if err := javaClientCompat(ctx, c, addrs[0]); err != nil {
		c.Close()
		return nil, err
	}
	b := &Broker{cluster: c, addr: addrs[0], done: make(chan struct{})}
	gctx, cancel := context.WithCancel(ctx)
	b.cancel = cancel
	if opts.Generate == nil {
		close(b.done)
		return b, nil
	}
	spec := *opts.Generate
	go func() {
		defer close(b.done)
		err := generate(gctx, b.addr, spec, &b.acked)
		if err != nil && gctx.Err() == nil {
			b.mu.Lock()
			b.genErr = err
			b.mu.Unlock()
		}
	}()
	return b, nil
}

// topicSet validates the topic list and adds the generator's topic when it is not listed.
func topicSet(opts Options) ([]TopicSpec, error) {
	seen := map[string]bool{}
	var out []TopicSpec
	for _, t := range opts.Topics {
		if t.Name == "" {
			return nil, errors.New("broker: topic name is empty")
		}
		if t.Partitions < 0 {
			return nil, fmt.Errorf("broker: topic %q: partitions must be positive, got %d", t.Name, t.Partitions)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("broker: topic %q listed twice", t.Name)
		}
		seen[t.Name] = true
		if t.Partitions == 0 {
			t.Partitions = DefaultPartitions
		}
		out = append(out, t)
	}
	if g := opts.Generate; g != nil {
		if err := g.validate(); err != nil {
			return nil, err
		}
		if !seen[g.Topic] {
			out = append(out, TopicSpec{Name: g.Topic, Partitions: DefaultPartitions})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Addr is the bootstrap address, "127.0.0.1:PORT".
func (b *Broker) Addr() string { return b.addr }

// Cluster is the underlying kfake cluster, for tests that delete records or topics, add
// partitions or compact without going through a client.
func (b *Broker) Cluster() *kfake.Cluster { return b.cluster }

// Produced is how many generated records were acknowledged so far.
func (b *Broker) Produced() int64 { return b.acked.Load() }

// GeneratorDone is closed when the generator has stopped: its Limit was reached, it failed
// (see GeneratorErr), or the broker is closing. It is closed at once when there is no generator.
func (b *Broker) GeneratorDone() <-chan struct{} { return b.done }

// GeneratorErr is the error that stopped the generator early, or nil.
func (b *Broker) GeneratorErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.genErr
}

// Close stops the generator, then the broker. It is safe to call more than once.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		b.cancel()
		<-b.done
		b.cluster.Close()
	})
}
