package inspect

import (
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
)

// Range is an inclusive run of batch ids, [first, last]. It marshals as a two-element array so
// that 100,000 contiguous batches cost one pair.
type Range [2]int64

// Ranges compresses ascending ids into maximal runs of consecutive ids.
func Ranges(ids []int64) []Range {
	out := []Range{}
	for i, id := range ids {
		if i > 0 && id == out[len(out)-1][1]+1 {
			out[len(out)-1][1] = id
			continue
		}
		out = append(out, Range{id, id})
	}
	return out
}

// logRanges returns a log's runs as Ranges.
func logRanges(l *checkpoint.Log) []Range {
	out := make([]Range, 0, len(l.Runs()))
	for _, r := range l.Runs() {
		out = append(out, Range{r.First, r.Last})
	}
	return out
}

// Gaps are the ids missing between the runs of ranges: what lies between the first and the
// last id but has no file.
func Gaps(ranges []Range) []Range {
	out := []Range{}
	for i := 1; i < len(ranges); i++ {
		out = append(out, Range{ranges[i-1][1] + 1, ranges[i][0] - 1})
	}
	return out
}

// FormatRanges writes runs the way people write them: "0-41, 43-99", "-" for none.
func FormatRanges(rs []Range) string {
	if len(rs) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(r[0], 10))
		if r[1] != r[0] {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(r[1], 10))
		}
	}
	return b.String()
}
