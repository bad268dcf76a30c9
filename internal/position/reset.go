package position

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StrategyReset names an offsets reset in its journal.
const StrategyReset journal.Strategy = "offsets-reset"

// ResetOptions configures PlanReset.
type ResetOptions struct {
	Target Target
	// Topics narrow the reset (--topic); none: every partition of every Kafka source.
	Topics []Selector
	// Broker resolves earliest, latest and timestamps, and counts the records skipped or read
	// again; nil: none (then only --to-offset, --shift-by and --from-file work, and counts are
	// offset differences).
	Broker Broker
	// AllowOutOfRange accepts offsets outside the broker's log (Spark then fails with
	// failOnDataLoss=true, or skips to the nearest existing offset with false).
	AllowOutOfRange bool
	// Now is the clock of --by-duration.
	Now time.Time
	// Planner is the restart to predict.
	Planner recovery.Options
	// Sink is the query's file sink output directory (--sink), nil without one: the reset then
	// also writes the sink log entry of the batch it writes (sinkreset.go).
	Sink storage.Store
	// Checkpoint is the checkpoint of s loaded a moment before (checkpoint.LoadAt); nil: Load.
	Checkpoint *checkpoint.Checkpoint
}

// Row is one partition of a reset plan.
type Row struct {
	Source    int    `json:"source"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Old is the offset the query stands at (the end of the latest batch), New where it resumes;
	// Old is null for a partition the checkpoint never had.
	Old *int64 `json:"old"`
	New int64  `json:"new"`
	// Skipped are records never read (New after Old), Reread records read a second time (New
	// before Old). Counted on the broker when there is one (only offsets that still exist
	// there), else offset differences.
	Skipped int64 `json:"skipped"`
	Reread  int64 `json:"reread"`
	// LogStart and LogEnd are the broker's log, null without a broker.
	LogStart *int64 `json:"logStart"`
	LogEnd   *int64 `json:"logEnd"`
	// OutOfRange says the new offset lies outside the broker's log.
	OutOfRange bool `json:"outOfRange,omitempty"`
}

// Changed reports whether the row moves the partition.
func (r Row) Changed() bool { return r.Old == nil || *r.Old != r.New }

// ResetPlan is what PlanReset would do.
type ResetPlan struct {
	Checkpoint string `json:"checkpoint"`
	// Batch is the latest batch L (committed); the reset writes batch L+1, and the query resumes
	// at L+2 from the new offsets.
	Batch    int64 `json:"batch"`
	NewBatch int64 `json:"newBatch"`
	Rows     []Row `json:"partitions"`
	// BrokerCounts is true when Skipped and Reread were counted on the broker.
	BrokerCounts bool `json:"brokerCounts"`
	// Actions are the file changes: offsets/L+1 written, commits/L+1 copied from commits/L.
	Actions []journal.Action `json:"actions"`
	// Before and After are the planner's restart of the checkpoint as it is and as the reset
	// leaves it.
	Before *recovery.Result `json:"before"`
	After  *recovery.Result `json:"after"`
	// Sink is the file sink half (--sink), applied after the checkpoint's.
	Sink *SinkReset `json:"sink,omitempty"`
	// Refused says why the reset may not be applied, "" when it may.
	Refused  string   `json:"refused,omitempty"`
	Warnings []string `json:"warnings"`

	options recovery.Options
}

// RefusedError is the error of a refused plan, for the exit code.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// PlanReset plans moving the Kafka offsets of the checkpoint in s to opts.Target. It reads and
// changes nothing on the broker beyond listing offsets, and nothing in s.
func PlanReset(ctx context.Context, s storage.Store, opts ResetOptions) (*ResetPlan, error) {
	cp, err := loaded(ctx, s, opts.Checkpoint)
	if err != nil {
		return nil, err
	}
	p := &ResetPlan{Checkpoint: s.URI(), Rows: []Row{}, Actions: []journal.Action{}, Warnings: []string{}, options: opts.Planner}
	if p.Before, err = recovery.Plan(ctx, cp, opts.Planner); err != nil {
		return nil, err
	}
	L, ok := cp.Offsets.Latest()
	if !ok {
		p.Refused = "the checkpoint has no offsets: the query has not run yet, so there is no position to move; give the new query startingOffsets instead"
		return p, nil
	}
	p.Batch, p.NewBatch = L, L+1
	if !cp.Commits.Has(L) {
		p.Refused = uncommittedRefusal(cp, L)
		return p, nil
	}
	if reason, err := statefulRefusal(ctx, cp); err != nil || reason != "" {
		p.Refused = reason
		return p, err
	}
	seq, err := cp.ReadOffsets(ctx, L)
	if err != nil {
		return nil, err
	}
	srcs := sourcesOf(cp.Offsets.Path(L), seq)
	if reason := sourceRefusal(srcs); reason != "" {
		p.Refused = reason
		return p, nil
	}
	if opts.Target.NeedsBroker() && opts.Broker == nil {
		return nil, fmt.Errorf("--%s needs the broker: give --bootstrap-server", opts.Target.Kind)
	}
	if err := checkSelectors(opts.Topics, srcs, opts.Target); err != nil {
		return nil, err
	}
	if err := checkPartitions(opts, srcs); err != nil {
		return nil, err
	}
	if bs, ok := opts.Broker.(interface{ State() *recovery.BrokerState }); ok && opts.Planner.Broker == nil {
		// The prediction after the reset, and its verification, see the broker's offsets too.
		opts.Planner.Broker = bs.State()
		if opts.AllowOutOfRange {
			// Offsets outside the log are meant for a query run with failOnDataLoss=false.
			opts.Planner.FailOnDataLossFalse = true
		}
		p.options = opts.Planner
	}
	var at map[logformat.TopicPartition]int64
	switch opts.Target.Kind {
	case ToDatetime, ByDuration:
		t := opts.Target.Time
		if opts.Target.Kind == ByDuration {
			t = opts.Now.Add(-opts.Target.Duration)
		}
		if at, err = opts.Broker.OffsetsAt(ctx, topicsOf(srcs), t); err != nil {
			return nil, err
		}
	}
	p.BrokerCounts = opts.Broker != nil

	newSeq := *seq
	newSeq.Sources = slices.Clone(seq.Sources)
	var outside []string
	for _, src := range srcs {
		if src.kind != KindKafka {
			continue
		}
		cur := src.kafka.Map()
		next := map[logformat.TopicPartition]int64{}
		for tp, o := range cur {
			next[tp] = o
		}
		if opts.Target.Kind == FromFile {
			// A file may add partitions of a topic the source reads (new since the batch).
			for tp := range opts.Target.File {
				if _, ok := cur[tp]; !ok && hasTopic(src.kafka, tp.Topic) {
					next[tp] = -1 // placeholder, resolved below
				}
			}
		}
		tps := make([]logformat.TopicPartition, 0, len(next))
		for tp := range next {
			tps = append(tps, tp)
		}
		sort.Slice(tps, func(i, j int) bool {
			return tps[i].Topic < tps[j].Topic || tps[i].Topic == tps[j].Topic && tps[i].Partition < tps[j].Partition
		})
		changed := false
		for _, tp := range tps {
			if !selected(opts.Topics, tp) {
				continue
			}
			old, had := cur[tp]
			var part *Partition
			if opts.Broker != nil {
				part = lookup(opts.Broker, tp)
			}
			n, ok, err := resolve(opts.Target, tp, old, part, at)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // not in the file
			}
			row := Row{Source: src.index, Topic: tp.Topic, Partition: tp.Partition, New: n}
			if had {
				row.Old = &old
			}
			if part != nil {
				row.LogStart, row.LogEnd = &part.Start, &part.End
				row.OutOfRange = n < part.Start || n > part.End
			}
			if row.OutOfRange {
				outside = append(outside, fmt.Sprintf("%s-%d: %d is outside the broker's log %d-%d", tp.Topic, tp.Partition, n, part.Start, part.End))
			}
			if had {
				if n > old {
					row.Skipped = count(part, old, n)
				} else {
					row.Reread = count(part, n, old)
				}
			}
			if n < 0 {
				return nil, fmt.Errorf("%s-%d: the new offset %d is negative (current %d); Spark stores real offsets only", tp.Topic, tp.Partition, n, old)
			}
			p.Rows = append(p.Rows, row)
			if row.Changed() {
				changed = true
				next[tp] = n
			}
		}
		for tp, o := range next {
			if o < 0 { // a partition the file named for another source's topic only
				delete(next, tp)
			}
		}
		if changed {
			newSeq.Sources[src.index].JSON = withOffsets(src.kafka, next).JSON()
		}
	}
	if len(outside) > 0 && !opts.AllowOutOfRange {
		p.Refused = "offsets outside the broker's log (Spark's failOnDataLoss=true stops the query; with false it skips to the nearest offset): " +
			strings.Join(outside, "; ") + ". Pass --allow-out-of-range to write them anyway"
		return p, nil
	}
	if len(outside) > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("--allow-out-of-range: %d partition(s) outside the broker's log", len(outside)))
	}
	if !slices.ContainsFunc(p.Rows, Row.Changed) {
		return p, nil // nothing moves
	}

	L1 := L + 1
	offs := journal.Action{Op: journal.OpWrite, Path: fmt.Sprintf("%s/%d", checkpoint.DirOffsets, L1), Data: newSeq.Marshal(),
		Reason: fmt.Sprintf("batch %d: offsets/%d with the new position, so the query resumes at batch %d from it", L1, L, L1+1)}
	commit := journal.Action{Op: journal.OpCopy, Path: fmt.Sprintf("%s/%d", checkpoint.DirCommits, L1), From: cp.Commits.Path(L),
		Reason: fmt.Sprintf("commit of batch %d, a copy of commits/%d (same watermark): batch %d is never run", L1, L, L1)}
	p.Actions, p.After, p.Refused, err = finish(ctx, cp, []journal.Action{offs, commit}, opts.Planner, L1+1)
	if err != nil || p.Refused != "" || opts.Sink == nil {
		return p, err
	}
	p.Sink, p.Refused, err = planSinkReset(ctx, opts.Sink, L1)
	return p, err
}

// finish fills the actions' digests, predicts the restart on an overlay with them applied, and
// refuses when the planner does not resume the query at batch next with nothing re-run.
func finish(ctx context.Context, cp *checkpoint.Checkpoint, actions []journal.Action, popts recovery.Options, next int64) ([]journal.Action, *recovery.Result, string, error) {
	after, err := journal.Predict(ctx, cp, actions, popts)
	if err != nil {
		return nil, nil, "", err
	}
	if after.Failed() || after.RerunBatch != nil || after.NextBatch != next {
		return []journal.Action{}, after, fmt.Sprintf("the recovery planner predicts %q afterwards, not a resume at batch %d with nothing re-run", after.Verdict(), next), nil
	}
	return actions, after, "", nil
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *ResetPlan) JournalPlan() *journal.Plan {
	as := p.Actions
	if p.Sink != nil {
		as = withSink(as, p.Sink.Actions)
	}
	return &journal.Plan{Strategy: StrategyReset, Actions: as, After: p.After, Options: p.options}
}

// withSink appends the file sink half to the checkpoint's actions, in one journal: an
// interruption anywhere is then finished or undone by one `ckpt repair resume|undo`, and the
// verification checks that the sink's log agrees with the checkpoint.
func withSink(cp, sink []journal.Action) []journal.Action {
	out := append([]journal.Action(nil), cp...)
	for _, a := range sink {
		a.Store = journal.StoreSink
		out = append(out, a)
	}
	return out
}

func lookup(b Broker, tp logformat.TopicPartition) *Partition {
	ps, ok := b.Partitions(tp.Topic)
	if !ok {
		return nil
	}
	for _, p := range ps {
		if p.Partition == tp.Partition {
			return &p
		}
	}
	return nil
}

// resolve is the new offset of one partition; ok is false when the target leaves it alone (a
// file that does not name it).
func resolve(t Target, tp logformat.TopicPartition, old int64, part *Partition, at map[logformat.TopicPartition]int64) (int64, bool, error) {
	needPart := func() error {
		if part == nil {
			return fmt.Errorf("--%s: the broker has no partition %s-%d", t.Kind, tp.Topic, tp.Partition)
		}
		return nil
	}
	switch t.Kind {
	case ToEarliest:
		if err := needPart(); err != nil {
			return 0, false, err
		}
		return part.Start, true, nil
	case ToLatest:
		if err := needPart(); err != nil {
			return 0, false, err
		}
		return part.End, true, nil
	case ToOffset:
		return t.Offset, true, nil
	case ShiftBy:
		return old + t.Shift, true, nil
	case ToDatetime, ByDuration:
		o, ok := at[tp]
		if !ok {
			return 0, false, fmt.Errorf("--%s: the broker listed no offset for %s-%d", t.Kind, tp.Topic, tp.Partition)
		}
		return o, true, nil
	case FromFile:
		o, ok := t.File[tp]
		return o, ok, nil
	}
	return 0, false, fmt.Errorf("unknown target %q", t.Kind)
}

// count is the number of records in [from, until): what still exists on the broker when it is
// known, else the difference.
func count(part *Partition, from, until int64) int64 {
	if until <= from {
		return 0
	}
	if part == nil {
		return until - from
	}
	return max(0, min(until, part.End)-max(from, part.Start))
}

// withOffsets is ko with the offsets of m, keeping ko's topic and partition order (Spark reads any
// order; keeping it makes the new file diff cleanly against the old one), new partitions last.
func withOffsets(ko logformat.KafkaOffsets, m map[logformat.TopicPartition]int64) logformat.KafkaOffsets {
	out := logformat.KafkaOffsets{}
	for _, t := range ko.Topics {
		nt := logformat.TopicOffsets{Topic: t.Topic}
		seen := map[int32]bool{}
		for _, p := range t.Partitions {
			seen[p.Partition] = true
			nt.Partitions = append(nt.Partitions, logformat.PartitionOffset{Partition: p.Partition, Offset: m[logformat.TopicPartition{Topic: t.Topic, Partition: p.Partition}]})
		}
		var extra []int32
		for tp := range m {
			if tp.Topic == t.Topic && !seen[tp.Partition] {
				extra = append(extra, tp.Partition)
			}
		}
		slices.Sort(extra)
		for _, p := range extra {
			nt.Partitions = append(nt.Partitions, logformat.PartitionOffset{Partition: p, Offset: m[logformat.TopicPartition{Topic: t.Topic, Partition: p}]})
		}
		out.Topics = append(out.Topics, nt)
	}
	return out
}

func checkSelectors(sels []Selector, srcs []source, t Target) error {
	for _, sel := range sels {
		if !slices.ContainsFunc(srcs, func(s source) bool { return hasTopic(s.kafka, sel.Topic) }) {
			return fmt.Errorf("--topic %s: no Kafka source of the checkpoint reads this topic (topics: %s)", sel.Topic, strings.Join(topicsOf(srcs), ", "))
		}
	}
	if t.Kind == FromFile {
		for tp := range t.File {
			if !slices.ContainsFunc(srcs, func(s source) bool { return hasTopic(s.kafka, tp.Topic) }) {
				return fmt.Errorf("--from-file: topic %s: no Kafka source of the checkpoint reads it (topics: %s)", tp.Topic, strings.Join(topicsOf(srcs), ", "))
			}
		}
	}
	return nil
}

// checkPartitions refuses a target partition Spark would refuse: one the checkpoint does not
// have that the broker does not have either (or that no broker was given to show), and, with a
// broker, one the broker does not have. Spark fails the first batch on a partition gone from
// the topic (KafkaMicroBatchStream: "Set(t-p) are gone. Some data may have been missed."), so
// the reset must not write it, nor say "Nothing to change" for a --topic partition that is
// nowhere.
func checkPartitions(opts ResetOptions, srcs []source) error {
	inCheckpoint := map[logformat.TopicPartition]bool{}
	parts := map[string][]int32{}
	for _, s := range srcs {
		for tp := range s.kafka.Map() {
			if !inCheckpoint[tp] {
				inCheckpoint[tp] = true
				parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
			}
		}
	}
	var targets []logformat.TopicPartition
	for _, sel := range opts.Topics {
		for _, p := range sel.Partitions {
			targets = append(targets, logformat.TopicPartition{Topic: sel.Topic, Partition: p})
		}
	}
	if opts.Target.Kind == FromFile {
		for tp := range opts.Target.File {
			targets = append(targets, tp)
		}
	}
	sort.Slice(targets, func(i, j int) bool {
		return targets[i].Topic < targets[j].Topic || targets[i].Topic == targets[j].Topic && targets[i].Partition < targets[j].Partition
	})
	for _, tp := range targets {
		name := fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
		have := fmt.Sprintf("the checkpoint has partitions %s of %s", joinParts(parts[tp.Topic]), tp.Topic)
		if opts.Broker == nil {
			if !inCheckpoint[tp] {
				return fmt.Errorf("partition %s is not in the checkpoint (%s), and without --bootstrap-server ckpt cannot tell that the topic has it: Spark fails on a partition the topic does not have (Set(%s) are gone)", name, have, name)
			}
			continue
		}
		if lookup(opts.Broker, tp) != nil {
			if !inCheckpoint[tp] && opts.Target.Kind != FromFile {
				return fmt.Errorf("partition %s is not in the checkpoint (%s): the query reads a partition new to it from its earliest offset; to give it another position, name it in --from-file", name, have)
			}
			continue
		}
		onBroker := "the broker has no topic " + tp.Topic
		if ps, ok := opts.Broker.Partitions(tp.Topic); ok {
			ids := make([]int32, len(ps))
			for i, p := range ps {
				ids[i] = p.Partition
			}
			slices.Sort(ids)
			onBroker = fmt.Sprintf("the broker's %s has partitions %s", tp.Topic, joinParts(ids))
		}
		where := "is not on the broker"
		if !inCheckpoint[tp] {
			where = "exists neither in the checkpoint (" + have + ") nor on the broker"
		}
		return fmt.Errorf("partition %s %s (%s): Spark fails on it (Set(%s) are gone)", name, where, onBroker, name)
	}
	return nil
}

// joinParts renders partition numbers "0, 1, 2" in order.
func joinParts(ps []int32) string {
	ps = slices.Clone(ps)
	slices.Sort(ps)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprint(p)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// uncommittedRefusal explains why a reset needs the latest batch committed, and how to get there.
func uncommittedRefusal(cp *checkpoint.Checkpoint, L int64) string {
	msg := fmt.Sprintf("batch %d, the latest, has offsets but no commit: a restart runs it again over its recorded range, so a new position written after it would not be where the query resumes. ", L)
	C, ok := cp.Commits.Latest()
	if !ok {
		return msg + "Let the query finish a batch first (start it once and stop it after a batch)"
	}
	if !cp.Offsets.Has(L - 1) {
		return msg + fmt.Sprintf("Settle it first: `ckpt repair %s` (the async crash: --strategy copy-committed) or `ckpt rewind %s --to-batch %d`", cp.Store.URI(), cp.Store.URI(), C)
	}
	return msg + fmt.Sprintf("Settle it first: let the query finish batch %d (start it once and stop it), or drop it with `ckpt rewind %s --to-batch %d`", L, cp.Store.URI(), C)
}

// statefulRefusal refuses a query with state: new source offsets under old state would make the
// state count records it never saw or saw twice, and no matching state version can be written
// yet.
func statefulRefusal(ctx context.Context, cp *checkpoint.Checkpoint) (string, error) {
	es, err := cp.Store.Walk(ctx, checkpoint.DirState)
	if err != nil {
		return "", err
	}
	if len(es) == 0 {
		return "", nil
	}
	return fmt.Sprintf("the query is stateful (%s/ holds %d file(s)): its state was built from the records up to the current position, and moving the sources under it would make aggregations and joins count records they never saw or saw twice. "+
		"ckpt cannot write a matching state version yet; start a new checkpoint from the new position instead (ckpt offsets export gives its startingOffsets)", checkpoint.DirState, len(es)), nil
}

func sourceRefusal(srcs []source) string {
	kafka, file := 0, 0
	for _, s := range srcs {
		switch s.kind {
		case KindKafka:
			kafka++
		case KindFile:
			file++
		}
	}
	switch {
	case file > 0:
		return fmt.Sprintf("the query reads %d file source(s) (offsets {\"logOffset\":n}, a position in the source's own log, not Kafka offsets): moving them is not supported", file)
	case kafka == 0:
		return "the query has no Kafka source: only Kafka offsets can be moved"
	}
	return ""
}
