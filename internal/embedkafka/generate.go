package embedkafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultKeys is the number of distinct keys (users) when GeneratorSpec.Keys is 0.
const DefaultKeys = 100

// GeneratorSpec describes the deterministic record stream of Generate.
//
// Record i (counting from StartID) has key "u<i mod Keys>" and the JSON value
//
//	{"id":i,"user":"u<i mod Keys>","amount":A,"ts":"<RFC 3339 UTC, milliseconds>"}
//
// where A depends only on i (see Record). Tests count loss and duplicates by id; keyed records
// land on partitions by Kafka's murmur2 key hash, the same as the Java producer.
type GeneratorSpec struct {
	// Topic receives the records. Required.
	Topic string
	// Rate is the target in records per second. Default (0): as fast as the broker accepts.
	Rate int
	// Limit stops the generator after this many acknowledged records. Default (0): no limit,
	// run until the context is cancelled.
	Limit int64
	// Keys is the number of distinct keys. Default (0): DefaultKeys.
	Keys int
	// StartID is the id of the first record, so that a restarted generator continues a stream.
	// Default: 0.
	StartID int64
	// Now stamps the "ts" field. Default (nil): time.Now.
	Now func() time.Time
}

func (g *GeneratorSpec) validate() error {
	switch {
	case g.Topic == "":
		return errors.New("broker: generator topic is empty")
	case g.Rate < 0:
		return fmt.Errorf("broker: generator rate must not be negative, got %d", g.Rate)
	case g.Limit < 0:
		return fmt.Errorf("broker: generator limit must not be negative, got %d", g.Limit)
	case g.Keys < 0:
		return fmt.Errorf("broker: generator keys must not be negative, got %d", g.Keys)
	case g.StartID < 0:
		return fmt.Errorf("broker: generator start id must not be negative, got %d", g.StartID)
	}
	return nil
}

// Record returns the key and value of record id with keys distinct keys (0 means DefaultKeys),
// stamped ts. It is what Generate writes, exported so that tests can rebuild expected output.
func Record(id int64, keys int, ts time.Time) (key, value []byte) {
	if keys <= 0 {
		keys = DefaultKeys
	}
	user := "u" + strconv.FormatInt(id%int64(keys), 10)
	// Cents from a multiplicative hash: varied but a function of id alone, so expected sums can
	// be recomputed; strconv's shortest form prints them with at most two decimals.
	cents := (id*7919 + 1250) % 100000
	amount := strconv.FormatFloat(float64(cents)/100, 'f', -1, 64)
	if !containsDot(amount) {
		amount += ".0" // keep the JSON type a double for every record, as Spark infers it
	}
	v := make([]byte, 0, 96)
	v = append(v, `{"id":`...)
	v = strconv.AppendInt(v, id, 10)
	v = append(v, `,"user":"`...)
	v = append(v, user...)
	v = append(v, `","amount":`...)
	v = append(v, amount...)
	v = append(v, `,"ts":"`...)
	v = ts.UTC().AppendFormat(v, "2006-01-02T15:04:05.000Z07:00")
	v = append(v, `"}`...)
	return []byte(user), v
}

func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}

// Generate writes spec's records to the broker at addr and returns the number acknowledged. It
// returns when Limit records are acknowledged, when ctx is cancelled (with ctx's error), or on
// the first produce error.
func Generate(ctx context.Context, addr string, spec GeneratorSpec) (int64, error) {
	var acked atomic.Int64
	err := generate(ctx, addr, spec, &acked)
	return acked.Load(), err
}

// generate is Generate with the acknowledged count shared with the Broker while it runs.
func generate(ctx context.Context, addr string, spec GeneratorSpec, acked *atomic.Int64) error {
	if err := spec.validate(); err != nil {
		return err
	}
	now := spec.Now
	if now == nil {
		now = time.Now
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(spec.Topic),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000),
	)
	if err != nil {
		return fmt.Errorf("broker: generator client: %w", err)
	}
	defer cl.Close()

	var (
		errOnce  sync.Once
		firstErr error
		failed   = make(chan struct{})
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { firstErr = err; close(failed) })
			return
		}
		acked.Add(1)
	}
	produce := func(id int64) {
		k, v := Record(id, spec.Keys, now())
		cl.Produce(ctx, &kgo.Record{Key: k, Value: v}, promise)
	}

	start := time.Now()
	var sent int64
	id := spec.StartID
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for spec.Limit == 0 || sent < spec.Limit {
		n := int64(1024) // as fast as possible: produce in chunks so cancellation is noticed
		if spec.Rate > 0 {
			select {
			case <-ctx.Done():
			case <-failed:
			case <-tick.C:
			}
			due := int64(time.Since(start).Seconds() * float64(spec.Rate))
			n = due - sent
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-failed:
			return fmt.Errorf("broker: generator: %w", firstErr)
		default:
		}
		if spec.Limit > 0 && sent+n > spec.Limit {
			n = spec.Limit - sent
		}
		for ; n > 0; n-- {
			produce(id)
			id++
			sent++
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case <-failed:
		return fmt.Errorf("broker: generator: %w", firstErr)
	default:
	}
	return nil
}
