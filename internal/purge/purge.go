// Package purge plans `ckpt purge`: deleting the offsets and commits files older than the newest
// N batches (and, for a file sink, the log files Spark itself would expire) from checkpoints that
// grew to 100k+ files, never below what Spark needs. The plan is a journal.Plan, so it is applied
// with a backup and a journal and `ckpt repair undo` restores every byte.
package purge

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Strategy names a purge in its journal.
const Strategy = journal.StrategyPurge

// Options configure Plan.
type Options struct {
	// Keep is how many of the newest batches keep their offsets and commits files (at least
	// MinBatchesToRetain).
	Keep int
	// MinBatchesToRetain is the query's spark.sql.streaming.minBatchesToRetain (default 100):
	// Spark keeps that many, and so does purge at least.
	MinBatchesToRetain int
	// Sink is a file sink's output directory (--sink), nil without one: its log files Spark
	// would expire go too, in a plan of their own (SinkPlan).
	Sink storage.Store
	// Planner is the restart the purge must leave unchanged.
	Planner recovery.Options
	// Checkpoint is the checkpoint of the store loaded a moment before (checkpoint.LoadAt), nil:
	// NewPlan loads it. The plan after the purge is predicted on an overlay made from it.
	Checkpoint *checkpoint.Checkpoint
}

// Plan is what a purge would delete.
type Plan struct {
	Checkpoint string `json:"checkpoint"`
	// Keep is the number of newest batches kept; From is the oldest batch id kept (files below it
	// go), -1 when nothing goes.
	Keep int   `json:"keep"`
	From int64 `json:"from"`
	// Batches is the number of offsets files before the purge.
	Batches int `json:"batches"`
	// Offsets and Commits count the batch files deleted (their checksums go with them).
	Offsets int   `json:"offsets"`
	Commits int   `json:"commits"`
	Bytes   int64 `json:"bytes"`
	// Why says what decided From: --keep, or the files the restart reads.
	Why      string           `json:"why"`
	Actions  []journal.Action `json:"actions"`
	Before   *recovery.Result `json:"before"`
	After    *recovery.Result `json:"after"`
	Refused  string           `json:"refused,omitempty"`
	Warnings []string         `json:"warnings"`
	// Sink is the file sink half (--sink).
	Sink *SinkPlan `json:"sink,omitempty"`

	options recovery.Options
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *Plan) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: Strategy, Actions: p.Actions, After: p.After, Options: p.options}
}

// NewPlan plans the purge of the checkpoint in s.
func NewPlan(ctx context.Context, s storage.Store, o Options) (*Plan, error) {
	if o.MinBatchesToRetain <= 0 {
		o.MinBatchesToRetain = logformat.DefaultMinBatchesToRetain
	}
	if o.Keep < o.MinBatchesToRetain {
		return nil, fmt.Errorf("--keep %d is below minBatchesToRetain %d: Spark keeps that many itself (--min-batches-to-retain if the query sets it lower)", o.Keep, o.MinBatchesToRetain)
	}
	cp := o.Checkpoint
	if cp == nil || cp.Store != s {
		var err error
		if cp, err = checkpoint.Load(ctx, s); err != nil {
			return nil, err
		}
	}
	var err error
	p := &Plan{Checkpoint: s.URI(), Keep: o.Keep, From: -1, Actions: []journal.Action{}, Warnings: []string{}, options: o.Planner}
	if p.Before, err = recovery.Plan(ctx, cp, o.Planner); err != nil {
		return nil, err
	}
	ids := cp.Offsets.IDs()
	p.Batches = len(ids)
	if len(ids) > o.Keep {
		from := ids[len(ids)-o.Keep]
		p.Why = fmt.Sprintf("the newest %d offsets files are batches %d-%d", o.Keep, from, ids[len(ids)-1])
		// Never below the files the restart reads: the offsets file before the latest (the start
		// of the batch that runs next) and the latest commit with its offsets.
		if pb := p.Before.PreviousBatch; pb != nil && *pb < from {
			from = *pb
			p.Why = fmt.Sprintf("the restart reads offsets/%d", *pb)
		}
		if c, ok := cp.Commits.Latest(); ok && c < from {
			from = c
			p.Why = fmt.Sprintf("the latest commit is batch %d", c)
		}
		p.From = from
	}
	if p.From >= 0 {
		crcs := checksums(cp)
		add := func(l *checkpoint.Log, id int64) {
			f := l.FilePath(id)
			p.Actions = append(p.Actions, journal.Action{Op: journal.OpDelete, Path: f,
				Reason: fmt.Sprintf("batch %d is older than batch %d: Spark never reads it again", id, p.From)})
			for _, c := range crcs[f] {
				p.Actions = append(p.Actions, journal.Action{Op: journal.OpDelete, Path: c, Reason: "checksum of " + f + ", deleted with it"})
			}
		}
		// Oldest first, as Spark purges, each commit before its offsets: every state on the way
		// restarts as the checkpoint does now.
		ci := 0
		for i, id := range ids {
			if id >= p.From {
				break
			}
			// A million batches take seconds here: a signal must not wait for them.
			if i%4096 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			for ; ci < len(cp.Commits.IDs()) && cp.Commits.IDs()[ci] <= id; ci++ {
				add(cp.Commits, cp.Commits.IDs()[ci])
				p.Commits++
			}
			add(cp.Offsets, id)
			p.Offsets++
		}
		for ; ci < len(cp.Commits.IDs()) && cp.Commits.IDs()[ci] < p.From; ci++ {
			add(cp.Commits, cp.Commits.IDs()[ci])
			p.Commits++
		}
	}
	if err := p.verify(ctx, cp); err != nil {
		return nil, err
	}
	if o.Sink != nil {
		if p.Sink, err = planSink(ctx, o.Sink, o.Keep); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// verify fills the actions' digests (one read each, so that execute refuses a file that changed)
// and asks the planner what the restart does without the files: exactly what it does now.
func (p *Plan) verify(ctx context.Context, cp *checkpoint.Checkpoint) error {
	ov := journal.NewOverlay(cp) // lists nothing again: cp's listings without the files
	m := progress.From(ctx)
	m.Stage("reading the files to purge")
	m.Expect(progress.Read, len(p.Actions))
	for i := range p.Actions {
		a := &p.Actions[i]
		if err := ov.Add(ctx, a); err != nil {
			return err
		}
		m.Add(progress.Read, 1)
		p.Bytes += a.Size
	}
	var err error
	if p.After, err = ov.Predict(ctx, p.options); err != nil {
		return err
	}
	if p.After.Verdict() != p.Before.Verdict() {
		p.Refused = fmt.Sprintf("the recovery planner predicts %q after the purge, not %q as now", p.After.Verdict(), p.Before.Verdict())
		p.Actions = []journal.Action{}
	}
	return nil
}

// checksums maps a log file to its checksum files (Hadoop's .N.crc, Spark's N.crc).
func checksums(cp *checkpoint.Checkpoint) map[string][]string {
	out := map[string][]string{}
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		for _, es := range [][]storage.Entry{l.Checksums, l.Others} {
			for _, e := range es {
				if e.IsDir {
					continue
				}
				name := path.Base(e.Path)
				var file string
				switch {
				case len(name) > 5 && name[0] == '.' && path.Ext(name) == ".crc":
					file = name[1 : len(name)-4]
				case path.Ext(name) == ".crc":
					file = name[:len(name)-4]
				default:
					continue
				}
				f := path.Join(l.Dir, file)
				out[f] = append(out[f], e.Path)
			}
		}
	}
	return out
}

// SinkPlan is the file sink half of a purge: the log files Spark's deleteExpiredLog would delete
// (spark-semantics.md §8.1), in the sink's own store and journal.
type SinkPlan struct {
	Sink string `json:"sink"`
	// Latest is the sink log's latest batch, Interval its compact interval, Below the compaction
	// batch whose older files go.
	Latest   int64            `json:"latest"`
	Interval int              `json:"interval"`
	Below    int64            `json:"below"`
	Actions  []journal.Action `json:"actions"`
	Bytes    int64            `json:"bytes"`
}

// JournalPlan is the sink half in the form journal.Apply applies (no restart to verify).
func (sp *SinkPlan) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: Strategy, Actions: sp.Actions}
}

