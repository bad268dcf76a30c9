// Package kafkatest arranges an embedded Kafka (internal/embedkafka, kfake over the real wire
// protocol) for tests: an admin client to create and delete topics, add partitions, move log
// starts (DeleteRecords) and produce records. It imports only internal/embedkafka and franz-go, so
// that the tests of any package, internal/topicstate's own included, can use it. Tests only.
package kafkatest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
)

// Env is an embedded broker with an admin client.
type Env struct {
	T    testing.TB
	Ctx  context.Context
	B    *embedkafka.Broker
	Adm  *kadm.Client
	Addr string
}

// New starts a broker on a free port; it stops when the test ends.
func New(t testing.TB) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b, err := embedkafka.Start(ctx, embedkafka.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &Env{T: t, Ctx: ctx, B: b, Adm: kadm.NewClient(cl), Addr: b.Addr()}
}

// TopicName is a topic name unique to the test: "<test name>-<suffix>".
func TopicName(t testing.TB, suffix string) string {
	return strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(t.Name() + "-" + suffix)
}

// Topic creates a topic unique to the test and returns its name.
func (e *Env) Topic(suffix string, partitions int32) string {
	e.T.Helper()
	name := TopicName(e.T, suffix)
	e.CreateTopic(name, partitions)
	return name
}

// CreateTopic creates topic.
func (e *Env) CreateTopic(topic string, partitions int32) {
	e.T.Helper()
	resp, err := e.Adm.CreateTopic(e.Ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.T.Fatalf("create %s: %v", topic, err)
	}
}

// DeleteTopic deletes topic.
func (e *Env) DeleteTopic(topic string) {
	e.T.Helper()
	resp, err := e.Adm.DeleteTopic(e.Ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.T.Fatalf("delete %s: %v", topic, err)
	}
}

// AddPartitions adds n partitions to topic.
func (e *Env) AddPartitions(topic string, n int) {
	e.T.Helper()
	resp, err := e.Adm.CreatePartitions(e.Ctx, n, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		e.T.Fatalf("add partitions to %s: %v", topic, err)
	}
}

// DeleteRecords moves the log start of topic-partition up to offset.
func (e *Env) DeleteRecords(topic string, partition int32, offset int64) {
	e.T.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	resp, err := e.Adm.DeleteRecords(e.Ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		e.T.Fatalf("delete records of %s-%d below %d: %v", topic, partition, offset, err)
	}
}

// Produce writes n records to one partition with a fresh client (opts added to its options);
// record i holds the value i and, when ts is set, the timestamp ts(i).
func (e *Env) Produce(topic string, partition int32, n int, ts func(i int) time.Time, opts ...kgo.Opt) {
	e.T.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(e.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		e.T.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(strconv.Itoa(i))}
		if ts != nil {
			recs[i].Timestamp = ts(i)
		}
	}
	if err := cl.ProduceSync(e.Ctx, recs...).FirstErr(); err != nil {
		e.T.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
}
