// Offset ranges of a batch, with Spark's data-loss checks on them.

package kafka

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// OffsetRange is one partition's part of a batch: offsets [From, Until).
type OffsetRange struct {
	logformat.TopicPartition
	From, Until int64 // the first offset to read and the offset to stop before
}

// Size is the number of offsets in the range.
func (r OffsetRange) Size() int64 { return r.Until - r.From }

// Ranges plans the batch (start, end] as Spark's getOffsetRangesFromResolvedOffsets: new
// partitions start at their earliest offset, and the data-loss checks run in Spark's order:
//  1. new partitions that vanished: "Cannot find earliest offsets of Set(...). Some data may have been missed"
//  2. a new partition not starting at 0: "Added partition t-p starts from X instead of 0. Some data may have been missed"
//  3. partitions of start missing from end: "Set(...) are gone. Some data may have been missed."
//  4. an end below its start: "Partition t-p's offset was changed from X to Y, some data may have been missed"
//
// With failOnDataLoss the first one is a *DataLossError with Spark's full message; without,
// each becomes a warning, gone partitions are dropped and ranges with nothing to read (negative
// ones included) are left out. The ranges are sorted by topic and partition.
func (s *Source) Ranges(ctx context.Context, start, end logformat.KafkaOffsets) ([]OffsetRange, []string, error) {
	from, until := start.Map(), end.Map()
	var newTPs []logformat.TopicPartition
	for _, tp := range keysOf(until) {
		if _, ok := from[tp]; !ok {
			newTPs = append(newTPs, tp)
		}
	}
	newInitial, err := s.fetchEarliestOf(ctx, newTPs)
	if err != nil {
		return nil, nil, err
	}
	rep := &reporter{fail: s.o.FailOnDataLoss}
	var vanished []logformat.TopicPartition
	for _, tp := range newTPs {
		if _, ok := newInitial[tp]; !ok {
			vanished = append(vanished, tp)
		}
	}
	if len(vanished) > 0 {
		if err := rep.driver(LossCannotFindEarliest, dataloss.CannotFindEarliest(dataloss.PartitionSet(vanished)), vanished...); err != nil {
			return nil, nil, err
		}
	}
	for _, tp := range keysOf(newInitial) {
		if o := newInitial[tp]; o != 0 {
			if err := rep.driver(LossAddedPartitionNotAtZero, dataloss.AddedPartition(sparkTP(tp), o), tp); err != nil {
				return nil, nil, err
			}
		}
	}
	var gone []logformat.TopicPartition
	for _, tp := range keysOf(from) {
		if _, ok := until[tp]; !ok {
			gone = append(gone, tp)
		}
	}
	if len(gone) > 0 {
		msg := dataloss.Gone(dataloss.PartitionSet(gone), s.o.GroupID != "")
		// reportDataLoss appends ". " + instruction to this message too.
		if err := rep.driver(LossPartitionsGone, msg, gone...); err != nil {
			return nil, nil, err
		}
	}
	var ranges []OffsetRange
	for _, tp := range keysOf(until) {
		f, ok := from[tp]
		if !ok {
			if f, ok = newInitial[tp]; !ok {
				continue // vanished: no from offset
			}
		}
		u := until[tp]
		if u < f {
			if err := rep.driver(LossOffsetChanged, dataloss.OffsetChanged(sparkTP(tp), f, u), tp); err != nil {
				return nil, nil, err
			}
		}
		if u > f {
			ranges = append(ranges, OffsetRange{TopicPartition: tp, From: f, Until: u})
		}
	}
	return ranges, rep.warnings, nil
}
