// Read limits of a batch: minOffsetsPerTrigger delay and maxOffsetsPerTrigger rate limiting.

package kafka

import (
	"math"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// delayBatch is Spark's delayBatch: true skips this trigger.
func (s *Source) delayBatch(minRows int64, latest, current map[logformat.TopicPartition]int64, maxDelay time.Duration) bool {
	now := s.clock.Now().UnixMilli()
	if now-s.lastTriggerMillis >= maxDelay.Milliseconds() {
		s.lastTriggerMillis = now
		return false
	}
	var newRecords int64
	for tp, off := range latest {
		newRecords += off - current[tp] // a partition not in current counts from 0
	}
	if float64(newRecords) < float64(minRows) {
		return true
	}
	s.lastTriggerMillis = now
	return false
}

// rateLimit is KafkaMicroBatchStream.rateLimit: distribute limit records over the partitions in
// proportion to their backlog. Partition p with backlog size gets prorate = limit * (size /
// total) computed in floating point (Long / Double in Scala), rounded up when below 1 so that
// small partitions are not starved and down otherwise; its end is min(until, begin + prorate).
// begin is from[p], or fromNew[p] for a partition new since the last batch. Partitions with
// nothing to read, or whose begin is unknown, keep their until offset.
func rateLimit(limit int64, from, until, fromNew map[logformat.TopicPartition]int64) map[logformat.TopicPartition]int64 {
	begin := func(tp logformat.TopicPartition) (int64, bool) {
		if b, ok := from[tp]; ok {
			return b, true
		}
		b, ok := fromNew[tp]
		return b, ok
	}
	sizes := map[logformat.TopicPartition]int64{}
	var sum int64 // Spark sums the Long sizes, then converts the sum to Double
	for tp := range until {
		b, ok := begin(tp)
		if !ok {
			continue
		}
		if size := until[tp] - b; size > 0 {
			sizes[tp] = size
			sum += size
		}
	}
	total := float64(sum)
	out := make(map[logformat.TopicPartition]int64, len(until))
	if total < 1 {
		for tp, end := range until {
			out[tp] = end
		}
		return out
	}
	for tp, end := range until {
		size, ok := sizes[tp]
		if !ok {
			out[tp] = end
			continue
		}
		b, _ := begin(tp)
		prorate := float64(limit) * (float64(size) / total)
		var pl int64
		switch {
		case prorate < 1:
			pl = int64(math.Ceil(prorate))
		case prorate >= math.MaxInt64:
			pl = math.MaxInt64 // Double.toLong saturates
		default:
			pl = int64(math.Floor(prorate))
		}
		off := int64(math.MaxInt64)
		if pl <= math.MaxInt64-b {
			off = b + pl
		}
		out[tp] = min(end, off)
	}
	return out
}
