package position

import (
	"context"
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StrategyRewind names a rewind in its journal.
const StrategyRewind journal.Strategy = "rewind"

// RewindOptions configures PlanRewind. Exactly one of ToBatch and ToTime is set.
type RewindOptions struct {
	// Checkpoint is the checkpoint of s loaded a moment before (checkpoint.LoadAt); nil: Load.
	Checkpoint *checkpoint.Checkpoint
	// ToBatch is the batch the query stands at afterwards: it re-executes from ToBatch+1.
	ToBatch *int64
	// ToTime picks the last batch whose batch timestamp is at or before it.
	ToTime *time.Time
	// KafkaSink says the query writes to Kafka, which cannot take records back: the rewind is
	// refused unless AllowDuplicates.
	KafkaSink, AllowDuplicates bool
	// Sink is a file sink's output directory (--sink), nil without one: its log entries above N
	// move too, in a journal of their own in the sink's store.
	Sink    storage.Store
	Planner recovery.Options
}

// RewindPlan is what PlanRewind would do.
type RewindPlan struct {
	Checkpoint string `json:"checkpoint"`
	// Batch is N, the batch the query stands at afterwards; Latest the latest offsets before.
	Batch  int64 `json:"batch"`
	Latest int64 `json:"latest"`
	// BatchTimestampMs is N's batch timestamp (how --to-time chose it).
	BatchTimestampMs int64 `json:"batchTimestampMs"`
	// Offsets, Commits and StateFiles count the files moved into the backup.
	Offsets    int `json:"offsets"`
	Commits    int `json:"commits"`
	StateFiles int `json:"stateFiles"`
	// RerunFrom-RerunTo are the committed batches the query runs again (N+1..the latest commit;
	// none when RerunTo < RerunFrom), RerunRecords the Kafka records they read (offset
	// differences), null without a Kafka source.
	RerunFrom    int64  `json:"rerunFrom"`
	RerunTo      int64  `json:"rerunTo"`
	RerunRecords *int64 `json:"rerunRecords"`
	// DuplicateRecords is what a Kafka sink receives a second time (--allow-duplicates): the
	// records of the committed batches run again, as input records (a stateless query with one
	// output per input writes as many).
	DuplicateRecords *int64 `json:"duplicateRecords,omitempty"`
	// Sink is the file sink half (--sink), applied after the checkpoint's.
	Sink     *SinkRewind      `json:"sink,omitempty"`
	Actions  []journal.Action `json:"actions"`
	Before   *recovery.Result `json:"before"`
	After    *recovery.Result `json:"after"`
	Refused  string           `json:"refused,omitempty"`
	Warnings []string         `json:"warnings"`

	options recovery.Options
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *RewindPlan) JournalPlan() *journal.Plan {
	as := p.Actions
	if p.Sink != nil {
		as = withSink(as, p.Sink.Actions)
	}
	return &journal.Plan{Strategy: StrategyRewind, Actions: as, After: p.After, Options: p.options}
}

// PlanRewind plans moving the checkpoint in s back to batch N: offsets and commits above N and
// state versions above N+1 go into the backup, so the next run re-executes from batch N+1 with
// the offsets it records then.
func PlanRewind(ctx context.Context, s storage.Store, opts RewindOptions) (*RewindPlan, error) {
	cp, err := loaded(ctx, s, opts.Checkpoint)
	if err != nil {
		return nil, err
	}
	p := &RewindPlan{Checkpoint: s.URI(), Actions: []journal.Action{}, Warnings: []string{}, options: opts.Planner}
	if p.Before, err = recovery.Plan(ctx, cp, opts.Planner); err != nil {
		return nil, err
	}
	L, ok := cp.Offsets.Latest()
	if !ok {
		p.Refused = "the checkpoint has no offsets: there is nothing to rewind"
		return p, nil
	}
	p.Latest = L
	N, err := rewindTarget(ctx, cp, opts)
	if err != nil {
		return nil, err
	}
	p.Batch, p.RerunFrom, p.RerunTo = N, N+1, N
	seq, err := cp.ReadOffsets(ctx, N)
	if err != nil {
		return nil, err
	}
	if seq.Metadata != nil {
		p.BatchTimestampMs = seq.Metadata.BatchTimestampMs
	}
	if !cp.Commits.Has(N) {
		p.Refused = fmt.Sprintf("batch %d has no commit: the query would run it again from offsets it never finished; pick a committed batch (%s)", N, committedList(cp))
		return p, nil
	}
	C, _ := cp.Commits.Latest()
	if L <= N && C <= N {
		return p, nil // already there
	}
	p.RerunFrom, p.RerunTo = N+1, C
	if rec := kafkaRecords(ctx, cp, N, C); rec != nil {
		p.RerunRecords = rec
	}
	if opts.Sink != nil {
		sr, refusal, err := planSinkRewind(ctx, opts.Sink, N)
		if err != nil {
			return nil, err
		}
		if refusal != "" {
			p.Refused = refusal
			return p, nil
		}
		if len(sr.Actions) > 0 {
			p.Sink = sr
		}
	}
	if opts.KafkaSink && C > N {
		// Only committed batches above N send their output again; an uncommitted batch
		// re-runs on any restart, rewound or not.
		if p.RerunRecords != nil {
			p.DuplicateRecords = p.RerunRecords
		}
		if !opts.AllowDuplicates {
			p.Refused = fmt.Sprintf("the query writes to Kafka, which cannot take records back: re-running batches %s writes their output again (%s). Pass --allow-duplicates to rewind anyway",
				idRange(N+1, C), recordsText(p.RerunRecords))
			return p, nil
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("--allow-duplicates: the Kafka sink receives the output of batches %s again (%s)", idRange(N+1, C), recordsText(p.RerunRecords)))
	}

	var actions []journal.Action
	// Commits first, newest first, then offsets, then state: at every step a commit has its
	// offsets, and a crash leaves a checkpoint the journal explains.
	for _, l := range []*checkpoint.Log{cp.Commits, cp.Offsets} {
		for i := len(l.IDs()) - 1; i >= 0 && l.IDs()[i] > N; i-- {
			// A million batches take seconds here: a signal must not wait for them.
			if (len(l.IDs())-1-i)%4096 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			actions = append(actions, batchFiles(l, l.IDs()[i], fmt.Sprintf("batch %d is above batch %d: it runs again", l.IDs()[i], N))...)
			if l == cp.Commits {
				p.Commits++
			} else {
				p.Offsets++
			}
		}
	}
	state, err := s.Walk(ctx, checkpoint.DirState)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(state, func(i, j int) bool {
		vi, _ := journal.StateVersion(state[i].Path)
		vj, _ := journal.StateVersion(state[j].Path)
		return vi > vj
	})
	for _, e := range state {
		v, ok := journal.StateVersion(e.Path)
		if !ok || v <= N+1 {
			continue
		}
		actions = append(actions, journal.Action{Op: journal.OpDelete, Path: e.Path,
			Reason: fmt.Sprintf("state version %d, written by batch %d: batch %d loads version %d", v, v-1, N+1, N+1)})
		if !isCRC(e.Path) {
			p.StateFiles++
		}
	}
	p.Actions, p.After, p.Refused, err = finish(ctx, cp, actions, opts.Planner, N+1)
	return p, err
}

// rewindTarget resolves --to-batch or --to-time to N.
func rewindTarget(ctx context.Context, cp *checkpoint.Checkpoint, opts RewindOptions) (int64, error) {
	if opts.ToBatch != nil {
		N := *opts.ToBatch
		if !cp.Offsets.Has(N) {
			return 0, fmt.Errorf("--to-batch %d: offsets/%d does not exist (offsets: %s)", N, N, idsText(cp.Offsets.IDs()))
		}
		return N, nil
	}
	if opts.ToTime == nil {
		return 0, fmt.Errorf("give --to-batch or --to-time")
	}
	at := opts.ToTime.UnixMilli()
	for i := len(cp.Offsets.IDs()) - 1; i >= 0; i-- {
		id := cp.Offsets.IDs()[i]
		seq, err := cp.ReadOffsets(ctx, id)
		if err != nil {
			return 0, err
		}
		if seq.Metadata != nil && seq.Metadata.BatchTimestampMs <= at {
			return id, nil
		}
	}
	return 0, fmt.Errorf("--to-time %s: no batch has a batch timestamp at or before it", opts.ToTime.UTC().Format(time.RFC3339))
}

// batchFiles are the delete actions of batch id in l: the file and its checksums (Hadoop's
// .N.crc and the N.crc of Spark's checksum file manager).
func batchFiles(l *checkpoint.Log, id int64, reason string) []journal.Action {
	p := l.FilePath(id)
	out := []journal.Action{{Op: journal.OpDelete, Path: p, Reason: reason}}
	name := path.Base(p)
	for _, es := range [][]storage.Entry{l.Checksums, l.Others} {
		for _, c := range es {
			if !c.IsDir && (path.Base(c.Path) == "."+name+".crc" || path.Base(c.Path) == name+".crc") {
				out = append(out, journal.Action{Op: journal.OpDelete, Path: c.Path, Reason: "checksum of " + p + ", moved with it"})
			}
		}
	}
	return out
}

// kafkaRecords counts the Kafka records between the ends of batches from and to (offset
// differences), nil when neither is a Kafka batch.
func kafkaRecords(ctx context.Context, cp *checkpoint.Checkpoint, from, to int64) *int64 {
	if to <= from {
		z := int64(0)
		return &z
	}
	a, err1 := cp.ReadOffsets(ctx, from)
	b, err2 := cp.ReadOffsets(ctx, to)
	if err1 != nil || err2 != nil {
		return nil
	}
	sa, sb := sourcesOf(cp.Offsets.Path(from), a), sourcesOf(cp.Offsets.Path(to), b)
	var n int64
	found := false
	for i, s := range sb {
		if s.kind != KindKafka || i >= len(sa) || sa[i].kind != KindKafka {
			continue
		}
		found = true
		start := sa[i].kafka.Map()
		for tp, end := range s.kafka.Map() {
			if st, ok := start[tp]; ok && end > st {
				n += end - st
			}
		}
	}
	if !found {
		return nil
	}
	return &n
}

func isCRC(p string) bool { return path.Ext(p) == ".crc" }

func committedList(cp *checkpoint.Checkpoint) string {
	var ids []int64
	for _, id := range cp.Commits.IDs() {
		if cp.Offsets.Has(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "none is committed"
	}
	return "committed: " + idsText(ids)
}

func idsText(ids []int64) string {
	if len(ids) == 0 {
		return "none"
	}
	if len(ids) > 8 {
		return fmt.Sprintf("%d-%d (%d files)", ids[0], ids[len(ids)-1], len(ids))
	}
	return fmt.Sprint(ids)
}

// loaded is cp, or the checkpoint of s loaded now when cp is nil.
func loaded(ctx context.Context, s storage.Store, cp *checkpoint.Checkpoint) (*checkpoint.Checkpoint, error) {
	if cp != nil {
		return cp, nil
	}
	return checkpoint.Load(ctx, s)
}

func idRange(from, to int64) string {
	if from == to {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d-%d", from, to)
}

func recordsText(n *int64) string {
	if n == nil {
		return "an unknown number of records"
	}
	return fmt.Sprintf("%d Kafka input record(s)", *n)
}
