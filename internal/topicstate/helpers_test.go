package topicstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka/kafkatest"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// testBroker is an embedded kfake broker on a free port with an admin client for arranging
// the scene (DeleteRecords, CreatePartitions, DeleteTopics) over the real wire protocol; the
// arranging is internal/embedkafka/kafkatest's.
type testBroker struct {
	*kafkatest.Env
	t    *testing.T
	adm  *kadm.Client
	ctx  context.Context
	addr string
}

func newBroker(t *testing.T) *testBroker {
	t.Helper()
	e := kafkatest.New(t)
	return &testBroker{Env: e, t: t, adm: e.Adm, ctx: e.Ctx, addr: e.Addr}
}

// reader returns a fresh admin client (no cached metadata from before a change) and its client.
func (tb *testBroker) reader() (*kadm.Client, *kgo.Client) {
	tb.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tb.addr)}, ClientOpts()...)...)
	if err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Cleanup(cl.Close)
	return kadm.NewClient(cl), cl
}

func (tb *testBroker) read(topics ...string) *recovery.BrokerState {
	tb.t.Helper()
	adm, _ := tb.reader()
	st, err := Read(tb.ctx, adm, topics)
	if err != nil {
		tb.t.Fatal(err)
	}
	return st
}

// produce writes n records to one partition (creating the topic if it is missing); record i
// gets timestamp ts(i) when ts is set.
func (tb *testBroker) produce(topic string, partition int32, n int, ts func(i int) time.Time) {
	tb.t.Helper()
	tb.Produce(topic, partition, n, ts, kgo.AllowAutoTopicCreation())
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
