package engine

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/internal/transform"
)

// ConsoleSink prints each batch as Spark's console sink does: a banner with the batch id, then
// Dataset.show(numRows, truncate) of the batch's rows.
type ConsoleSink struct {
	w        io.Writer
	numRows  int
	truncate bool
	mu       sync.Mutex
}

// NewConsoleSink prints to w at most numRows rows per batch; truncate cuts cells to 20
// characters.
func NewConsoleSink(w io.Writer, numRows int, truncate bool) *ConsoleSink {
	return &ConsoleSink{w: w, numRows: numRows, truncate: truncate}
}

// Description names the sink.
func (s *ConsoleSink) Description() string {
	return "org.apache.spark.sql.execution.streaming.ConsoleTable$"
}

// Close does nothing.
func (s *ConsoleSink) Close() error { return nil }

// LateOffsets is true: printed rows do not outlive the process.
func (s *ConsoleSink) LateOffsets() bool { return true }

// OutputRows is -1, as Spark reports for sinks that do not count.
func (s *ConsoleSink) OutputRows(*Batch) int64 { return -1 }

// AddBatch prints the batch.
func (s *ConsoleSink) AddBatch(_ context.Context, b *Batch) error {
	var sb strings.Builder
	sb.WriteString("-------------------------------------------\n")
	fmt.Fprintf(&sb, "Batch: %d\n", b.ID)
	sb.WriteString("-------------------------------------------\n")
	sb.WriteString(ShowString(b, s.numRows, s.truncate))
	sb.WriteString("\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := io.WriteString(s.w, sb.String())
	b.midSink()
	return err
}

// ShowString is Spark's Dataset.showString(numRows, truncate = 20 or 0) over the batch rows.
func ShowString(b *Batch, numRows int, truncate bool) string {
	trunc := 0
	if truncate {
		trunc = 20
	}
	header := make([]string, len(b.Columns))
	for i, c := range b.Columns {
		header[i] = cell(c.Name, trunc)
	}
	rows := [][]string{header}
	var buf []any
	total := 0
collect:
	for pi := range b.Parts {
		p := &b.Parts[pi]
		for i := 0; i < p.Len(); i++ {
			total++
			if len(rows) > numRows {
				break collect
			}
			buf = p.Row(i, buf[:0])
			r := make([]string, len(buf))
			for c, v := range buf {
				r[c] = cell(showValue(v), trunc)
			}
			rows = append(rows, r)
		}
	}
	hasMore := total > numRows
	widths := make([]int, len(header))
	for i := range widths {
		widths[i] = 3
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var sb strings.Builder
	sep := func() {
		sb.WriteByte('+')
		for _, w := range widths {
			sb.WriteString(strings.Repeat("-", w))
			sb.WriteByte('+')
		}
		sb.WriteByte('\n')
	}
	line := func(r []string) {
		sb.WriteByte('|')
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if trunc > 0 {
				sb.WriteString(pad + c)
			} else {
				sb.WriteString(c + pad)
			}
			sb.WriteByte('|')
		}
		sb.WriteByte('\n')
	}
	sep()
	line(rows[0])
	sep()
	for _, r := range rows[1:] {
		line(r)
	}
	sep()
	if hasMore {
		word := "rows"
		if numRows == 1 {
			word = "row"
		}
		fmt.Fprintf(&sb, "only showing top %d %s\n", numRows, word)
	}
	return sb.String()
}

func cell(s string, trunc int) string {
	if trunc > 0 && utf8.RuneCountInString(s) > trunc {
		r := []rune(s)
		if trunc < 4 {
			return string(r[:trunc])
		}
		return string(r[:trunc-3]) + "..."
	}
	return s
}

func hexBytes(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%02X", c)
	}
	sb.WriteByte(']')
	return sb.String()
}

// showValue renders a value as Spark's show does (Cast to string, Hive style).
func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case []byte:
		if x == nil {
			return "null"
		}
		return hexBytes(x)
	case time.Time:
		s := x.Local().Format("2006-01-02 15:04:05.000000")
		s = strings.TrimRight(s, "0")
		return strings.TrimSuffix(s, ".")
	case []transform.Header:
		parts := make([]string, len(x))
		for i, h := range x {
			val := "null"
			if h.Value != nil {
				val = hexBytes(h.Value)
			}
			parts[i] = "{" + h.Key + ", " + val + "}"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// NoopSink discards every batch (Spark's noop format), for benchmarks.
type NoopSink struct{}

var _ StreamingSink = NoopSink{}

// Description names the sink.
func (NoopSink) Description() string {
	return "org.apache.spark.sql.execution.datasources.noop.NoopTable$"
}

// AddBatch does nothing.
func (NoopSink) AddBatch(_ context.Context, b *Batch) error { b.midSink(); return nil }

// Close does nothing.
func (NoopSink) Close() error { return nil }

// OutputRows is the batch size.
func (NoopSink) OutputRows(b *Batch) int64 { return b.NumRows }
