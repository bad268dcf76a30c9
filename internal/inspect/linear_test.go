package inspect

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// manyLines is a checkpoint whose offsets/1 holds n source lines of the given text (2 M lines of
// 3 bytes took inspect and offsets export over 60 s).
func manyLines(b testing.TB, n int, line string) storage.Store {
	s := storage.NewMem()
	ctx := context.Background()
	w := func(p, d string) {
		if err := s.WriteFile(ctx, p, []byte(d)); err != nil {
			b.Fatal(err)
		}
	}
	w("metadata", `{"id":"11111111-2222-3333-4444-555555555555"}`)
	w("offsets/0", "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"t\":{\"0\":1}}")
	w("commits/0", "v1\n{\"nextBatchWatermarkMs\":0}")
	w("offsets/1", "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n"+strings.Repeat(line+"\n", n))
	return s
}

// BenchmarkSummarizeManyLines shows Summarize's time per line is flat in the number of lines.
func BenchmarkSummarizeManyLines(b *testing.B) {
	for _, line := range []string{"", "-", "{}"} {
		for _, n := range []int{50_000, 100_000, 200_000} {
			b.Run(fmt.Sprintf("line=%q/n=%d", line, n), func(b *testing.B) {
				s := manyLines(b, n, line)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := Summarize(context.Background(), s); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/line")
			})
		}
	}
}
