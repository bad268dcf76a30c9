package engine

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/transform"
)

// Sink writes batches. Sinks that can (file, Kafka exactlyOnce) record the batch id with the data
// and skip a batch they already hold, which makes a re-run batch exactly-once.
type Sink interface {
	// Description is Spark's sink description, e.g. FileSink[/out].
	Description() string
	// AddBatch writes batch b.ID.
	AddBatch(ctx context.Context, b *Batch) error
	// Close flushes and releases the sink.
	Close() error
}

// Batch is the output of one micro-batch, grouped by input topic-partition.
type Batch struct {
	ID      int64
	Columns []transform.Column
	// Parts are sorted by topic and partition; partitions with no rows are left out.
	Parts []Part
	// NumRows is the number of output rows (after the filter); InputRows the rows read.
	NumRows   int64
	InputRows int64
	// MidSink, when set, is called by the sink once part of the batch is durable and part is
	// not (--fail-at phase=mid-sink). Sinks call it at most once.
	MidSink func()
	// OffsetsDurable makes offsets/ID survive a power loss. A LateOffsetsSink calls it just
	// before the batch's output becomes durable and visible; for other sinks the engine has
	// called it before the sink ran. Calls after the first return at once; nil (a batch the
	// engine did not build) means there is nothing to wait for.
	OffsetsDurable func(context.Context) error
}

// LateOffsetsSink is a sink that needs offsets/N durable only from one point of its batch on (a
// file sink's log entry, an exactly-once Kafka sink's transaction), where it calls
// Batch.OffsetsDurable, or never (output that does not outlive the process): the fsync of
// offsets/ then runs alongside the sink's writes, or the commit's, instead of before them.
// Durable output written before offsets/N would let a restart after a power loss plan batch N
// again with other end offsets, and a sink that skips batches it already has would lose the
// difference. Every other sink runs after offsets/N is durable.
type LateOffsetsSink interface {
	Sink
	// LateOffsets reports whether the sink calls OffsetsDurable itself (or needs it never).
	LateOffsets() bool
}

// LateOffsets is true: the noop sink writes nothing.
func (NoopSink) LateOffsets() bool { return true }

// Part is the rows of one input topic-partition, in offset order.
type Part struct {
	Topic     string
	Partition int32
	// Rows are the Kafka rows; used when Values is nil (no projection, or one that only picks
	// Kafka columns: then Select holds their indexes in transform.KafkaColumns).
	Rows   []transform.Row
	Select []int
	// Values are the projected rows, in Columns order.
	Values [][]any
}

// Len is the number of rows.
func (p *Part) Len() int {
	if p.Values != nil {
		return len(p.Values)
	}
	return len(p.Rows)
}

// Row returns row i's values in Columns order; buf is reused when the row must be built.
func (p *Part) Row(i int, buf []any) []any {
	if p.Values != nil {
		return p.Values[i]
	}
	if p.Select != nil {
		buf = buf[:0]
		for _, ix := range p.Select {
			buf = append(buf, transform.KafkaValue(&p.Rows[i], ix))
		}
		return buf
	}
	return transform.KafkaValues(&p.Rows[i], buf)
}

func (b *Batch) midSink() {
	if b.MidSink != nil {
		f := b.MidSink
		b.MidSink = nil
		f()
	}
}

// MidSinkHook calls b.MidSink once (for sinks in other packages).
func (b *Batch) MidSinkHook() { b.midSink() }

// StreamingSink is a sink that can take a batch's rows while they are read, one Part (a chunk
// of one partition) at a time, instead of the whole batch at once. The engine streams to it when
// Streams says so, which keeps memory flat and overlaps reading with writing. Sinks that must
// see the whole batch (file, console, exactly-once Kafka) do not stream.
type StreamingSink interface {
	Sink
	// Streams reports whether the sink streams (it may depend on its options).
	Streams() bool
	// WritePart writes rows of batch id; it is called concurrently for different partitions and
	// may return before the rows are durable.
	WritePart(ctx context.Context, id int64, cols []transform.Column, p *Part) error
	// FinishBatch returns once every row of batch id is durable, or with the first error.
	FinishBatch(ctx context.Context, id int64) error
}

// Streams is true: the noop sink streams.
func (NoopSink) Streams() bool { return true }

// WritePart discards the rows.
func (NoopSink) WritePart(context.Context, int64, []transform.Column, *Part) error { return nil }

// FinishBatch does nothing.
func (NoopSink) FinishBatch(context.Context, int64) error { return nil }
