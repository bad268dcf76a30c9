package position

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Start is one source's startingOffsets for a new checkpoint.
type Start struct {
	Source int        `json:"source"`
	Kind   SourceKind `json:"kind"`
	// StartingOffsets is the JSON for .option("startingOffsets", …), "" for a source that is not
	// Kafka (it has no startingOffsets of this form).
	StartingOffsets string `json:"startingOffsets,omitempty"`
	// Unseen are partitions the broker has and the checkpoint never saw, given -2 (earliest).
	Unseen []logformat.TopicPartition `json:"unseen,omitempty"`
	// Missing are topics the checkpoint reads that the broker does not have.
	Missing []string `json:"missing,omitempty"`
}

// Export is where a checkpoint stands, as startingOffsets.
type Export struct {
	Checkpoint string `json:"checkpoint"`
	// Batch is the latest committed batch, whose end offsets these are.
	Batch   int64   `json:"batch"`
	Sources []Start `json:"sources"`
	// Uncommitted is the latest batch when it is not committed: its records may be partly in
	// the sink already.
	Uncommitted *int64 `json:"uncommitted,omitempty"`
	// Sound is false when the recovery planner's restart of the checkpoint fails, or the newest
	// commit file cannot be read: the position is then not where a restart of this checkpoint
	// resumes, and Warnings say why.
	Sound bool `json:"sound"`
	// Restart is the planner's one-line verdict on a restart of the checkpoint.
	Restart  string   `json:"restart"`
	Warnings []string `json:"warnings"`
}

// ExportOffsets returns the end offsets of the checkpoint's latest committed batch as Spark's
// startingOffsets, one per source. With a broker every current partition is listed (Spark
// requires all of them in startingOffsets), a partition the checkpoint never saw as -2.
func ExportOffsets(ctx context.Context, cp *checkpoint.Checkpoint, b Broker) (*Export, error) {
	return ExportOffsetsWith(ctx, cp, b, recovery.Options{})
}

// ExportOffsetsWith is ExportOffsets for the restart popts predicts: what is committed is the
// planner's view, so a newest commit file that does not parse (Spark's restart fails on it) is
// no committed batch, and the export says it is not sound.
func ExportOffsetsWith(ctx context.Context, cp *checkpoint.Checkpoint, b Broker, popts recovery.Options) (*Export, error) {
	x := &Export{Checkpoint: cp.Store.URI(), Sources: []Start{}, Warnings: []string{}, Sound: true}
	res, err := recovery.Plan(ctx, cp, popts)
	if err != nil {
		return nil, err
	}
	x.Restart = res.Verdict()
	N := int64(-1)
	for i := len(cp.Commits.IDs()) - 1; i >= 0; i-- {
		id := cp.Commits.IDs()[i]
		if !cp.Offsets.Has(id) {
			continue
		}
		if _, err := cp.ReadCommit(ctx, id); err != nil {
			var le *logformat.Error
			if !errors.As(err, &le) {
				return nil, err
			}
			x.Sound = false
			x.Warnings = append(x.Warnings, fmt.Sprintf("%s cannot be read (%s), so batch %d is not known to be committed: the position is the end of an older batch", cp.Commits.Path(id), le.Error(), id))
			continue
		}
		N = id
		break
	}
	if res.Blocked() {
		x.Sound = false
		x.Warnings = append(x.Warnings, "a restart of this checkpoint fails ("+res.Verdict()+"): this position is not where it would resume; ckpt doctor says why")
	}
	if N < 0 {
		return nil, fmt.Errorf("%s has no committed batch: there is no position to export", cp.Store.URI())
	}
	x.Batch = N
	if L, _ := cp.Offsets.Latest(); L > N {
		x.Uncommitted = &L
		x.Warnings = append(x.Warnings, fmt.Sprintf("batch(es) %s have offsets but no commit that can be read: their output may be partly written; a new query from these offsets processes them again", idRange(N+1, L)))
	}
	seq, err := cp.ReadOffsets(ctx, N)
	if err != nil {
		return nil, err
	}
	for _, src := range sourcesOf(cp.Offsets.Path(N), seq) {
		st := Start{Source: src.index, Kind: src.kind}
		if src.kind != KindKafka {
			x.Sources = append(x.Sources, st)
			continue
		}
		m := src.kafka.Map()
		if b != nil {
			for _, t := range src.kafka.Topics {
				ps, ok := b.Partitions(t.Topic)
				if !ok {
					st.Missing = append(st.Missing, t.Topic)
					continue
				}
				for _, p := range ps {
					tp := logformat.TopicPartition{Topic: t.Topic, Partition: p.Partition}
					if _, ok := m[tp]; !ok {
						st.Unseen = append(st.Unseen, tp)
					}
				}
			}
			sort.Slice(st.Unseen, func(i, j int) bool {
				a, c := st.Unseen[i], st.Unseen[j]
				return a.Topic < c.Topic || a.Topic == c.Topic && a.Partition < c.Partition
			})
			for _, tp := range st.Unseen {
				m[tp] = -2
			}
			for _, t := range st.Missing {
				x.Warnings = append(x.Warnings, fmt.Sprintf("source %d: topic %s does not exist on the broker; Spark fails to start from offsets of a missing topic", src.index, t))
			}
		}
		st.StartingOffsets = withOffsets(src.kafka, m).JSON()
		x.Sources = append(x.Sources, st)
	}
	return x, nil
}
