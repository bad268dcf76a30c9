package kafka

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// TestReadExactRanges reads 4 partitions in rate-limited batches with parallelism 2 and checks
// that every record is read once, in order, and only inside its batch's range.
func TestReadExactRanges(t *testing.T) {
	n := 5000
	if raceEnabled {
		n = 1000
	}
	topic := newTopic(t, 4)
	for p := range int32(4) {
		produceN(t, topic, p, 0, n*int(p+1)/4) // skewed: n/4, n/2, 3n/4, n
	}
	ctx := testCtx(t)
	s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": strconv.Itoa(n / 3)}, nil)
	start, err := s.InitialOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		seen     = map[logformat.TopicPartition][]int64{}
		inFlight [4]atomic.Int32
		maxPar   atomic.Int32
		active   atomic.Int32
	)
	batches := 0
	for {
		end, _, err := s.Latest(ctx, start, s.Options().DefaultReadLimit())
		if err != nil {
			t.Fatal(err)
		}
		if end.JSON() == start.JSON() {
			break
		}
		batches++
		from, until := start.Map(), end.Map()
		err = s.Read(ctx, start, end, 2, func(p logformat.TopicPartition, rows []Row) error {
			if inFlight[p.Partition].Add(1) != 1 {
				t.Errorf("concurrent calls for %v", p)
			}
			defer inFlight[p.Partition].Add(-1)
			if a := active.Add(1); a > maxPar.Load() {
				maxPar.Store(a)
			}
			defer active.Add(-1)
			for _, r := range rows {
				if r.Offset < from[p] || r.Offset >= until[p] {
					t.Errorf("batch %d: %v offset %d outside [%d, %d)", batches, p, r.Offset, from[p], until[p])
				}
				if r.Topic != p.Topic || r.Partition != p.Partition || string(r.Value) != fmt.Sprintf("%d:%d", p.Partition, r.Offset) {
					t.Errorf("row %+v", r)
				}
				if r.Timestamp.IsZero() || r.TimestampType != 0 || r.Headers != nil {
					t.Errorf("row metadata %+v", r)
				}
			}
			mu.Lock()
			for _, r := range rows {
				seen[p] = append(seen[p], r.Offset)
			}
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		start = end
	}
	for p := range int32(4) {
		got := seen[logformat.TopicPartition{Topic: topic, Partition: p}]
		want := n * int(p+1) / 4
		if len(got) != want {
			t.Errorf("partition %d: %d records, want %d", p, len(got), want)
		}
		for i, o := range got {
			if o != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d (loss, duplicate or disorder)", p, i, o)
			}
		}
	}
	if batches < 3 || maxPar.Load() > 2 {
		t.Errorf("%d batches, max parallel fn calls %d", batches, maxPar.Load())
	}
}

// TestReadTransactional reads a topic written by a transactional producer: control records and,
// under read_committed, aborted records take offsets but yield no rows; ranges still end exactly.
func TestReadTransactional(t *testing.T) {
	topic := newTopic(t, 1)
	ctx := testCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()), kgo.TransactionalID("txn-"+topic), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	txn := func(commit bool, vals ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	txn(true, "a", "b")       // offsets 0,1 + marker 2
	txn(false, "x", "y", "z") // offsets 3,4,5 + abort marker 6
	txn(true, "c")            // offset 7 + marker 8

	for _, tc := range []struct{ isolation, want string }{
		{"read_committed", "a b c"},
		{"read_uncommitted", "a b x y z c"}, // Spark's default isolation shows aborted records
	} {
		t.Run(tc.isolation, func(t *testing.T) {
			s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "kafka.isolation.level": tc.isolation}, nil)
			start, err := s.InitialOffsets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			end, _, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
			if err != nil || end.JSON() != offs(topic, 0, 9).JSON() {
				t.Fatalf("end %s %v", end.JSON(), err)
			}
			var vals []string
			err = s.Read(ctx, start, end, 1, func(_ logformat.TopicPartition, rows []Row) error {
				for _, r := range rows {
					vals = append(vals, string(r.Value))
				}
				return nil
			})
			if err != nil || strings.Join(vals, " ") != tc.want {
				t.Errorf("read %q %v, want %q", vals, err, tc.want)
			}
			// A range ending on a control record stops there: (2, 3] holds only the marker.
			vals = nil
			err = s.Read(ctx, offs(topic, 0, 2), offs(topic, 0, 3), 1, func(_ logformat.TopicPartition, rows []Row) error {
				for _, r := range rows {
					vals = append(vals, string(r.Value))
				}
				return nil
			})
			if err != nil || len(vals) != 0 {
				t.Errorf("marker-only range: %q %v", vals, err)
			}
		})
	}
}

