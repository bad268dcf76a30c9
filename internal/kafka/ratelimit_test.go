package kafka

import (
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

func tpm(kv ...int64) map[logformat.TopicPartition]int64 {
	m := map[logformat.TopicPartition]int64{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[logformat.TopicPartition{Topic: "t", Partition: int32(kv[i])}] = kv[i+1]
	}
	return m
}

// TestRateLimit checks rateLimit against results worked out by hand with Spark's formula:
// prorate = limit * (size / total) in doubles; ceil when < 1, floor otherwise;
// end = min(until, begin + prorate).
func TestRateLimit(t *testing.T) {
	tests := []struct {
		name                 string
		limit                int64
		from, until, fromNew map[logformat.TopicPartition]int64
		want                 map[logformat.TopicPartition]int64
	}{
		{
			// total 102: 10*(1/102)=0.098 -> ceil 1 (twice); 10*(100/102)=9.8 -> 9. 11 records: Spark overshoots.
			name: "limit 10 over sizes 1,1,100", limit: 10,
			from: tpm(0, 0, 1, 5, 2, 100), until: tpm(0, 1, 1, 6, 2, 200),
			want: tpm(0, 1, 1, 6, 2, 109),
		},
		{
			// 3*(10/70)=0.43 -> ceil 1 for each of 7 partitions: 7 records, more than the limit.
			name: "limit 3 over 7 partitions", limit: 3,
			from:  tpm(0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0),
			until: tpm(0, 10, 1, 10, 2, 10, 3, 10, 4, 10, 5, 10, 6, 10),
			want:  tpm(0, 1, 1, 1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1),
		},
		{
			// 7*0.1=0.7 -> 1; 7*0.2=1.4000000000000001 -> 1; 7*0.7=4.8999999999999995 -> 4: 6 records, fewer than 7.
			name: "limit 7 over sizes 10,20,70", limit: 7,
			from: tpm(0, 0, 1, 0, 2, 0), until: tpm(0, 10, 1, 20, 2, 70),
			want: tpm(0, 1, 1, 1, 2, 4),
		},
		{
			// 3*(1/3)=1.0 exactly in doubles -> floor 1.
			name: "limit 3 over sizes 1,1,1", limit: 3,
			from: tpm(0, 0, 1, 0, 2, 0), until: tpm(0, 1, 1, 1, 2, 1),
			want: tpm(0, 1, 1, 1, 2, 1),
		},
		{
			// A partition with nothing new keeps its until; the other is capped by until.
			name: "limit above backlog", limit: 100,
			from: tpm(0, 7, 1, 3), until: tpm(0, 7, 1, 6),
			want: tpm(0, 7, 1, 6),
		},
		{
			// New partition 1 begins at its earliest offset 40: sizes 100 and 60, total 160.
			// 16*(100/160)=10, 16*(60/160)=6.
			name: "new partition from earliest", limit: 16,
			from: tpm(0, 0), until: tpm(0, 100, 1, 100), fromNew: tpm(1, 40),
			want: tpm(0, 10, 1, 46),
		},
		{
			// Partition 1 has no known begin (vanished before its earliest offset was listed):
			// it keeps until and does not count in the total.
			name: "unknown begin", limit: 4,
			from: tpm(0, 0), until: tpm(0, 100, 1, 100),
			want: tpm(0, 4, 1, 100),
		},
		{
			// A negative range (topic recreated) is not a size: total < 1 returns until as is.
			name: "nothing to read", limit: 4,
			from: tpm(0, 50), until: tpm(0, 3),
			want: tpm(0, 3),
		},
		{
			// begin + prorate overflows: Spark saturates at Long.MaxValue, then min with until.
			name: "overflow guard", limit: math.MaxInt64,
			from: tpm(0, math.MaxInt64-10), until: tpm(0, math.MaxInt64-1),
			want: tpm(0, math.MaxInt64-1),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rateLimit(tc.limit, tc.from, tc.until, tc.fromNew)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for tp, w := range tc.want {
				if got[tp] != w {
					t.Errorf("%s: got %d, want %d (all: %v)", sparkTP(tp), got[tp], w, got)
				}
			}
		})
	}
}
