package kafka

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// countFetches counts the Fetch requests the test broker gets for topic until the test ends.
func countFetches(t *testing.T, topic string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	var id [16]byte
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range meta.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			id = mt.TopicID
		}
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	c := testBroker.Cluster()
	c.ControlKey(kmsg.Fetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case <-done:
			c.DropControl()
			return nil, nil, false
		default:
		}
		c.KeepControl()
		for _, ft := range req.(*kmsg.FetchRequest).Topics {
			if ft.Topic == topic || ft.TopicID == id {
				n.Add(1)
			}
		}
		return nil, nil, false
	})
	return &n
}

// readBatch reads (from, until] of partition 0 of topic and returns the offsets delivered.
func readBatch(t *testing.T, s *Source, topic string, from, until int64) ([]int64, error) {
	t.Helper()
	tp := logformat.TopicPartition{Topic: topic, Partition: 0}
	var got []int64
	err := s.Read(testCtx(t), logformat.NewKafkaOffsets(map[logformat.TopicPartition]int64{tp: from}), logformat.NewKafkaOffsets(map[logformat.TopicPartition]int64{tp: until}), 1,
		func(p logformat.TopicPartition, rows []Row) error {
			for _, r := range rows {
				if string(r.Value) != fmt.Sprintf("0:%d", r.Offset) {
					t.Errorf("offset %d has value %q", r.Offset, r.Value)
				}
				got = append(got, r.Offset)
			}
			return nil
		})
	return got, err
}

func wantOffsets(t *testing.T, got []int64, from, until int64) {
	t.Helper()
	var want []int64
	for o := from; o < until; o++ {
		want = append(want, o)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read [%d, %d): got offsets %v", from, until, got)
	}
}

// TestReadKeepsConsumerAcrossBatches: batches of one record each, from a backlog that one fetch
// returns whole, are read by one consumer kept across batches: each batch gets exactly its
// record, and the broker sees a handful of fetches, not one or more per batch (before the
// readers were kept: 40 fetches for 40 batches).
func TestReadKeepsConsumerAcrossBatches(t *testing.T) {
	topic := newTopic(t, 1)
	produceN(t, topic, 0, 0, 40)
	fetches := countFetches(t, topic)
	s, _ := newSource(t, map[string]string{"subscribe": topic}, nil)
	for i := int64(0); i < 40; i++ {
		got, err := readBatch(t, s, topic, i, i+1)
		if err != nil {
			t.Fatal(err)
		}
		wantOffsets(t, got, i, i+1)
	}
	if n := fetches.Load(); n > 5 {
		t.Fatalf("%d fetches for 40 batches of one record, want at most 5", n)
	}
}

// TestReadKeptConsumerOtherStart: a range that does not start where the partition's last one
// ended (a re-run batch after a restart, a skip) is read from its own start; the records the
// consumer held beyond the last end are never delivered outside a range.
func TestReadKeptConsumerOtherStart(t *testing.T) {
	topic := newTopic(t, 1)
	produceN(t, topic, 0, 0, 30)
	s, _ := newSource(t, map[string]string{"subscribe": topic}, nil)
	for _, r := range [][2]int64{{0, 5}, {2, 4}, {4, 6}, {10, 12}, {3, 4}, {4, 5}, {5, 30}, {29, 30}, {0, 1}} {
		got, err := readBatch(t, s, topic, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		wantOffsets(t, got, r[0], r[1])
	}
}

// TestReadKeptConsumerDataLoss: records deleted while a kept consumer waits between batches
// are data loss for the next batch as for a new consumer: with failOnDataLoss an error naming
// the offset, without, a warning and the records that remain.
func TestReadKeptConsumerDataLoss(t *testing.T) {
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprint("failOnDataLoss=", fail), func(t *testing.T) {
			topic := newTopic(t, 1)
			produceN(t, topic, 0, 0, 2)
			s, warnings := newSource(t, map[string]string{"subscribe": topic, "failOnDataLoss": fmt.Sprint(fail)}, nil)
			got, err := readBatch(t, s, topic, 0, 2) // the consumer is kept at offset 2
			if err != nil {
				t.Fatal(err)
			}
			wantOffsets(t, got, 0, 2)
			produceN(t, topic, 0, 2, 8)
			if err := testBroker.Cluster().DeleteRecords(topic, 0, 6); err != nil {
				t.Fatal(err)
			}
			got, err = readBatch(t, s, topic, 2, 8)
			if fail {
				var dl *DataLossError
				if !errors.As(err, &dl) {
					t.Fatalf("got %v, %v; want a data loss error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantOffsets(t, got, 6, 8)
			if len(warnings.all()) == 0 {
				t.Fatal("no data loss warning")
			}
		})
	}
}

// TestReadLargeRangesShareReaders: ranges of a whole poll or more, read one after another,
// share one client instead of keeping one per partition (with per-partition readers alone a
// Kafka→Kafka copy ran 5-10% slower than with the shared clients), and the partitions whose
// reader was taken are read exactly from their next start.
func TestReadLargeRangesShareReaders(t *testing.T) {
	topic := newTopic(t, 2)
	for p := range int32(2) {
		produceN(t, topic, p, 0, largeRange+20)
	}
	s, _ := newSource(t, map[string]string{"subscribe": topic}, nil)
	ctx := testCtx(t)
	read := func(from, until int64) {
		t.Helper()
		start, end := map[logformat.TopicPartition]int64{}, map[logformat.TopicPartition]int64{}
		for p := range int32(2) {
			tp := logformat.TopicPartition{Topic: topic, Partition: p}
			start[tp], end[tp] = from, until
		}
		var got [2][]int64
		err := s.Read(ctx, logformat.NewKafkaOffsets(start), logformat.NewKafkaOffsets(end), 1, func(p logformat.TopicPartition, rows []Row) error {
			for _, r := range rows {
				got[p.Partition] = append(got[p.Partition], r.Offset)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for p := range got {
			if n := int64(len(got[p])); n != until-from || (n > 0 && (got[p][0] != from || got[p][n-1] != until-1)) {
				t.Fatalf("partition %d, range [%d, %d): got %d offsets", p, from, until, n)
			}
		}
	}
	read(0, largeRange+10)
	s.readersMu.Lock()
	kept := len(s.readers)
	s.readersMu.Unlock()
	if kept != 1 {
		t.Fatalf("%d readers kept after large ranges read one at a time, want 1", kept)
	}
	for o := int64(largeRange + 10); o < largeRange+20; o++ {
		read(o, o+1)
	}
}
