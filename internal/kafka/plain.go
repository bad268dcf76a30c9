package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FillTopic produces n records with valueSize-byte values (and no key) to topic, spread over its
// partitions, and waits for every acknowledgement. Benchmarks use it to prepare input.
func FillTopic(ctx context.Context, bootstrap, topic string, n int64, valueSize int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(200_000), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	var (
		once     sync.Once
		firstErr error
	)
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				once.Do(func() { firstErr = err })
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return firstErr
}

// PlainConsumeProduce is the baseline the engine's benchmarks compare against: a bare franz-go
// loop that consumes the first n records of topic in (every partition, from the start) and
// produces each value unchanged to topic out, then waits for every acknowledgement. Its producer
// is tuned as the sink's (ProducerDefaults, sticky partitioning of keyless records). It has no
// offsets log, no planning and no per-record conversion, so the difference to a `ckpt run` of the
// same data is the engine's own cost.
func PlainConsumeProduce(ctx context.Context, bootstrap, in, out string, n int64) error {
	consumer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		return err
	}
	defer consumer.Close()
	// The sink's producer tuning and partitioner, so that the comparison is like with like.
	producer, err := kgo.NewClient(append(ProducerDefaults(), kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(out),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))...)
	if err != nil {
		return err
	}
	defer producer.Close()
	var (
		once     sync.Once
		firstErr error
		seen     int64
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			once.Do(func() { firstErr = err })
		}
	}
	for seen < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = errors.Join(ferr, fmt.Errorf("%s/%d: %w", t, p, err)) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen >= n {
				return
			}
			seen++
			producer.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, promise)
		})
	}
	if err := producer.Flush(ctx); err != nil {
		return err
	}
	return firstErr
}
