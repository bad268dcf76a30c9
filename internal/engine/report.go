// Progress events and lag metrics of a finished batch.

package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

func (e *Engine) report(b *pendingBatch, from logformat.KafkaOffsets, batch *Batch, dur map[string]int64, start, end time.Time) {
	var name *string
	if e.q.Name != "" {
		n := e.q.Name
		name = &n
	}
	exec := end.Sub(start)
	var inRate float64
	if !e.lastTrigger.IsZero() {
		inRate = rate(batch.InputRows, start.Sub(e.lastTrigger))
	}
	e.lastTrigger = start
	latest := b.latest
	if len(latest.Topics) == 0 {
		latest = b.end
	}
	p := &Progress{
		ID: e.queryID, RunID: e.runID, Name: name, Timestamp: sparkTimestamp(start),
		BatchID: b.id, BatchDuration: exec.Milliseconds(), NumInputRows: batch.InputRows,
		InputRowsPerSecond: inRate, ProcessedRowsPerSecond: rate(batch.InputRows, exec),
		DurationMs: dur, StateOperators: []any{},
		Sources: []SourceProgress{{
			Description:  e.src.Description(),
			StartOffset:  json.RawMessage(from.JSON()),
			EndOffset:    json.RawMessage(b.end.JSON()),
			LatestOffset: json.RawMessage(latest.JSON()),
			NumInputRows: batch.InputRows, InputRowsPerSecond: inRate, ProcessedRowsPerSecond: rate(batch.InputRows, exec),
			Metrics: lagMetrics(b.end, latest),
		}},
		Sink:  SinkProgress{Description: e.sink.Description(), NumOutputRows: outputRows(e.sink, batch)},
		Rerun: b.rerun,
	}
	e.opts.Metrics.Observe(p)
	if e.opts.OnProgress != nil {
		e.opts.OnProgress(p)
	}
}

func outputRows(s Sink, b *Batch) int64 {
	if c, ok := s.(interface{ OutputRows(*Batch) int64 }); ok {
		return c.OutputRows(b)
	}
	return -1
}

// lagMetrics are the Kafka source's metrics in progress events (avg/max/minOffsetsBehindLatest).
func lagMetrics(end, latest logformat.KafkaOffsets) map[string]string {
	em := end.Map()
	var sum, mx, n int64
	mn := int64(-1)
	for tp, l := range latest.Map() {
		lag := l - em[tp]
		if lag < 0 {
			lag = 0
		}
		sum += lag
		n++
		mx = max(mx, lag)
		if mn < 0 || lag < mn {
			mn = lag
		}
	}
	if n == 0 {
		return nil
	}
	return map[string]string{
		"avgOffsetsBehindLatest": fmt.Sprintf("%.1f", float64(sum)/float64(n)),
		"maxOffsetsBehindLatest": fmt.Sprint(mx),
		"minOffsetsBehindLatest": fmt.Sprint(mn),
	}
}
