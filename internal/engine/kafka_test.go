package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// written and stable sum a topic's end offsets and last stable offsets.
func writtenAndStable(t *testing.T, addr, topic string) (written, stable int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { written += o.Offset })
	lso.Each(func(o kadm.ListedOffset) { stable += o.Offset })
	return written, stable
}

// A record the broker refuses fails the batch: the run fails with the produce error and
// commits/0 is not written, for both Kafka sinks.
func TestKafkaSinkProduceErrorFailsBatch(t *testing.T) {
	for _, exactly := range []bool{false, true} {
		name := "at-least-once"
		if exactly {
			name = "exactly-once"
		}
		t.Run(name, func(t *testing.T) {
			b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 2})
			if err := b.Cluster().CreateTopic("small", 2, map[string]string{"max.message.bytes": "200"}); err != nil {
				t.Fatal(err)
			}
			produce(t, b.Addr(), "in", 0, 0, 50)
			produce(t, b.Addr(), "in", 1, 0, 50)
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			big := &kgo.Record{Topic: "in", Partition: 1, Value: []byte(strings.Repeat("x", 1000))}
			if err := cl.ProduceSync(context.Background(), big).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			q := kafkaQuery(b.Addr(), "subscribe=in")
			q.Trigger = "once"
			q.Sink = "kafka"
			q.SinkOptions = map[string]string{"kafka.bootstrap.servers": b.Addr(), "topic": "small"}
			if exactly {
				q.SinkOptions["exactlyOnce"] = "true"
			}
			q.Select = []string{"value"}
			store := storage.NewMem()
			_, err = runQuery(t, context.Background(), resolve(t, q), store, runOpts{})
			if !errors.Is(err, kerr.MessageTooLarge) {
				t.Fatalf("run: %v, want MESSAGE_TOO_LARGE", err)
			}
			cp, err := checkpoint.Load(context.Background(), store)
			if err != nil {
				t.Fatal(err)
			}
			if lo, ok := cp.Offsets.Latest(); !ok || lo != 0 {
				t.Errorf("offsets %v, want batch 0 planned", cp.Offsets.IDs())
			}
			if _, ok := cp.Commits.Latest(); ok {
				t.Errorf("commits %v, want none", cp.Commits.IDs())
			}
			if exactly {
				// Aborted: nothing of the batch is visible to read_committed, and no marker.
				if n := len(readTopic(t, b.Addr(), "small", true)); n != 0 {
					t.Errorf("%d records visible to read_committed", n)
				}
				m, err := cp.ReadMetadata(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				s, err := kafka.NewSink(context.Background(), q.SinkOptions, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if last, ok, err := s.LastCommittedBatch(context.Background()); ok || err != nil {
					t.Errorf("LastCommittedBatch = %d %v %v, want none", last, ok, err)
				}
			}
		})
	}
}

// The progress event's latestOffset is the source's latest offsets before the rate limit.
func TestKafkaProgressLatestOffset(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "l", Partitions: 1})
	produce(t, b.Addr(), "l", 0, 0, 100)
	q := kafkaQuery(b.Addr(), "subscribe=l", "maxOffsetsPerTrigger=20")
	var ps []*Progress
	_, err := runQuery(t, context.Background(), resolve(t, q), storage.NewMem(), runOpts{sink: &collectSink{}, max: 1,
		progress: func(p *Progress) { ps = append(ps, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || len(ps[0].Sources) != 1 {
		t.Fatalf("progress: %+v", ps)
	}
	src := ps[0].Sources[0]
	if string(src.EndOffset) != `{"l":{"0":20}}` || string(src.LatestOffset) != `{"l":{"0":100}}` {
		t.Errorf("endOffset %s latestOffset %s", src.EndOffset, src.LatestOffset)
	}
	if src.Metrics["maxOffsetsBehindLatest"] != "80" {
		t.Errorf("metrics %v", src.Metrics)
	}
}

// The exactly-once sink's mid-sink hook runs inside the open transaction: the batch's records
// are written and none is stable yet.
func TestKafkaSinkExactlyOnceMidSinkInTransaction(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "eo", Partitions: 2})
	ctx := context.Background()
	k, err := NewKafkaSink(ctx, map[string]string{"kafka.bootstrap.servers": b.Addr(), "topic": "eo", "exactlyOnce": "true"}, "q-mid")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	rows := make([]transform.Row, 10)
	for i := range rows {
		rows[i] = transform.Row{Value: []byte{byte('a' + i)}, Topic: "in"}
	}
	calls := 0
	batch := &Batch{ID: 0, Columns: []transform.Column{{Name: "value"}}, NumRows: 10,
		Parts: []Part{{Topic: "in", Rows: rows, Select: []int{1}}},
		MidSink: func() {
			calls++
			if w, s := writtenAndStable(t, b.Addr(), "eo"); w < 10 || s != 0 {
				t.Errorf("in the hook: %d written, %d stable; want ≥ 10 written, 0 stable", w, s)
			}
		}}
	if err := k.AddBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("hook ran %d times", calls)
	}
	if n := len(readTopic(t, b.Addr(), "eo", true)); n != 10 {
		t.Errorf("%d records committed, want 10", n)
	}
}

// The at-least-once sink streams: WritePart returns before the acknowledgements, the mid-sink
// hook runs once the first chunk is acknowledged, FinishBatch waits for the rest.
func TestKafkaSinkStreamingMidSink(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "alo", Partitions: 2})
	ctx := context.Background()
	k, err := NewKafkaSink(ctx, map[string]string{"kafka.bootstrap.servers": b.Addr(), "topic": "alo"}, "q")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if !k.Streams() {
		t.Fatal("the at-least-once sink streams")
	}
	chunk := func(n int) *Part {
		rows := make([]transform.Row, n)
		for i := range rows {
			rows[i] = transform.Row{Value: []byte{byte('a' + i%26)}, Topic: "in"}
		}
		return &Part{Topic: "in", Rows: rows, Select: []int{1}}
	}
	cols := []transform.Column{{Name: "value"}}
	calls := 0
	k.SetMidSink(func() {
		calls++
		if w, _ := writtenAndStable(t, b.Addr(), "alo"); w != 7 {
			t.Errorf("in the hook: %d written, want the first chunk's 7", w)
		}
	})
	for _, n := range []int{0, 7, 5} {
		if err := k.WritePart(ctx, 0, cols, chunk(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.FinishBatch(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("hook ran %d times", calls)
	}
	if w, _ := writtenAndStable(t, b.Addr(), "alo"); w != 12 {
		t.Errorf("%d written, want 12", w)
	}
	if n := k.OutputRows(nil); n != 12 {
		t.Errorf("OutputRows %d", n)
	}
}
