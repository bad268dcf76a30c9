package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// kafkaSource adapts *kafka.Source to Source.
type kafkaSource struct {
	s    *kafka.Source
	o    *kafka.SourceOptions
	desc string
}

// ParseKafkaSourceOptions validates Kafka source options (for query validation).
func ParseKafkaSourceOptions(q *query.Resolved) (*kafka.SourceOptions, error) {
	o, err := kafka.ParseSourceOptions(q.Options)
	if err != nil {
		return nil, err
	}
	o.CheckpointLocation = q.Checkpoint
	return o, nil
}

func newKafkaSource(ctx context.Context, q *query.Resolved, clock Clock, log func(string, ...any)) (*kafkaSource, error) {
	o, err := ParseKafkaSourceOptions(q)
	if err != nil {
		return nil, err
	}
	o.Warn = func(msg string) { log("WARN %s", msg) }
	s, err := kafka.NewSource(ctx, o, clock)
	if err != nil {
		return nil, err
	}
	return &kafkaSource{s: s, o: o, desc: kafkaDescription(o)}, nil
}

// kafkaDescription is KafkaV2[<strategy>] as Spark prints it.
func kafkaDescription(o *kafka.SourceOptions) string {
	switch {
	case len(o.Subscribe) > 0:
		return "KafkaV2[Subscribe[" + strings.Join(o.Subscribe, ",") + "]]"
	case o.SubscribePattern != nil:
		return "KafkaV2[SubscribePattern[" + o.SubscribePattern.String() + "]]"
	default:
		tps := make([]string, len(o.Assign))
		for i, tp := range o.Assign {
			tps[i] = fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
		}
		return "KafkaV2[Assign[" + strings.Join(tps, ", ") + "]]"
	}
}

func (k *kafkaSource) Description() string            { return k.desc }
func (k *kafkaSource) PrepareForTriggerAvailableNow() { k.s.PrepareForTriggerAvailableNow() }
func (k *kafkaSource) Close()                         { k.s.Close() }

func (k *kafkaSource) DefaultReadLimit() ReadLimit {
	l := k.o.DefaultReadLimit()
	return ReadLimit{MaxRows: l.MaxRows, MinRows: l.MinRows, MaxTriggerDelay: l.MaxTriggerDelay, AllAvailable: l.AllAvailable}
}

func (k *kafkaSource) InitialOffsets(ctx context.Context) (logformat.KafkaOffsets, error) {
	return k.s.InitialOffsets(ctx)
}

func (k *kafkaSource) Latest(ctx context.Context, start logformat.KafkaOffsets, limit ReadLimit) (end, latest logformat.KafkaOffsets, warnings []string, err error) {
	return k.s.LatestAvailable(ctx, start, kafka.ReadLimit{MaxRows: limit.MaxRows, MinRows: limit.MinRows, MaxTriggerDelay: limit.MaxTriggerDelay, AllAvailable: limit.AllAvailable})
}

func (k *kafkaSource) Read(ctx context.Context, start, end logformat.KafkaOffsets, parallelism int, fn func(tp logformat.TopicPartition, rows []transform.Row) error) error {
	// kafka.Row is transform.Row: the rows go to the query as the source made them.
	return k.s.Read(ctx, start, end, parallelism, fn)
}

// KafkaSink adapts *kafka.Sink to Sink: rows become Spark's Kafka sink columns (key, value,
// topic, partition, headers; the topic option wins over the topic column).
type KafkaSink struct {
	s           *kafka.Sink
	topic       string
	exactlyOnce bool
	rows        int64

	midMu sync.Mutex
	mid   func()
}

// SetMidSink arms the --fail-at mid-sink hook for the next streamed batch: it runs once the first
// chunk's records are acknowledged.
func (k *KafkaSink) SetMidSink(f func()) {
	k.midMu.Lock()
	k.mid = f
	k.midMu.Unlock()
}

// NewKafkaSink connects the Kafka sink for the query with id queryID.
func NewKafkaSink(ctx context.Context, opts map[string]string, queryID string) (*KafkaSink, error) {
	s, err := kafka.NewSink(ctx, opts, queryID)
	if err != nil {
		return nil, err
	}
	eo := false
	for k, v := range opts {
		if strings.EqualFold(k, "exactlyOnce") && strings.EqualFold(strings.TrimSpace(v), "true") {
			eo = true
		}
	}
	return &KafkaSink{s: s, topic: opts["topic"], exactlyOnce: eo}, nil
}

