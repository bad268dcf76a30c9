package topicstate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// PartitionCount is one partition of a re-run range (start, end]: what the checkpoint says and
// what really exists on the broker.
type PartitionCount struct {
	// Topic and Partition name the partition.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"` // see Topic
	// From is the first offset the batch reads: the start offset, or the log start for a
	// partition that is not in start (Spark reads new partitions from the earliest offset);
	// Unknown (-1) when neither the start offsets nor the broker have the partition.
	From int64 `json:"from"`
	// Until is the end offset (exclusive).
	Until int64 `json:"until"`
	// Offsets is Until − From, what subtracting the checkpoint offsets gives (0 when negative).
	Offsets int64 `json:"offsets"`
	// Records is what really exists: the offsets of [From, Until) inside the log's
	// [LogStart, LogEnd). Without Exact it counts offsets, an upper bound on the data records
	// of a transactional topic (commit and abort markers take offsets) or a compacted one.
	Records int64 `json:"records"`
	// AgedOut are the offsets of the range below the log start (deleted by retention or
	// DeleteRecords): the re-run cannot read them.
	AgedOut int64 `json:"agedOut"`
	// BeyondEnd are the offsets of the range at or above the log end (the topic was recreated,
	// or the high watermark went back).
	BeyondEnd int64 `json:"beyondEnd"`
	// LogStart and LogEnd are the broker's offsets; Unknown (-1) when the partition is gone.
	LogStart int64 `json:"logStart"`
	LogEnd   int64 `json:"logEnd"` // see LogStart
	// Exact is true when Records was counted by reading the records (CountExact): data records
	// only, control records excluded, aborted transactions excluded with read_committed.
	Exact bool `json:"exact"`
	// Note explains a partition whose numbers need it ("" otherwise).
	Note string `json:"note,omitempty"`
}

// CountRange counts, per partition of end, the records a batch over (start, end] reads that
// still exist on the broker: the range [start, end) clamped to [logStart, logEnd). It reads
// nothing from the broker (st holds the offsets); CountExact refines the counts by reading.
// Partitions of start that end lacks are not read by the batch and are left out, as Spark does.
func CountRange(st *recovery.BrokerState, start, end logformat.KafkaOffsets) []PartitionCount {
	from, until := start.Map(), end.Map()
	var out []PartitionCount
	for _, tp := range sortedKeys(until) {
		u := until[tp]
		c := PartitionCount{Topic: tp.Topic, Partition: tp.Partition, Until: u, LogStart: recovery.Unknown, LogEnd: recovery.Unknown}
		p, onBroker := st.Lookup(tp.Topic, tp.Partition)
		if onBroker {
			c.LogStart, c.LogEnd = p.Start, p.End
		}
		f, inStart := from[tp]
		switch {
		case inStart:
			c.From = f
		case onBroker:
			c.From = p.Start
			c.Note = "not in the start offsets: read from the earliest offset"
		default:
			c.From = recovery.Unknown
			c.Note = "not in the start offsets and not on the broker"
			out = append(out, c)
			continue
		}
		c.Offsets = max(0, u-c.From)
		switch {
		case !onBroker:
			c.Note = "partition not on the broker: nothing can be read"
		case u < c.From:
			c.Note = "the end offset is below the start offset: Spark reads nothing (the offset was changed)"
		default:
			lo, hi := max(c.From, p.Start), min(u, p.End)
			c.Records = max(0, hi-lo)
			c.AgedOut = max(0, min(u, p.Start)-c.From)
			c.BeyondEnd = max(0, u-max(c.From, p.End))
			switch {
			case c.AgedOut > 0 && c.BeyondEnd > 0:
				c.Note = "partly deleted and partly beyond the log end"
			case c.AgedOut > 0:
				c.Note = "partly deleted: below the log start"
			case c.BeyondEnd > 0:
				c.Note = "partly beyond the log end"
			}
		}
		out = append(out, c)
	}
	return out
}

