package kafka

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// One in-process broker for the package; every test uses its own topics.
var testBroker *embedkafka.Broker

func TestMain(m *testing.M) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBroker = b
	code := m.Run()
	b.Close()
	os.Exit(code)
}

var topicSeq atomic.Int64

// newTopic creates a topic with a name unique to the test.
func newTopic(t testing.TB, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"), topicSeq.Add(1))
	if err := testBroker.Cluster().CreateTopic(name, partitions, nil); err != nil {
		t.Fatal(err)
	}
	return name
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceN writes n records to topic/partition with values "<partition>:<i>" (i from first).
func produceN(t testing.TB, topic string, partition int32, first, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("%d:%d", partition, first+i))}
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func admin(t testing.TB) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// warnings collects what a source would log.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(m string) { w.mu.Lock(); w.msgs = append(w.msgs, m); w.mu.Unlock() }
func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}
func (w *warnings) contains(sub string) bool {
	for _, m := range w.all() {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// newSource parses opts (bootstrap added) and starts a source with a fast retry interval.
func newSource(t testing.TB, opts map[string]string, clock Clock) (*Source, *warnings) {
	t.Helper()
	all := map[string]string{"kafka.bootstrap.servers": testBroker.Addr(), "fetchOffset.retryIntervalMs": "10"}
	for k, v := range opts {
		all[k] = v
	}
	o, err := ParseSourceOptions(all)
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	o.Warn = w.add
	s, err := NewSource(testCtx(t), o, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, w
}

// offs builds KafkaOffsets from "topic:partition=offset" pairs.
func offs(topic string, po ...int64) logformat.KafkaOffsets {
	m := map[logformat.TopicPartition]int64{}
	for i := 0; i+1 < len(po); i += 2 {
		m[logformat.TopicPartition{Topic: topic, Partition: int32(po[i])}] = po[i+1]
	}
	return logformat.NewKafkaOffsets(m)
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
