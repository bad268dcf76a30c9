package repair

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// sourcePartition keys a Kafka position by source index and topic-partition.
type sourcePartition struct {
	source int
	tp     logformat.TopicPartition
}

// positions are per-partition Kafka offsets ("next offset to read"); known is false when some
// Kafka source's position cannot be known (startingOffsets resolved again at restart).
type positions struct {
	m     map[sourcePartition]int64
	known bool
	kafka bool // some source is Kafka
}

// replayCost compares where the restart after a repair starts reading with where delivered output
// ends in the original checkpoint. Delivered means committed (the newest batch with both an offsets
// file and a commit), or, with --sink, present in the file sink's log. The restart's start and the
// re-run come from the planner's result on the repaired checkpoint; ckpt only subtracts Kafka
// offsets, or, with the broker's state, counts the offsets between them that still exist there.
func replayCost(ctx context.Context, orig, cur *checkpoint.Checkpoint, after *recovery.Result, sinkLatest *int64, broker *recovery.BrokerState) (Replay, error) {
	r := Replay{ReplayedBatches: Batches{}, LostBatches: Batches{}, SkippedBatches: Batches{}, NextBatch: after.NextBatch, RerunBatch: after.RerunBatch}
	if after.Skipped != nil {
		r.SkippedBatches = Batches{after.Skipped.Span}
	}
	count := newCounter(broker)
	r.BrokerCounts = broker != nil
	if after.RerunBatch != nil {
		var sum int64
		have := false
		for _, k := range after.Kafka {
			if n, ok := count.rerun(k); ok {
				sum += n
				have = true
			}
		}
		if have {
			r.RerunRecords = &sum
		}
	}
	if after.Blocked() {
		return r, nil
	}
	delivered := int64(-1)
	for i := len(orig.Commits.IDs()) - 1; i >= 0; i-- {
		if id := orig.Commits.IDs()[i]; orig.Offsets.Has(id) {
			delivered = id
			break
		}
	}
	if sinkLatest != nil && *sinkLatest > delivered && orig.Offsets.Has(*sinkLatest) {
		delivered = *sinkLatest
	}
	// Batches the restart never processes again and nothing says were delivered are lost, and so
	// are batches the file sink will skip as "already committed" while they carry new data.
	for _, sp := range r.SkippedBatches {
		if sp.To > delivered {
			r.LostBatches = r.LostBatches.Add(recovery.Span{From: max(sp.From, delivered+1), To: sp.To})
		}
	}
	if sinkLatest != nil && after.Sink != nil && after.Sink.Status == recovery.SinkAhead {
		from := after.NextBatch
		if after.RerunBatch != nil {
			from = *after.RerunBatch + 1
		}
		if from <= *sinkLatest {
			r.LostBatches = r.LostBatches.Add(recovery.Span{From: from, To: *sinkLatest})
		}
	}
	if delivered < 0 {
		return r, nil
	}
	if first := after.NextBatch; first >= 0 && first <= delivered {
		r.ReplayedBatches = Batches{{From: first, To: delivered}}
	}
	end, err := orig.ReadOffsets(ctx, delivered)
	if err != nil {
		return r, nil // unreadable: the records are unknown, the batches are still right
	}
	from := kafkaOf(orig, delivered, end.Sources)
	if !from.kafka {
		return r, nil
	}
	start, err := restartPositions(ctx, cur, after, len(end.Sources))
	if err != nil {
		return r, err
	}
	if !start.known || !from.known {
		return r, nil
	}
	var replayed, lost int64
	for k, f := range from.m {
		s, ok := start.m[k]
		if !ok {
			continue
		}
		if f > s {
			replayed += count.records(k.tp, s, f)
		} else {
			lost += count.records(k.tp, f, s)
		}
	}
	r.ReplayedRecords, r.LostRecords = &replayed, &lost
	if lost == 0 && after.RerunBatch != nil && len(start.m) >= len(from.m) {
		// The re-run starts at or before the delivered end on every partition (copy-committed):
		// the skipped ids' records are read again within it, so no batch's data is lost.
		for _, sp := range r.SkippedBatches {
			if sp.From < *after.RerunBatch {
				r.LostBatches = r.LostBatches.Remove(recovery.Span{From: sp.From, To: min(sp.To, *after.RerunBatch-1)})
			}
		}
	}
	return r, nil
}

// kafkaOf reads the Kafka positions of offsets lines (non-Kafka sources are skipped).
func kafkaOf(cp *checkpoint.Checkpoint, id int64, srcs []logformat.SourceOffset) positions {
	p := positions{m: map[sourcePartition]int64{}, known: true}
	for i, s := range srcs {
		if s.Void {
			continue
		}
		ko, err := logformat.ParseKafkaOffsets(cp.Offsets.Path(id), s.JSON)
		if err != nil {
			continue
		}
		p.kafka = true
		for tp, off := range ko.Map() {
			p.m[sourcePartition{i, tp}] = off
		}
	}
	return p
}

// restartPositions is where the restart starts reading each Kafka partition: the planner's
// (recovery.PlanKafkaRestartFresh: the start of the re-run batch, else the end of the latest
// offsets file, else, a fresh start, the initial offsets in sources/<i>/0). A source whose
// start Spark resolves again from startingOffsets makes the positions unknown.
func restartPositions(ctx context.Context, cp *checkpoint.Checkpoint, after *recovery.Result, nSources int) (positions, error) {
	p := positions{m: map[sourcePartition]int64{}, known: true}
	rs, err := recovery.PlanKafkaRestartFresh(ctx, cp, after, nSources)
	if err != nil {
		return p, err
	}
	for _, s := range rs.Sources {
		if s.ResolvesStartingOffsets() {
			p.known = false
		}
		if s.Start == nil {
			continue
		}
		p.kafka = true
		for tp, off := range s.Start.Map() {
			p.m[sourcePartition{s.Index, tp}] = off
		}
	}
	return p, nil
}