// Description names the sink.
func (k *KafkaSink) Description() string {
	return "org.apache.spark.sql.kafka010.KafkaSourceProvider$KafkaTable@" + k.topic
}

// Close releases the producer.
func (k *KafkaSink) Close() error { k.s.Close(); return nil }

// AddBatch produces the batch. With --fail-at mid-sink an at-least-once sink writes the first
// half of the rows and then crashes; an exactly-once sink crashes inside its open transaction,
// once the records and the marker are acknowledged and before the commit (kafka.Sink.BeforeCommit).
func (k *KafkaSink) AddBatch(ctx context.Context, b *Batch) error {
	rows, err := kafkaOutRows(b)
	if err != nil {
		return err
	}
	atomic.StoreInt64(&k.rows, int64(len(rows)))
	if b.MidSink != nil {
		if !k.exactlyOnce {
			half := len(rows) / 2
			if err := k.s.AddBatch(ctx, b.ID, rows[:half]); err != nil {
				return err
			}
			b.midSink()
			return k.s.AddBatch(ctx, b.ID, rows[half:])
		}
		k.s.BeforeCommit = b.midSink
		defer func() { k.s.BeforeCommit = nil }()
	}
	if k.exactlyOnce && b.OffsetsDurable != nil {
		// The batch marker makes a restart skip batch N: offsets/N first. (A transaction
		// could start before and commit after; the batch's records are produced in one call.)
		if err := b.OffsetsDurable(ctx); err != nil {
			return err
		}
	}
	return k.s.AddBatch(ctx, b.ID, rows)
}

// LateOffsets is true for the exactly-once sink, which makes offsets/N durable before its
// transaction; the at-least-once sink's records are visible as they are produced, so the
// engine makes offsets/N durable before it runs.
func (k *KafkaSink) LateOffsets() bool { return k.exactlyOnce }

// Streams is true for the at-least-once sink: records are produced while the batch is read.
func (k *KafkaSink) Streams() bool { return !k.exactlyOnce }

// WritePart starts producing one chunk of the batch (kafka.Sink.ProduceFunc, which does not wait
// for the acknowledgements, with the rows made on demand); FinishBatch waits for them. Reading goes on meanwhile. The first
// non-empty chunk of a batch armed with SetMidSink is flushed before the hook runs, so the crash
// comes with part of the batch durable.
func (k *KafkaSink) WritePart(ctx context.Context, id int64, cols []transform.Column, p *Part) error {
	n := p.Len()
	atomic.AddInt64(&k.rows, int64(n))
	if err := k.s.ProduceFunc(ctx, n, outRow(cols, p)); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	k.midMu.Lock()
	mid := k.mid
	k.mid = nil
	k.midMu.Unlock()
	if mid != nil {
		if err := k.s.Flush(ctx); err != nil {
			return err
		}
		mid() // --fail-at mid-sink: some records of the batch are acknowledged
	}
	return nil
}

// FinishBatch waits until every record of the batch is acknowledged and returns the first
// produce error of the batch.
func (k *KafkaSink) FinishBatch(ctx context.Context, id int64) error {
	k.midMu.Lock()
	k.mid = nil // armed for a batch that wrote nothing: the engine crashes itself
	k.midMu.Unlock()
	return k.s.Flush(ctx)
}

// OutputRows is the number of records the last batch produced.
func (k *KafkaSink) OutputRows(*Batch) int64 { return atomic.SwapInt64(&k.rows, 0) }

func kafkaOutRows(b *Batch) ([]kafka.OutRow, error) {
	out := make([]kafka.OutRow, 0, b.NumRows)
	for pi := range b.Parts {
		p := &b.Parts[pi]
		row := outRow(b.Columns, p)
		for i := range p.Len() {
			out = append(out, row(i))
		}
	}
	return out, nil
}