// planSink applies Spark's rule with minBatchesToRetain = keep: after the latest batch S, files
// of batches below minCompactionBatchId = m - m%interval - 1 (m = S+1-keep) are expired. The
// compaction file at minCompactionBatchId and everything after stay, so allFiles reads the same.
func planSink(ctx context.Context, st storage.Store, keep int) (*SinkPlan, error) {
	dir := sinklog.Dir
	if sinklog.Locate(st.URI()) == "" {
		dir = ""
	}
	entries, err := st.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	sp := &SinkPlan{Sink: st.URI(), Actions: []journal.Action{}, Below: -1}
	var compacts []int64
	type file struct {
		id   int64
		path string
	}
	var files []file
	crcs := map[string][]string{}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		n := logformat.ParseName(path.Base(e.Path))
		switch n.Kind {
		case logformat.NameBatch, logformat.NameCompact:
			files = append(files, file{n.Batch, e.Path})
			sp.Latest = max(sp.Latest, n.Batch)
			if n.Kind == logformat.NameCompact {
				compacts = append(compacts, n.Batch)
			}
		case logformat.NameChecksum:
			name := strings.TrimSuffix(strings.TrimPrefix(path.Base(e.Path), "."), ".crc")
			f := path.Join(path.Dir(e.Path), name)
			crcs[f] = append(crcs[f], e.Path)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--sink %s: no file sink log there", st.URI())
	}
	slices.Sort(compacts)
	sp.Interval, _ = sinklog.CompactInterval(compacts, 10)
	m := sp.Latest + 1 - int64(keep)
	if int64(sp.Interval) > m {
		return sp, nil // Spark deletes nothing yet
	}
	sp.Below = m - m%int64(sp.Interval) - 1
	for _, f := range files {
		if f.id >= sp.Below {
			continue
		}
		sp.Actions = append(sp.Actions, journal.Action{Op: journal.OpDelete, Path: f.path,
			Reason: fmt.Sprintf("sink log batch %d is below the compaction batch %d: Spark's deleteExpiredLog removes it", f.id, sp.Below)})
		for _, c := range crcs[f.path] {
			sp.Actions = append(sp.Actions, journal.Action{Op: journal.OpDelete, Path: c, Reason: "checksum of " + f.path + ", deleted with it"})
		}
	}
	for i := range sp.Actions {
		if err := journal.Fill(ctx, st, &sp.Actions[i]); err != nil {
			return nil, err
		}
		sp.Bytes += sp.Actions[i].Size
	}
	return sp, nil
}
