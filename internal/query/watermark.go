package query

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/transform"
)

// resolveWatermark parses Watermark (COLUMN=DELAY) into WatermarkColumn and WatermarkDelayMs
// and returns the problems found.
func (r *Resolved) resolveWatermark() []string {
	if r.Watermark == "" {
		return nil
	}
	col, delay, ok := strings.Cut(r.Watermark, "=")
	col, delay = strings.TrimSpace(col), strings.TrimSpace(delay)
	if !ok || col == "" || delay == "" {
		return []string{fmt.Sprintf("--watermark %q: want COLUMN=DELAY, e.g. timestamp=10 seconds", r.Watermark)}
	}
	if col != "timestamp" {
		return []string{fmt.Sprintf("--watermark %q: the event-time column must be the Kafka column timestamp", r.Watermark)}
	}
	us, err := transform.ParseIntervalMicros(delay)
	if err != nil {
		return []string{fmt.Sprintf("--watermark %q: %v", r.Watermark, err)}
	}
	if us < 0 {
		// Dataset.withWatermark's require.
		return []string{fmt.Sprintf("requirement failed: delay threshold (%s) should not be negative.", delay)}
	}
	var out []string
	if r.Filter != "" && transform.Mentions(r.Filter, col) {
		// Spark pushes a filter's conjuncts that do not name the event-time column below
		// EventTimeWatermark, and keeps the others above it: ckpt does not split the filter.
		out = append(out, fmt.Sprintf("--filter naming %s with --watermark is not supported yet", col))
	}
	r.WatermarkColumn, r.WatermarkDelayMs = col, us/1000
	return out
}
