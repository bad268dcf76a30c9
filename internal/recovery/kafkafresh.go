package recovery

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// startingOffsetsPrefix starts StartFile when sources/<i>/0 is missing and Spark resolves the
// query's startingOffsets again (PlanKafkaRestart).
const startingOffsetsPrefix = "startingOffsets ("

// ResolvesStartingOffsets reports whether the source's start is unknown because Spark resolves
// the query's startingOffsets again (its sources/<i>/0 is missing); a nil Start otherwise means
// the initial offsets file is unreadable, which the planner and doctor report.
func (s KafkaRestartSource) ResolvesStartingOffsets() bool {
	return s.Start == nil && strings.HasPrefix(s.StartFile, startingOffsetsPrefix)
}

// PlanKafkaRestartFresh is PlanKafkaRestart for a query of querySources sources: a restart of
// a checkpoint without offsets (a fresh start) reads each Kafka source from its initial offsets,
// sources/<i>/0, where PlanKafkaRestart, which does not know the query's sources, has none.
// Non-Kafka or unreadable initial offsets files are left out.
func PlanKafkaRestartFresh(ctx context.Context, cp *checkpoint.Checkpoint, res *Result, querySources int) (*KafkaRestart, error) {
	r, err := PlanKafkaRestart(ctx, cp, res)
	if err != nil || res.LatestOffsets != nil || (res.RerunBatch != nil && res.RerunRange != nil) {
		return r, err
	}
	batch := max(res.NextBatch, 0)
	for i := range querySources {
		rel := checkpoint.InitialOffsetsPath(i)
		s := KafkaRestartSource{Index: i, Batch: batch}
		ini, err := cp.ReadKafkaInitialOffsets(ctx, i)
		var le *logformat.Error
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.StartFile = startingOffsetsPrefix + rel + " is missing)"
		case errors.As(err, &le):
			continue // not a Kafka source, or unreadable: the planner reports it
		case err != nil:
			return nil, err
		default:
			s.Start, s.StartFile = &ini.Offsets, rel
		}
		r.Sources = append(r.Sources, s)
	}
	return r, nil
}
