// Package lag computes how far a Structured Streaming query is behind its Kafka topics, from
// the checkpoint alone (Spark commits nothing to a consumer group): per partition, the offset
// of the latest commit, the broker's latest offset, the lag in records and, from record
// timestamps, in time. It also writes the result as Prometheus metrics and mirrors the
// committed offsets into a consumer group for existing lag tools. `ckpt lag` renders it.
package lag

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Position is where one checkpoint stands: its latest commit and, per Kafka source, the
// committed offsets and those of the batch in flight.
type Position struct {
	// Location is the checkpoint as given.
	Location string
	// LastCommit is the newest readable commits/ id; nil when nothing was committed yet (or no
	// commit file near the end of the log can be read).
	LastCommit *int64
	// CorruptCommits are the commit files newer than LastCommit that cannot be read, newest
	// first: a corrupt latest commit is not the last commit.
	CorruptCommits []CommitProblem
	// LastCommitTime is the modification time of that commit file (zero when unknown).
	LastCommitTime time.Time
	// InFlight is the latest offsets/ id when it has no commit (the batch running, or the one
	// a restart re-runs); nil when the latest batch is committed.
	InFlight *int64
	// Sources are the Kafka sources, by index.
	Sources []SourcePosition
	// Restart is the planner's prediction of a restart now (sync engine, Spark's default
	// release; with the broker once Replan ran): a lag is no "ok" when the query cannot restart.
	Restart *recovery.Result

	cp *checkpoint.Checkpoint
}

// Replan predicts the restart again with the broker's offsets (recovery.Options.Broker), so
// that Restart says what the broker makes of it (records gone, partitions removed).
func (p *Position) Replan(ctx context.Context, st *recovery.BrokerState) error {
	if p.cp == nil {
		return nil
	}
	res, err := recovery.Plan(ctx, p.cp, recovery.Options{Broker: st})
	if err != nil {
		return err
	}
	p.Restart = res
	return nil
}

// SourcePosition is one Kafka source of a checkpoint.
type SourcePosition struct {
	// Index is the source's line in the offsets files (sources/<Index>/).
	Index int
	// Committed are the offsets the next batch starts from: offsets/C of the latest commit C
	// (a batch's end offsets are the next batch's start), or, before the first commit, the
	// initial offsets sources/<Index>/0. Nil when there are neither.
	Committed *logformat.KafkaOffsets
	// CommittedFile is where Committed comes from ("offsets/5", "sources/0/0").
	CommittedFile string
	// InFlight are the end offsets of the batch in flight; nil when there is none.
	InFlight *logformat.KafkaOffsets
}

// ReadPosition reads the latest commit and offsets of a checkpoint: one or two offsets files
// (and sources/<i>/0 before the first commit). A checkpoint with no batch yet has no sources.
func ReadPosition(ctx context.Context, cp *checkpoint.Checkpoint, location string) (*Position, error) {
	pos := &Position{Location: location, cp: cp}
	L, hasL := cp.Offsets.Latest()
	C, hasC, corrupt, err := readableCommit(ctx, cp)
	if err != nil {
		return nil, err
	}
	pos.CorruptCommits = corrupt
	byIndex := map[int]*SourcePosition{}
	var order []int
	get := func(i int) *SourcePosition {
		if sp, ok := byIndex[i]; ok {
			return sp
		}
		byIndex[i] = &SourcePosition{Index: i}
		order = append(order, i)
		return byIndex[i]
	}
	// Where the query stands is the planner's (sync engine, Spark's default release): the offsets
	// its restart's first batch starts from (recovery.PlanKafkaRestart), which differ from
	// offsets/C when commits lag behind or before the first commit.
	res, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		return nil, err
	}
	pos.Restart = res
	if hasC {
		pos.LastCommit = &C
		if e, ok := cp.Commits.File(C); ok {
			// The listing has names only: one stat for the time.
			if st, err := cp.Store.Stat(ctx, e.Path); err == nil {
				pos.LastCommitTime = st.ModTime
			}
		}
		if !cp.Offsets.Has(C) {
			return nil, fmt.Errorf("%s: %s exists but %s does not, so the committed offsets are unknown (run ckpt doctor)", location, cp.Commits.Path(C), cp.Offsets.Path(C))
		}
	}
	if hasL && (!hasC || L > C) {
		pos.InFlight = &L
		seq, err := cp.ReadOffsets(ctx, L)
		if err != nil {
			return nil, err
		}
		for _, s := range recovery.KafkaSources(seq) {
			get(s.Index).InFlight = &s.Offsets
		}
	}
	if !res.Failed() {
		rs, err := recovery.PlanKafkaRestart(ctx, cp, res)
		if err != nil {
			return nil, err
		}
		for _, rsrc := range rs.Sources {
			sp := get(rsrc.Index)
			sp.Committed, sp.CommittedFile = rsrc.Start, rsrc.StartFile
		}
	} else if err := lastCommitted(ctx, cp, C, hasC, pos.InFlight != nil, get); err != nil {
		return nil, err
	}
	slices.Sort(order)
	for _, i := range order {
		pos.Sources = append(pos.Sources, *byIndex[i])
	}
	return pos, nil
}

