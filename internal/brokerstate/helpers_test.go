package brokerstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/broker"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// testBroker is an embedded kfake broker on a free port with an admin client for arranging
// the scene (DeleteRecords, CreatePartitions, DeleteTopics) over the real wire protocol.
type testBroker struct {
	t    *testing.T
	b    *broker.Broker
	adm  *kadm.Client
	ctx  context.Context
	addr string
}

func newBroker(t *testing.T) *testBroker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b, err := broker.Start(ctx, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &testBroker{t: t, b: b, adm: kadm.NewClient(cl), ctx: ctx, addr: b.Addr()}
}

// flags returns broker flags pointing at the test broker.
func (tb *testBroker) flags() *Flags {
	return &Flags{BootstrapServers: tb.addr, Timeout: 20 * time.Second}
}

// reader returns a fresh admin client (no cached metadata from before a change) and its client.
func (tb *testBroker) reader() (*kadm.Client, *kgo.Client) {
	tb.t.Helper()
	cl, err := tb.flags().KgoClient(tb.ctx)
	if err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl
}

func (tb *testBroker) read(topics ...string) *State {
	tb.t.Helper()
	adm, _ := tb.reader()
	st, err := Read(tb.ctx, adm, topics)
	if err != nil {
		tb.t.Fatal(err)
	}
	return st
}

func (tb *testBroker) createTopic(topic string, partitions int32) {
	tb.t.Helper()
	resp, err := tb.adm.CreateTopic(tb.ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		tb.t.Fatalf("create %s: %v", topic, err)
	}
}

func (tb *testBroker) deleteTopic(topic string) {
	tb.t.Helper()
	resp, err := tb.adm.DeleteTopic(tb.ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		tb.t.Fatalf("delete %s: %v", topic, err)
	}
}

func (tb *testBroker) addPartitions(topic string, n int) {
	tb.t.Helper()
	resp, err := tb.adm.CreatePartitions(tb.ctx, n, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		tb.t.Fatalf("add partitions to %s: %v", topic, err)
	}
}

// deleteRecords moves the log start of topic-partition to offset.
func (tb *testBroker) deleteRecords(topic string, partition int32, offset int64) {
	tb.t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	resp, err := tb.adm.DeleteRecords(tb.ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		tb.t.Fatalf("delete records %s-%d below %d: %v", topic, partition, offset, err)
	}
}

// produce writes n records to one partition; record i gets timestamp ts(i) when ts is set.
func (tb *testBroker) produce(topic string, partition int32, n int, ts func(i int) time.Time) {
	tb.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation())
	if err != nil {
		tb.t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(strconv.Itoa(i))}
		if ts != nil {
			recs[i].Timestamp = ts(i)
		}
	}
	if err := cl.ProduceSync(tb.ctx, recs...).FirstErr(); err != nil {
		tb.t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
}

// offsets builds Kafka offsets from "topic:partition=offset" entries.
func offsets(entries ...string) logformat.KafkaOffsets {
	m := map[logformat.TopicPartition]int64{}
	for _, e := range entries {
		tp, off, _ := strings.Cut(e, "=")
		topic, p, _ := strings.Cut(tp, ":")
		pn, err := strconv.Atoi(p)
		if err != nil {
			panic(e)
		}
		o, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			panic(e)
		}
		m[logformat.TopicPartition{Topic: topic, Partition: int32(pn)}] = o
	}
	return logformat.NewKafkaOffsets(m)
}

// uniqueTopic gives each test its own topic names.
func uniqueTopic(t *testing.T, suffix string) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(fmt.Sprintf("%s-%s", t.Name(), suffix))
}
