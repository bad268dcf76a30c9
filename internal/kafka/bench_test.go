package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// benchRecords is the input size of the throughput benchmarks: 1M records, scaled down under the
// race detector, which makes kfake about 10x slower.
func benchRecords() int64 {
	if raceEnabled {
		return 50_000
	}
	return 1_000_000
}

// BenchmarkPlainConsumeProduce measures PlainConsumeProduce over benchRecords() 32-byte records
// on kfake: the floor for an engine benchmark of the same data in the same run.
func BenchmarkPlainConsumeProduce(b *testing.B) {
	ctx := context.Background()
	n := benchRecords()
	in := newTopic(b, 4)
	if err := FillTopic(ctx, testBroker.Addr(), in, n, 32); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		out := fmt.Sprintf("%s-out-%d", in, i)
		b.StopTimer()
		if err := testBroker.Cluster().CreateTopic(out, 4, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := PlainConsumeProduce(ctx, testBroker.Addr(), in, out, n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSourceRead measures Source.Read of the same input, for comparison with the plain loop.
func BenchmarkSourceRead(b *testing.B) {
	ctx := context.Background()
	n := benchRecords()
	in := newTopic(b, 4)
	if err := FillTopic(ctx, testBroker.Addr(), in, n, 32); err != nil {
		b.Fatal(err)
	}
	s, _ := newSource(b, map[string]string{"subscribe": in, "startingOffsets": "earliest"}, nil)
	start, err := s.InitialOffsets(ctx)
	if err != nil {
		b.Fatal(err)
	}
	end, _, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		var got [4]int64
		err := s.Read(ctx, start, end, 4, func(p logformat.TopicPartition, rows []Row) error {
			got[p.Partition] += int64(len(rows))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if got[0]+got[1]+got[2]+got[3] != n {
			b.Fatalf("read %v, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