// lastCommitted sets the sources' positions when the restart fails and so reads nowhere: what
// the last commit recorded, offsets/C (a batch's end offsets are the next batch's start), or,
// before the first commit, the initial offsets of the sources in flight (sources/<i>/0). These
// are facts of the files, not a restart prediction.
func lastCommitted(ctx context.Context, cp *checkpoint.Checkpoint, C int64, hasC, inFlight bool, get func(int) *SourcePosition) error {
	if hasC {
		seq, err := cp.ReadOffsets(ctx, C)
		if err != nil {
			return err
		}
		for _, s := range recovery.KafkaSources(seq) {
			sp := get(s.Index)
			sp.Committed, sp.CommittedFile = &s.Offsets, cp.Offsets.Path(C)
		}
		return nil
	}
	if !inFlight {
		return nil
	}
	L, _ := cp.Offsets.Latest()
	seq, err := cp.ReadOffsets(ctx, L)
	if err != nil {
		return err
	}
	for _, s := range recovery.KafkaSources(seq) {
		ini, err := cp.ReadKafkaInitialOffsets(ctx, s.Index)
		var le *logformat.Error
		switch {
		case err == nil:
			sp := get(s.Index)
			sp.Committed, sp.CommittedFile = &ini.Offsets, checkpoint.InitialOffsetsPath(s.Index)
		case errors.Is(err, fs.ErrNotExist), errors.As(err, &le):
		default:
			return err
		}
	}
	return nil
}

// Topics returns every topic the checkpoint's Kafka sources name.
func (p *Position) Topics() []string {
	var offs []logformat.KafkaOffsets
	for _, s := range p.Sources {
		if s.Committed != nil {
			offs = append(offs, *s.Committed)
		}
		if s.InFlight != nil {
			offs = append(offs, *s.InFlight)
		}
	}
	return recovery.KafkaTopics(offs...)
}

// CommitProblem is a commit file that cannot be parsed.
type CommitProblem struct {
	// Batch is the commit's batch id; File its path ("commits/7").
	Batch int64  `json:"batch"`
	File  string `json:"file"`
	// Problem is the parser's message: the file, the line and what was expected.
	Problem string `json:"problem"`
}

// maxCorruptCommits bounds the walk back from a corrupt latest commit: a few damaged files are
// reported, a damaged log is not read whole.
const maxCorruptCommits = 10

// readableCommit returns the newest commit whose file parses, and the corrupt ones above it.
// Only parse failures are skipped; an I/O error is returned.
func readableCommit(ctx context.Context, cp *checkpoint.Checkpoint) (int64, bool, []CommitProblem, error) {
	ids := cp.Commits.IDs()
	var corrupt []CommitProblem
	for i := len(ids) - 1; i >= 0 && len(corrupt) < maxCorruptCommits; i-- {
		_, err := cp.ReadCommit(ctx, ids[i])
		var le *logformat.Error
		switch {
		case err == nil:
			return ids[i], true, corrupt, nil
		case errors.As(err, &le):
			corrupt = append(corrupt, CommitProblem{Batch: ids[i], File: cp.Commits.FilePath(ids[i]), Problem: le.Error()})
		case errors.Is(err, fs.ErrNotExist):
			// Deleted since the listing: the next one down is the latest now.
		default:
			return 0, false, nil, err
		}
	}
	return 0, false, corrupt, nil
}