// CountExact reads the existing part of each count's range ([max(From, LogStart),
// min(Until, LogEnd))) and sets Records to the number of data records in it and Exact to
// true. Control records are not counted; aborted transactional records are counted with
// read_uncommitted (Spark's default isolation) and skipped with read_committed, as the
// client's kafka.isolation.level says. A partition whose reading stalls for idle (no new
// record while the end is not reached: an open transaction under read_committed, say) keeps
// its upper bound and Exact false. It costs a read of every record in the ranges.
//
// cl must keep control records and not reset offsets, as clients from Flags.KgoClient do;
// calls on one client are serialized.
func CountExact(ctx context.Context, cl *kgo.Client, counts []PartitionCount, idle time.Duration) error {
	if idle <= 0 {
		idle = 5 * time.Second
	}
	type want struct {
		i      int
		lo, hi int64
		n      int64
		done   bool
	}
	wants := map[logformat.TopicPartition]*want{}
	for i, c := range counts {
		if c.LogStart < 0 || c.From < 0 {
			continue
		}
		lo, hi := max(c.From, c.LogStart), min(c.Until, c.LogEnd)
		if hi <= lo {
			counts[i].Records, counts[i].Exact = 0, true
			continue
		}
		tp := logformat.TopicPartition{Topic: c.Topic, Partition: c.Partition}
		if _, dup := wants[tp]; dup {
			return fmt.Errorf("topicstate: %s-%d listed twice", c.Topic, c.Partition)
		}
		wants[tp] = &want{i: i, lo: lo, hi: hi}
	}
	if len(wants) == 0 {
		return nil
	}
	unlock := lockClient(cl)
	defer unlock()
	assign := map[string]map[int32]kgo.Offset{}
	for tp, w := range wants {
		if assign[tp.Topic] == nil {
			assign[tp.Topic] = map[int32]kgo.Offset{}
		}
		assign[tp.Topic][tp.Partition] = kgo.NewOffset().At(w.lo)
	}
	cl.AddConsumePartitions(assign)
	defer cl.RemoveConsumePartitions(partitionLists(assign))

	pending := len(wants)
	lastProgress := time.Now()
	for pending > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Since(lastProgress) > idle {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		progressed := false
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			w := wants[logformat.TopicPartition{Topic: fp.Topic, Partition: fp.Partition}]
			if w == nil || w.done {
				return
			}
			if fp.Err != nil {
				return // out of range or similar: leave the upper bound
			}
			for _, r := range fp.Records {
				if r.Offset < w.lo {
					continue
				}
				progressed = true
				if r.Offset >= w.hi {
					w.done = true
					break
				}
				if !r.Attrs.IsControl() {
					w.n++
				}
				if r.Offset == w.hi-1 {
					w.done = true
					break
				}
			}
			if w.done {
				pending--
				counts[w.i].Records, counts[w.i].Exact = w.n, true
			}
		})
		if progressed {
			lastProgress = time.Now()
		}
	}
	return nil
}

func partitionLists(m map[string]map[int32]kgo.Offset) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range m {
		for p := range ps {
			out[t] = append(out[t], p)
		}
	}
	return out
}

// CountRestart counts, per re-running source of r with a known start and end, the records its
// recorded range holds on the broker (CountRange), by source index. Sources that start a new
// batch have no recorded range and no counts.
func CountRestart(r *recovery.KafkaRestart, st *recovery.BrokerState) map[int][]PartitionCount {
	out := map[int][]PartitionCount{}
	if r == nil {
		return out
	}
	for _, s := range r.Sources {
		if s.Rerun && s.Start != nil && s.End != nil {
			out[s.Index] = CountRange(st, *s.Start, *s.End)
		}
	}
	return out
}

func sortedKeys(m map[logformat.TopicPartition]int64) []logformat.TopicPartition {
	out := make([]logformat.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b logformat.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
