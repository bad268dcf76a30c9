package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Progress is one batch's progress event, shaped like Spark's StreamingQueryProgress JSON.
type Progress struct {
	ID                     string           `json:"id"`
	RunID                  string           `json:"runId"`
	Name                   *string          `json:"name"`
	Timestamp              string           `json:"timestamp"`
	BatchID                int64            `json:"batchId"`
	BatchDuration          int64            `json:"batchDuration"`
	NumInputRows           int64            `json:"numInputRows"`
	InputRowsPerSecond     float64          `json:"inputRowsPerSecond"`
	ProcessedRowsPerSecond float64          `json:"processedRowsPerSecond"`
	DurationMs             map[string]int64 `json:"durationMs"`
	StateOperators         []any            `json:"stateOperators"`
	Sources                []SourceProgress `json:"sources"`
	Sink                   SinkProgress     `json:"sink"`
	// Rerun is true for a batch the restart ran again (ckpt's addition).
	Rerun bool `json:"rerun,omitempty"`
}

// SourceProgress is Spark's SourceProgress.
type SourceProgress struct {
	Description            string            `json:"description"`
	StartOffset            json.RawMessage   `json:"startOffset"`
	EndOffset              json.RawMessage   `json:"endOffset"`
	LatestOffset           json.RawMessage   `json:"latestOffset"`
	NumInputRows           int64             `json:"numInputRows"`
	InputRowsPerSecond     float64           `json:"inputRowsPerSecond"`
	ProcessedRowsPerSecond float64           `json:"processedRowsPerSecond"`
	Metrics                map[string]string `json:"metrics,omitempty"`
}

// SinkProgress is Spark's SinkProgress.
type SinkProgress struct {
	Description   string `json:"description"`
	NumOutputRows int64  `json:"numOutputRows"`
}

func rate(rows int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	v := float64(rows) / d.Seconds()
	return math.Round(v*1000) / 1000
}

func sparkTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Metrics are the engine's Prometheus metrics, served in the text exposition format.
type Metrics struct {
	mu            sync.Mutex
	batches       int64
	inputRows     int64
	outputRows    int64
	latestBatch   int64
	lastRows      int64
	buckets       []float64
	bucketCounts  []int64
	durationSum   float64
	durationCount int64
	phases        map[string]float64
	rerunBatches  int64
	up            bool
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	b := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	return &Metrics{latestBatch: -1, buckets: b, bucketCounts: make([]int64, len(b)), phases: map[string]float64{}}
}

// Observe records a finished batch.
func (m *Metrics) Observe(p *Progress) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.up = true
	m.batches++
	m.inputRows += p.NumInputRows
	m.outputRows += p.Sink.NumOutputRows
	m.latestBatch = p.BatchID
	m.lastRows = p.NumInputRows
	if p.Rerun {
		m.rerunBatches++
	}
	d := float64(p.DurationMs["triggerExecution"]) / 1000
	for i, b := range m.buckets {
		if d <= b {
			m.bucketCounts[i]++
		}
	}
	m.durationSum += d
	m.durationCount++
	for k, v := range p.DurationMs {
		m.phases[k] += float64(v) / 1000
	}
}

// WriteTo writes the metrics in Prometheus text format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	p := func(format string, a ...any) {
		k, _ := fmt.Fprintf(w, format, a...)
		n += int64(k)
	}
	p("# HELP ckpt_batches_total Micro-batches completed (commits written).\n# TYPE ckpt_batches_total counter\nckpt_batches_total %d\n", m.batches)
	p("# HELP ckpt_rerun_batches_total Batches run again after a restart.\n# TYPE ckpt_rerun_batches_total counter\nckpt_rerun_batches_total %d\n", m.rerunBatches)
	p("# HELP ckpt_input_rows_total Rows read from the source.\n# TYPE ckpt_input_rows_total counter\nckpt_input_rows_total %d\n", m.inputRows)
	p("# HELP ckpt_output_rows_total Rows written to the sink (-1 per batch when the sink does not count).\n# TYPE ckpt_output_rows_total counter\nckpt_output_rows_total %d\n", m.outputRows)
	p("# HELP ckpt_latest_batch_id Id of the latest completed batch (-1: none yet).\n# TYPE ckpt_latest_batch_id gauge\nckpt_latest_batch_id %d\n", m.latestBatch)
	p("# HELP ckpt_latest_batch_rows Input rows of the latest batch.\n# TYPE ckpt_latest_batch_rows gauge\nckpt_latest_batch_rows %d\n", m.lastRows)
	p("# HELP ckpt_batch_duration_seconds Trigger execution time per batch.\n# TYPE ckpt_batch_duration_seconds histogram\n")
	for i, b := range m.buckets {
		p("ckpt_batch_duration_seconds_bucket{le=\"%g\"} %d\n", b, m.bucketCounts[i])
	}
	p("ckpt_batch_duration_seconds_bucket{le=\"+Inf\"} %d\nckpt_batch_duration_seconds_sum %g\nckpt_batch_duration_seconds_count %d\n", m.durationCount, m.durationSum, m.durationCount)
	p("# HELP ckpt_phase_seconds_total Time spent per batch phase (Spark's durationMs keys).\n# TYPE ckpt_phase_seconds_total counter\n")
	keys := make([]string, 0, len(m.phases))
	for k := range m.phases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p("ckpt_phase_seconds_total{phase=%q} %g\n", k, m.phases[k])
	}
	return n, nil
}

// ServeHTTP serves /metrics.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = m.WriteTo(w)
}
