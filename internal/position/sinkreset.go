package position

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StrategySinkReset names the sink half of an offsets reset in its journal (the sink's own store).
const StrategySinkReset journal.Strategy = "reset-sink"

// sinkDefaultCompactInterval is spark.sql.streaming.fileSink.log.compactInterval's default.
const sinkDefaultCompactInterval = 10

// SinkReset is the file sink half of an offsets reset. The reset writes batch L+1 into the
// checkpoint as committed, so Spark never runs it and the file sink never logs it: the sink's
// log would go from L to L+2, and Spark's allFiles (every spark.read of the output, and the
// sink's own next compaction) fails with "_spark_metadata/L+1 doesn't exist" (seen with Spark
// 3.5.7, 4.0.0 and 4.1.1: docs/spark-oracle.md). The sink half writes batch L+1's log entry with
// no file, what Spark writes for a batch without data.
type SinkReset struct {
	// Sink is the output directory (the store's root).
	Sink    string           `json:"sink"`
	Actions []journal.Action `json:"actions"`
}

// JournalPlan is the sink half in the form journal.Apply applies (to the sink's store).
func (p *SinkReset) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: StrategySinkReset, Actions: p.Actions}
}

// planSinkReset plans the empty log entry of batch next in sink (its output directory), whose log
// must end at batch next-1 as the checkpoint does. A compaction batch would need the entries of
// every earlier batch in one file: refused.
func planSinkReset(ctx context.Context, sink storage.Store, next int64) (*SinkReset, string, error) {
	es, err := sink.List(ctx, sinklog.Dir)
	if err != nil {
		return nil, "", err
	}
	latest := int64(-1)
	var compacts []int64
	for _, e := range es {
		name := path.Base(e.Path)
		if e.IsDir || !journal.IsSinkLogFile(e.Path) || strings.HasSuffix(name, ".crc") {
			continue
		}
		nm := logformat.ParseName(strings.TrimSuffix(name, ".compact"))
		if nm.Kind != logformat.NameBatch {
			continue
		}
		latest = max(latest, nm.Batch)
		if strings.HasSuffix(name, ".compact") {
			compacts = append(compacts, nm.Batch)
		}
	}
	if latest != next-1 {
		return nil, fmt.Sprintf("the file sink's log ends at batch %d, the checkpoint at batch %d: the reset writes batch %d into both, which needs them to agree (ckpt doctor --sink explains the difference)", latest, next-1, next), nil
	}
	slices.Sort(compacts)
	interval, _ := sinklog.CompactInterval(compacts, sinkDefaultCompactInterval)
	if sinklog.IsCompactionBatch(next, interval) {
		return nil, fmt.Sprintf("batch %d is a compaction batch of the file sink's log (interval %d): its entry would have to hold every file of the output, which ckpt offsets reset does not write. Let the query run one more batch first", next, interval), nil
	}
	p := &SinkReset{Sink: sink.URI(), Actions: []journal.Action{{Op: journal.OpWrite, Path: fmt.Sprintf("%s/%d", sinklog.Dir, next), Data: []byte("v1"),
		Reason: fmt.Sprintf("file sink log entry of batch %d, with no file: the batch never runs, and a log without it fails every reader of the output", next)}}}
	for i := range p.Actions {
		if err := journal.Fill(ctx, sink, &p.Actions[i]); err != nil {
			return nil, "", err
		}
	}
	return p, "", nil
}