// outRow returns the function that makes row i of p a Kafka sink row. Rows are made on demand, so
// that the streaming sink produces them without building a slice first.
func outRow(cols []transform.Column, p *Part) func(i int) kafka.OutRow {
	if p.Values == nil && p.Select == nil {
		return func(i int) kafka.OutRow {
			r := &p.Rows[i]
			part := r.Partition
			o := kafka.OutRow{Key: r.Key, Value: r.Value, Topic: r.Topic, Partition: &part}
			o.Headers = r.Headers
			return o
		}
	}
	if p.Values == nil {
		// A selection of Kafka columns: map output names to the rows' fields unboxed.
		src := struct{ key, value, topic, partition, headers int }{-1, -1, -1, -1, -1}
		for i, c := range cols {
			switch c.Name {
			case "key":
				src.key = p.Select[i]
			case "value":
				src.value = p.Select[i]
			case "topic":
				src.topic = p.Select[i]
			case "partition":
				src.partition = p.Select[i]
			case "headers":
				src.headers = p.Select[i]
			}
		}
		return func(i int) kafka.OutRow {
			r := &p.Rows[i]
			var o kafka.OutRow
			if src.key >= 0 {
				o.Key = rowBytes(r, src.key)
			}
			if src.value >= 0 {
				o.Value = rowBytes(r, src.value)
			}
			if src.topic >= 0 {
				o.Topic = fmt.Sprint(transform.KafkaValue(r, src.topic))
			}
			if src.partition == 3 {
				part := r.Partition
				o.Partition = &part
			}
			if src.headers == 7 {
				o.Headers = r.Headers
			}
			return o
		}
	}
	ix := struct{ key, value, topic, partition, headers int }{-1, -1, -1, -1, -1}
	for i, c := range cols {
		switch c.Name {
		case "key":
			ix.key = i
		case "value":
			ix.value = i
		case "topic":
			ix.topic = i
		case "partition":
			ix.partition = i
		case "headers":
			ix.headers = i
		}
	}
	return func(i int) kafka.OutRow {
		v := p.Values[i]
		var o kafka.OutRow
		if ix.key >= 0 {
			o.Key = asBytes(v[ix.key])
		}
		if ix.value >= 0 {
			o.Value = asBytes(v[ix.value])
		}
		if ix.topic >= 0 && v[ix.topic] != nil {
			o.Topic = fmt.Sprint(v[ix.topic])
		}
		if ix.partition >= 0 {
			switch x := v[ix.partition].(type) {
			case int32:
				o.Partition = &x
			case int:
				p := int32(x)
				o.Partition = &p
			case int64:
				p := int32(x)
				o.Partition = &p
			}
		}
		if ix.headers >= 0 {
			if hs, ok := v[ix.headers].([]transform.Header); ok {
				o.Headers = hs
			}
		}
		return o
	}
}

func rowBytes(r *transform.Row, ix int) []byte {
	switch ix {
	case 0:
		return r.Key
	case 1:
		return r.Value
	}
	return asBytes(transform.KafkaValue(r, ix))
}

func asBytes(v any) []byte {
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return []byte(fmt.Sprint(v))
}

// newSink builds the query's sink. The Kafka sink needs the query id (exactly-once transactional
// id), so it is built by the engine once the id is known.
func newSink(ctx context.Context, q *query.Resolved, queryID string, console io.Writer, opener func(context.Context, string) (storage.Store, error), log func(string, ...any)) (Sink, error) {
	switch q.Sink {
	case query.SinkKafka:
		return NewKafkaSink(ctx, q.SinkOptions, queryID)
	case query.SinkFile:
		st, err := opener(ctx, q.SinkPath)
		if err != nil {
			return nil, err
		}
		fs := NewFileSink(st, q.FileFormat, log)
		fs.MinBatchesToRetain = q.MinBatchesToRetain
		fs.LogDeletion = q.FileSinkLogDeletion
		fs.CleanupDelay = q.FileSinkCleanupDelay
		fs.CompactInterval = q.FileSinkCompactInterval
		return fs, nil
	case query.SinkConsole:
		return NewConsoleSink(console, q.ConsoleNumRows, q.ConsoleTruncate), nil
	case query.SinkNoop:
		return NoopSink{}, nil
	}
	return nil, fmt.Errorf("unknown sink %q", q.Sink)
}