func TestReadHeadersAndErrors(t *testing.T) {
	topic := newTopic(t, 2)
	ctx := testCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ts := time.UnixMilli(1_700_000_000_123)
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}},
		&kgo.Record{Topic: topic, Partition: 1, Value: nil, Timestamp: ts},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true"}, nil)
	start, _ := s.InitialOffsets(ctx)
	end, _, err := s.Latest(ctx, start, ReadLimit{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	var mu sync.Mutex
	err = s.Read(ctx, start, end, 0, func(_ logformat.TopicPartition, rs []Row) error {
		mu.Lock()
		rows = append(rows, rs...)
		mu.Unlock()
		return nil
	})
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %v", rows, err)
	}
	for _, r := range rows {
		if !r.Timestamp.Equal(ts) {
			t.Errorf("timestamp %v", r.Timestamp)
		}
		switch r.Partition {
		case 0:
			if string(r.Key) != "k" || len(r.Headers) != 2 || r.Headers[0].Key != "h1" || string(r.Headers[0].Value) != "x" || r.Headers[1].Key != "h2" {
				t.Errorf("row 0: %+v", r)
			}
		case 1:
			if r.Key != nil || r.Value != nil || r.Headers != nil {
				t.Errorf("row 1 (null key and value): %+v", r)
			}
		}
	}

	// An error from fn stops the read and is returned.
	boom := fmt.Errorf("boom")
	if err := s.Read(ctx, start, end, 2, func(logformat.TopicPartition, []Row) error { return boom }); err != boom {
		t.Errorf("err = %v, want boom", err)
	}
	// A cancelled context stops it too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Read(cctx, start, end, 2, func(logformat.TopicPartition, []Row) error { return nil }); err == nil {
		t.Error("cancelled read: want error")
	}
}

// TestReadReusedRowHasNoStaleHeaders reads a record with headers and then, into the same slot of
// the task's reused row buffer, one without: its row has no headers. The slot is reused when a
// range starts with records the reader held from the previous range (one chunk) and goes on
// with a poll (the next chunk).
func TestReadReusedRowHasNoStaleHeaders(t *testing.T) {
	topic := newTopic(t, 1)
	ctx := testCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: topic, Value: []byte("0")},
		&kgo.Record{Topic: topic, Value: []byte("1"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true"}, nil)
	tp := logformat.TopicPartition{Topic: topic, Partition: 0}
	at := func(o int64) logformat.KafkaOffsets {
		return logformat.NewKafkaOffsets(map[logformat.TopicPartition]int64{tp: o})
	}
	// [0, 1): the reader fetches records 0 and 1 and holds 1.
	if err := s.Read(ctx, at(0), at(1), 1, func(logformat.TopicPartition, []Row) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// [1, 3): record 1 from what the reader held, then record 2 from a poll.
	var chunks [][]Row
	if err := s.Read(ctx, at(1), at(3), 1, func(_ logformat.TopicPartition, rs []Row) error {
		chunks = append(chunks, append([]Row(nil), rs...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for _, c := range chunks {
		rows = append(rows, c...)
	}
	if len(rows) != 2 || string(rows[0].Value) != "1" || len(rows[0].Headers) != 1 || string(rows[1].Value) != "2" {
		t.Fatalf("rows %+v", rows)
	}
	if len(chunks) != 2 {
		t.Fatalf("%d chunks, want 2 (held, then polled): the test no longer reuses a slot", len(chunks))
	}
	if rows[1].Headers != nil {
		t.Errorf("record 2 has no headers, its row has %+v", rows[1].Headers)
	}
}
