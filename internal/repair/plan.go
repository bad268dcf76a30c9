package repair

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// Strategy is a way out of `missing-previous-offsets` (batch L-1's offsets file is missing). Other
// problems have a single repair and no strategy.
type Strategy string

// The strategies, in the order the plan lists them.
const (
	// StrategyCopyPrevious writes a copy of offsets/L as offsets/L-1. Derived from Spark's code
	// (spark-semantics §6.6), not documented by Spark: when commits/L exists, offsets/L-1 only seeds
	// the start offsets, which the commit then replaces with offsets/L, so nothing re-runs.
	StrategyCopyPrevious Strategy = "copy-previous"
	// StrategySparkProcedure is Spark's documented way out of the async-progress trap: run the
	// query with async progress tracking and a checkpoint interval of 0 for two micro-batches. It
	// changes no file; the plan prints the steps.
	StrategySparkProcedure Strategy = "spark-procedure"
	// StrategyDelete deletes the offsets files after the last pair of consecutive ones (and the
	// commits at or above the first deleted id), so the restart goes back to that pair.
	StrategyDelete Strategy = "delete"
	// StrategyCopyCommitted answers the async crash (the latest batch L uncommitted, offsets/L-1
	// missing): it writes a copy of offsets/C, C the latest commit, as offsets/L-1, so the sync
	// engine re-runs batch L over (end of C, end of L], which is what an async restart does:
	// nothing is lost. Stateless queries only (copycommitted.go).
	StrategyCopyCommitted Strategy = "copy-committed"
)

// Strategies lists every strategy, in the order plans show them: the (a), (b), (c).
var Strategies = []Strategy{StrategyDelete, StrategyCopyPrevious, StrategyCopyCommitted, StrategySparkProcedure}

// preference breaks ties between strategies that lose and replay the same: a plan ckpt applies,
// verifies and can undo comes before a manual procedure, and a copy that changes one file before
// deletes that change several.
var preference = []Strategy{StrategyCopyPrevious, StrategyDelete, StrategyCopyCommitted, StrategySparkProcedure}

// ParseStrategy validates a --strategy value ("" means the recommended one).
func ParseStrategy(s string) (Strategy, error) {
	if s == "" {
		return "", nil
	}
	for _, st := range Strategies {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown strategy %q: want %s, %s, %s or %s", s, StrategyDelete, StrategyCopyPrevious, StrategyCopyCommitted, StrategySparkProcedure)
}

// Options configures NewPlan.
type Options struct {
	// Planner is the restart to plan for: engine mode, Spark release, and SinkLatest, the file
	// sink's latest batch (--sink), which also forbids deleting offsets the sink has committed.
	Planner recovery.Options
	// Strategy picks a way out of missing-previous-offsets; "" takes the recommended one.
	Strategy Strategy
	// Sink is the --sink location as the user typed it, for messages.
	Sink string
	// Broker is the Kafka broker's state for the checkpoint's topics (--bootstrap-server:
	// topicstate.Read of recovery.CheckpointTopics); with it the Kafka records of Replay
	// count what really exists on the broker instead of subtracting offsets (broker.go).
	// nil: offsets are subtracted.
	Broker *topicstate.State
}

// Plan is what a repair would do and what it would cost. It is a pure function of the checkpoint
// and the options: computing it changes nothing.
type Plan struct {
	// Checkpoint is the checkpoint location.
	Checkpoint string `json:"checkpoint"`
	// Strategy is the strategy the actions implement, "" when the problems have a single repair.
	Strategy Strategy `json:"strategy,omitempty"`
	// Recommended is the strategy that keeps output exactly-once and replays the least.
	Recommended Strategy `json:"recommended,omitempty"`
	// Actions are the file changes, in the order Execute applies them.
	Actions []Action `json:"actions"`
	// Instructions are steps for a person (Spark's procedure), empty for file-only repairs.
	Instructions []string `json:"instructions,omitempty"`
	// Findings are doctor's findings on the checkpoint as it is.
	Findings []doctor.Finding `json:"findings"`
	// Before is the planner's prediction for the checkpoint as it is; After for the checkpoint
	// with the actions applied (for spark-procedure: the restart with async progress tracking on).
	Before *recovery.Result `json:"before"`
	After  *recovery.Result `json:"after"`
	// Replay is the cost of the plan.
	Replay Replay `json:"replay"`
	// Choices are every strategy considered, with its predicted consequence; nil when there is no
	// choice to make.
	Choices []Choice `json:"choices,omitempty"`
	// Remaining are the findings the plan leaves (repair cannot fix them, or the strategy leaves
	// them on purpose), from doctor on the repaired checkpoint.
	Remaining []doctor.Finding `json:"remaining"`
	// Refused says why no plan may be applied (the sink already committed a batch whose offsets
	// every plan deletes); empty otherwise.
	Refused string `json:"refused,omitempty"`
	// Warnings are things to know before applying.
	Warnings []string `json:"warnings"`
	// Options are the planner options used (Execute verifies with them).
	Options recovery.Options `json:"-"`
}

// Choice is one strategy with its predicted consequence.
type Choice struct {
	Strategy Strategy `json:"strategy"`
	Actions  []Action `json:"actions"`
	// Instructions are the manual steps of spark-procedure.
	Instructions []string `json:"instructions,omitempty"`
	// After is the planner's prediction once the strategy is carried out.
	After  *recovery.Result `json:"after"`
	Replay Replay           `json:"replay"`
	// Feasible is false when the strategy does not get the query restarted, or is refused; Refusal
	// says why.
	Feasible bool   `json:"feasible"`
	Refusal  string `json:"refusal,omitempty"`
	// Recommended marks the one NewPlan picks by default.
	Recommended bool `json:"recommended"`
	// Note is what the user must know about the strategy's provenance or preconditions.
	Note string `json:"note"`

	remaining []doctor.Finding
}

// Replay is what a plan costs on restart: what runs again and what is never read. Records count
// Kafka records (the only source whose positions say how many records lie between them); they are
// null when no source is Kafka.
type Replay struct {
	// RerunBatch is the batch the restart runs again with offsets already in the log (Spark's
	// normal recovery), and RerunRecords its size, as the planner computes them.
	RerunBatch   *int64 `json:"rerunBatch"`
	RerunRecords *int64 `json:"rerunRecords"`
	// ReplayedBatches are batch ids whose output was already delivered (committed, or present in
	// the file sink) and which the restart processes again: duplicates for a sink that is not
	// idempotent. ReplayedRecords are the records they hold.
	ReplayedBatches []int64 `json:"replayedBatches"`
	ReplayedRecords *int64  `json:"replayedRecords"`
	// LostRecords are records after the delivered position that the restart never reads, and
	// LostBatches the batch ids whose data never reaches the output: never processed again although
	// no commit or sink says they were delivered, or re-planned with new data under ids the file
	// sink skips as already committed.
	LostRecords *int64  `json:"lostRecords"`
	LostBatches []int64 `json:"lostBatches"`
	// SkippedBatches are the planner's batches whose data is never processed again.
	SkippedBatches []int64 `json:"skippedBatches"`
	// NextBatch is the first batch the restart runs; -1 when the restart fails.
	NextBatch int64 `json:"nextBatch"`
	// BrokerCounts is true when the Kafka records were counted on the broker (Options.Broker):
	// the offsets between two positions that still exist there, not their difference.
	BrokerCounts bool `json:"brokerCounts,omitempty"`
}

// maxSteps bounds the fix-point loop; each step removes at least one finding or file.
const maxSteps = 64

// NewPlan diagnoses the checkpoint in s with doctor, builds the candidate repair for every
// strategy on an in-memory overlay, and predicts each with recovery.Plan. It reads the checkpoint
// and changes nothing.
func NewPlan(ctx context.Context, s storage.Store, opts Options) (*Plan, error) {
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	rep, err := diagnose(ctx, cp, opts.Planner)
	if err != nil {
		return nil, err
	}
	before := rep.Restart
	if before == nil {
		if before, err = recovery.Plan(ctx, cp, opts.Planner); err != nil {
			return nil, err
		}
	}
	p := &Plan{
		Checkpoint: s.URI(),
		Findings:   nonNilFindings(rep.Findings),
		Before:     before,
		Options:    opts.Planner,
		Warnings:   []string{},
	}
	base, err := build(ctx, s, cp, opts, "")
	if err != nil {
		return nil, err
	}
	if !base.choice {
		// A single repair.
		p.Actions, p.After, p.Replay, p.Remaining = base.actions, base.after, base.replay, base.remaining
		p.Warnings = append(p.Warnings, base.warnings...)
		if base.refusal != "" && len(base.actions) > 0 {
			p.Refused = base.refusal
			p.Actions = []Action{}
		}
		return p, nil
	}
	for _, st := range Strategies {
		if st == StrategyCopyCommitted && !copyCommittedApplies(cp) && opts.Strategy != st {
			continue // only the async crash has a commit to copy that differs from copy-previous
		}
		c, err := build(ctx, s, cp, opts, st)
		if err != nil {
			return nil, err
		}
		p.Choices = append(p.Choices, c.toChoice(st))
	}
	if w := compareLoss(p.Choices); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	rec := recommend(p.Choices)
	if rec >= 0 {
		p.Choices[rec].Recommended = true
		p.Recommended = p.Choices[rec].Strategy
	}
	pick := rec
	if opts.Strategy != "" {
		pick = slices.IndexFunc(p.Choices, func(c Choice) bool { return c.Strategy == opts.Strategy })
	}
	if pick < 0 {
		p.Refused = "no strategy gets this checkpoint restarted without losing output:"
		for _, c := range p.Choices {
			p.Refused += fmt.Sprintf("\n  %s: %s", c.Strategy, c.Refusal)
		}
		p.Actions = []Action{}
		p.After = before
		p.Remaining = p.Findings
		return p, nil
	}
	c := p.Choices[pick]
	p.Strategy = c.Strategy
	p.Actions, p.Instructions, p.After, p.Replay, p.Remaining = c.Actions, c.Instructions, c.After, c.Replay, c.remaining
	if !c.Feasible {
		p.Refused = fmt.Sprintf("strategy %s: %s", c.Strategy, c.Refusal)
		p.Actions = []Action{}
	}
	return p, nil
}

func nonNilFindings(fs []doctor.Finding) []doctor.Finding {
	if fs == nil {
		return []doctor.Finding{}
	}
	return fs
}

// candidate is the outcome of building one strategy.
type candidate struct {
	choice       bool // missing-previous-offsets was met: strategies differ
	actions      []Action
	instructions []string
	after        *recovery.Result
	replay       Replay
	remaining    []doctor.Finding
	refusal      string
	preRefusal   string // a refusal known while building the actions (copy-committed's)
	warnings     []string
	note         string
}

func (c *candidate) toChoice(st Strategy) Choice {
	ch := Choice{
		Strategy:     st,
		Actions:      c.actions,
		Instructions: c.instructions,
		After:        c.after,
		Replay:       c.replay,
		Feasible:     c.refusal == "",
		Refusal:      c.refusal,
		Note:         c.note,
		remaining:    c.remaining,
	}
	if ch.Actions == nil {
		ch.Actions = []Action{}
	}
	return ch
}

// build runs the fix-point loop for one strategy: diagnose the overlay, add the actions that
// answer its findings, apply them to the overlay, and again, until doctor finds nothing repair can
// act on. Then it predicts the restart on the result.
func build(ctx context.Context, s storage.Store, orig *checkpoint.Checkpoint, opts Options, st Strategy) (*candidate, error) {
	ov := checkpoint.NewOverlay(s, nil)
	c := &candidate{actions: []Action{}}
	seen := map[string]bool{}
	procedure := false
	var rep *doctor.Report
	for step := 0; ; step++ {
		if step == maxSteps {
			return nil, fmt.Errorf("repair: the plan did not settle after %d steps (a bug: please report it with `ckpt inspect` output)", maxSteps)
		}
		cp, err := checkpoint.Load(ctx, ov)
		if err != nil {
			return nil, err
		}
		if rep, err = diagnose(ctx, cp, opts.Planner); err != nil {
			return nil, err
		}
		next, err := stepActions(ctx, cp, rep, st, &procedure, opts.Planner.SinkLatest, c)
		if err != nil {
			return nil, err
		}
		var fresh []Action
		for _, a := range next {
			if seen[a.Path] {
				continue
			}
			seen[a.Path] = true
			if err := fill(ctx, ov, &a); err != nil {
				return nil, err
			}
			fresh = append(fresh, a)
		}
		if len(fresh) == 0 {
			break
		}
		for _, a := range fresh {
			switch a.Op {
			case OpDelete:
				ov.Hide(a.Path)
			case OpCopy:
				data, err := ov.ReadFile(ctx, a.From)
				if err != nil {
					return nil, err
				}
				ov.Set(a.Path, data)
			}
		}
		c.actions = append(c.actions, fresh...)
	}
	c.actions = order(c.actions)
	if st == "" && c.choice {
		return c, nil // NewPlan builds each strategy
	}

	cp, err := checkpoint.Load(ctx, ov)
	if err != nil {
		return nil, err
	}
	popts := opts.Planner
	if procedure {
		popts.Mode = recovery.ModeAsync
		c.instructions = procedureSteps(cp)
	}
	after, err := recovery.Plan(ctx, cp, popts)
	if err != nil {
		if procedure {
			c.refusal = "not available: " + err.Error()
			c.after = nil
			c.remaining = rep.Findings
			return c, nil
		}
		return nil, err
	}
	c.after = after
	c.remaining = remaining(rep.Findings)
	if procedure {
		// The steps are the answer to these; they are not left for the user to find out.
		c.remaining = slices.DeleteFunc(c.remaining, func(f doctor.Finding) bool {
			return f.Code == doctor.CodeMissingPreviousOffsets || f.Code == doctor.CodeAsyncProgressGaps
		})
	}
	c.replay, err = replayCost(ctx, orig, cp, after, opts.Planner.SinkLatest, opts.Broker)
	if err != nil {
		return nil, err
	}
	c.refusal = refusal(c, opts, after, procedure)
	if c.preRefusal != "" {
		c.refusal = c.preRefusal
	}
	if st == "" && c.refusal == "" && after.Failed() {
		// A single repair that leaves a problem only a person can fix is still worth applying
		// (leftovers go); the remaining findings say what is left.
		c.warnings = append(c.warnings, "after this repair the restart still fails: "+firstLine(after.ErrorText()))
	}
	switch st {
	case StrategyCopyPrevious:
		c.note = "derived from Spark's code (MicroBatchExecution reads offsets/L-1 only to seed the start offsets, which commits/L then replaces), not documented by Spark"
	case StrategySparkProcedure:
		c.note = "Spark's documented procedure (Structured Streaming performance tips, \"Switching the setting off\"); it needs a query that supports async progress tracking: stateless, with a Kafka, foreach, console or noop sink"
	case StrategyDelete:
		c.note = "Spark's own advice in its error message: delete the offsets files after the last consecutive pair"
	case StrategyCopyCommitted:
		c.note = "derived from Spark's code: the sync engine re-runs batch L from offsets/L-1, here the end of the latest commit, as an async restart would; stateless queries only"
	}
	return c, nil
}

// refusal says why a candidate may not be applied at all, "" when it may. Losses that every way
// out shares are not a refusal: compareLoss weighs choices against each other.
func refusal(c *candidate, opts Options, after *recovery.Result, procedure bool) string {
	if sl := opts.Planner.SinkLatest; sl != nil {
		for _, a := range c.actions {
			if a.Op != OpDelete || !strings.HasPrefix(a.Path, checkpoint.DirOffsets+"/") {
				continue
			}
			n := logformat.ParseName(path.Base(a.Path))
			if n.Kind == logformat.NameBatch && n.Batch <= *sl {
				return fmt.Sprintf("it deletes %s, but the file sink has already committed batch %d (its _spark_metadata log reaches batch %d): Spark would plan batch %d again with new offsets and the sink would skip it as \"already committed\", losing its data silently",
					a.Path, n.Batch, *sl, n.Batch)
			}
		}
		if procedure {
			return "the file sink does not support async progress tracking (Spark refuses to start: \"Sink FileSink[...] does not support async progress tracking\")"
		}
	}
	if after.Failed() && c.choice {
		return "the restart would still fail: " + firstLine(after.ErrorText())
	}
	return ""
}

// lossKey orders choices by what they lose: records first (Kafka), then batches.
func lossKey(r Replay) [2]int64 { return [2]int64{deref(r.LostRecords), int64(len(r.LostBatches))} }

// compareLoss marks infeasible every choice that loses more than the least-losing feasible one, so
// that no strategy, not even one picked with --strategy, drops data another would keep. When even
// the best loses something, that loss is the checkpoint's (no way out avoids it), and the returned
// warning says so.
func compareLoss(cs []Choice) string {
	best := -1
	for i, c := range cs {
		if c.Feasible && (best < 0 || less2(lossKey(c.Replay), lossKey(cs[best].Replay))) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	b := cs[best]
	for i := range cs {
		c := &cs[i]
		if !c.Feasible || !less2(lossKey(b.Replay), lossKey(c.Replay)) {
			continue
		}
		c.Feasible = false
		c.Refusal = "it loses data that " + string(b.Strategy) + " keeps: " + describeLoss(c.Replay)
	}
	if lossKey(b.Replay) == [2]int64{} {
		return ""
	}
	return "every way out leaves data unprocessed (" + describeLoss(b.Replay) + "): those batches have offsets but no commit, so the checkpoint cannot say whether their output was written"
}

func describeLoss(r Replay) string {
	var parts []string
	if r.LostRecords != nil && *r.LostRecords > 0 {
		parts = append(parts, fmt.Sprintf("%d record(s) never read", *r.LostRecords))
	}
	if len(r.LostBatches) > 0 {
		parts = append(parts, "batch(es) "+idList(r.LostBatches)+" never delivered")
	}
	return strings.Join(parts, ", ")
}

func less2(a, b [2]int64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// idList renders ids compactly: "3", "3-5", "1, 4-6".
func idList(ids []int64) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// recommend picks the feasible choice that replays the least (records, then batches); ties go by
// preference. compareLoss has already ruled out the choices that lose more than another. It
// returns -1 when no choice is feasible.
func recommend(cs []Choice) int {
	best := -1
	key := func(c Choice) [4]int64 {
		return [4]int64{
			lossKey(c.Replay)[0], lossKey(c.Replay)[1],
			deref(c.Replay.ReplayedRecords), int64(len(c.Replay.ReplayedBatches)),
		}
	}
	pref := func(c Choice) int { return slices.Index(preference, c.Strategy) }
	for i, c := range cs {
		if !c.Feasible {
			continue
		}
		if best < 0 || less(key(c), key(cs[best])) || key(c) == key(cs[best]) && pref(c) < pref(cs[best]) {
			best = i
		}
	}
	return best
}

func less(a, b [4]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// remaining keeps the findings that still matter after the plan (errors and warnings).
func remaining(fs []doctor.Finding) []doctor.Finding {
	out := []doctor.Finding{}
	for _, f := range fs {
		if f.Severity == doctor.Error || f.Severity == doctor.Warning {
			out = append(out, f)
		}
	}
	return out
}

// stepActions turns one doctor report into actions. Findings about leftovers are answered first
// (they never depend on a strategy); then the problems that block the restart, one kind per step,
// so that each step's report reflects the previous step's changes.
func stepActions(ctx context.Context, cp *checkpoint.Checkpoint, rep *doctor.Report, st Strategy, procedure *bool, sinkLatest *int64, c *candidate) ([]Action, error) {
	var out []Action
	L, hasL := cp.Offsets.Latest()
	C, hasC := cp.Commits.Latest()
	// doctor lists at most a few files per finding; the listing has them all.
	logOf := func(p string) *checkpoint.Log {
		switch path.Dir(p) {
		case checkpoint.DirOffsets:
			return cp.Offsets
		case checkpoint.DirCommits:
			return cp.Commits
		}
		return nil
	}
	for _, f := range rep.Findings {
		switch f.Code {
		case doctor.CodeLeftoverTempFile:
			files := append([]string{f.Path}, f.Files...)
			if l := logOf(f.Path); l != nil {
				files = files[:0]
				for _, e := range l.Temps {
					files = append(files, e.Path)
				}
			}
			for _, p := range files {
				out = append(out, Action{Op: OpDelete, Path: p, Code: f.Code,
					Reason: "leftover temporary file of an interrupted write; Spark never reads or removes it"})
			}
		case doctor.CodeOrphanChecksum:
			files := append([]string{f.Path}, f.Files...)
			if l := logOf(f.Path); l != nil {
				files = orphanChecksums(l)
			}
			for _, p := range files {
				out = append(out, Action{Op: OpDelete, Path: p, Code: f.Code,
					Reason: "checksum of a file that does not exist; it can make Hadoop refuse to write that file again"})
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, f := range rep.Findings {
		switch f.Code {
		case doctor.CodeCommitsAhead:
			if !hasC {
				continue
			}
			for _, id := range cp.Commits.IDs {
				if !hasL || id > L {
					out = append(out, deleteBatch(cp, cp.Commits, id, f.Code,
						fmt.Sprintf("commit of batch %d, which has no offsets (latest offsets: %s): Spark would stop with a concurrent-update error when it reaches it", id, batchOrNone(L, hasL)))...)
				}
			}
			return out, nil
		case doctor.CodeCorruptLogFile:
			if f.Severity != doctor.Error {
				continue
			}
			switch {
			case hasL && f.Path == cp.Offsets.FilePath(L):
				out = append(out, deleteBatch(cp, cp.Offsets, L, f.Code,
					fmt.Sprintf("the latest offsets file cannot be parsed (%s): an unfinished write; batch %d is planned again", firstLine(f.Message), L))...)
				out = append(out, commitsFrom(cp, L, f.Code, "offsets/"+fmt.Sprint(L)+" is deleted")...)
				return out, nil
			case hasC && f.Path == cp.Commits.FilePath(C):
				out = append(out, deleteBatch(cp, cp.Commits, C, f.Code,
					fmt.Sprintf("the latest commit cannot be parsed (%s): an unfinished write; batch %d runs again", firstLine(f.Message), C))...)
				return out, nil
			}
		case doctor.CodeEmptyOffsetsWithCommits:
			for _, id := range cp.Commits.IDs {
				out = append(out, deleteBatch(cp, cp.Commits, id, f.Code,
					"commit without any offsets: the query can only start afresh, and Spark would stop when it reaches an existing commit")...)
			}
			c.warnings = append(c.warnings, "offsets/ is empty: after this repair the query starts afresh at batch 0 from its sources' starting positions (Kafka: sources/<i>/0 when present, else startingOffsets). Restore offsets/ from a backup instead if you have one")
			return out, nil
		}
	}
	for _, f := range rep.Findings {
		if f.Code != doctor.CodeMissingPreviousOffsets || !hasL {
			continue
		}
		c.choice = true
		switch st {
		case "":
			return nil, nil // the base build stops here: strategies differ from this point
		case StrategyCopyPrevious:
			prev := L - 1
			return []Action{{Op: OpCopy, Path: cp.Offsets.Dir + "/" + fmt.Sprint(prev), From: cp.Offsets.FilePath(L), Code: f.Code,
				Reason: fmt.Sprintf("offsets/%d is missing and the normal engine needs it to restart from batch %d; a copy of offsets/%d makes the previous batch end where batch %d ends", prev, L, L, L)}}, nil
		case StrategySparkProcedure:
			*procedure = true
			return nil, nil
		case StrategyCopyCommitted:
			return copyCommitted(ctx, cp, f.Code, sinkLatest, c)
		case StrategyDelete:
			// Go back to the newest id whose predecessor exists (or 0): everything above it goes.
			keep := int64(-1)
			for i := len(cp.Offsets.IDs) - 1; i >= 0; i-- {
				id := cp.Offsets.IDs[i]
				if id == 0 || cp.Offsets.Has(id-1) {
					keep = id
					break
				}
			}
			for i := len(cp.Offsets.IDs) - 1; i >= 0; i-- {
				id := cp.Offsets.IDs[i]
				if id <= keep {
					break
				}
				out = append(out, deleteBatch(cp, cp.Offsets, id, f.Code, deleteReason(id, keep))...)
			}
			out = append(out, commitsFrom(cp, keep+1, f.Code, "their offsets are deleted")...)
			return out, nil
		}
	}
	return nil, nil
}

func deleteReason(id, keep int64) string {
	if keep < 0 {
		return fmt.Sprintf("no offsets file has its predecessor: batch %d goes, and the query starts afresh", id)
	}
	return fmt.Sprintf("after a gap: the restart goes back to batches %d-%d, the newest consecutive pair", keep-1, keep)
}

func batchOrNone(id int64, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(id)
}

// commitsFrom deletes every commit at or above id: a commit whose offsets are gone is "commits
// ahead", which makes Spark stop with a concurrent-update error (spark-semantics §6.6 option 2).
func commitsFrom(cp *checkpoint.Checkpoint, id int64, code, why string) []Action {
	var out []Action
	for i := len(cp.Commits.IDs) - 1; i >= 0; i-- {
		c := cp.Commits.IDs[i]
		if c < id {
			break
		}
		out = append(out, deleteBatch(cp, cp.Commits, c, code,
			fmt.Sprintf("commit of batch %d, at or above the first deleted offsets (%s): left alone it would be ahead of the offsets", c, why))...)
	}
	return out
}

// deleteBatch deletes batch id of log and its checksum file (both Hadoop's ".N.crc" and the "N.crc"
// of Spark's checksum file manager), so no stale checksum is left to block a later write of N.
func deleteBatch(cp *checkpoint.Checkpoint, l *checkpoint.Log, id int64, code, reason string) []Action {
	e, ok := l.File(id)
	if !ok {
		return nil
	}
	out := []Action{{Op: OpDelete, Path: e.Path, Code: code, Reason: reason}}
	name := path.Base(e.Path)
	for _, crc := range l.Checksums {
		if path.Base(crc.Path) == "."+name+".crc" {
			out = append(out, Action{Op: OpDelete, Path: crc.Path, Code: code, Reason: "checksum of " + e.Path + ", deleted with it"})
		}
	}
	for _, o := range l.Others {
		if !o.IsDir && path.Base(o.Path) == name+".crc" {
			out = append(out, Action{Op: OpDelete, Path: o.Path, Code: code, Reason: "checksum of " + e.Path + ", deleted with it"})
		}
	}
	return out
}

// fill sets an action's digests and size from the overlay as it is before the action.
func fill(ctx context.Context, s storage.Store, a *Action) error {
	data, d, err := readDigest(ctx, s, a.Path)
	if err != nil {
		return err
	}
	a.Before = d
	switch a.Op {
	case OpDelete:
		if d.Absent() {
			return fmt.Errorf("repair: planned to delete %s, which does not exist", a.Path)
		}
		a.After, a.Size = "", int64(len(data))
	case OpCopy:
		if !d.Absent() {
			return fmt.Errorf("repair: planned to create %s, which exists", a.Path)
		}
		src, sd, err := readDigest(ctx, s, a.From)
		if err != nil {
			return err
		}
		if sd.Absent() {
			return fmt.Errorf("repair: planned to copy %s, which does not exist", a.From)
		}
		a.After, a.Size = sd, int64(len(src))
	case OpWrite:
		if !d.Absent() {
			return fmt.Errorf("repair: planned to create %s, which exists", a.Path)
		}
		a.After, a.Size = DigestOf(a.Data), int64(len(a.Data))
	}
	return nil
}

// Fill sets an action's digests and size from s as it is before the action: the planning step
// of callers that build their own actions (offsets reset, rewind).
func Fill(ctx context.Context, s storage.Store, a *Action) error { return fill(ctx, s, a) }

// order sorts actions so that every intermediate state is one Spark can restart from as well as
// the original: leftovers first, then commits before offsets, newest batch first (a commit never
// outlives its offsets, so a crash mid-way never creates "commits ahead"), each checksum right
// after its file, copies last.
func order(as []Action) []Action {
	rank := func(a Action) (int, int64, int) {
		dir, name := path.Split(a.Path)
		n := logformat.ParseName(name)
		kind := 0 // leftovers
		switch {
		case a.Op == OpCopy:
			kind = 4
		case a.Code == doctor.CodeLeftoverTempFile || a.Code == doctor.CodeOrphanChecksum:
			kind = 0
		case dir == checkpoint.DirCommits+"/":
			kind = 1
		default:
			kind = 2
		}
		crc := 0
		if n.Kind == logformat.NameChecksum || strings.HasSuffix(name, ".crc") {
			crc = 1
			if !n.HasBatch {
				n.Batch, _ = parseCRCBatch(name)
			}
		}
		return kind, n.Batch, crc
	}
	out := slices.Clone(as)
	sort.SliceStable(out, func(i, j int) bool {
		ki, bi, ci := rank(out[i])
		kj, bj, cj := rank(out[j])
		if ki != kj {
			return ki < kj
		}
		if ki == 0 {
			return out[i].Path < out[j].Path
		}
		if bi != bj {
			return bi > bj
		}
		return ci < cj
	})
	return out
}

func parseCRCBatch(name string) (int64, bool) {
	n := logformat.ParseName(strings.TrimSuffix(name, ".crc"))
	return n.Batch, n.Kind == logformat.NameBatch
}

// procedureSteps are Spark's documented steps for switching async progress tracking off, with the
// batches the checkpoint will show when they are done.
func procedureSteps(cp *checkpoint.Checkpoint) []string {
	L, _ := cp.Offsets.Latest()
	return []string{
		`Restart the query with async progress tracking on and a checkpoint interval of 0: on writeStream, .option("asyncProgressTrackingEnabled", "true").option("asyncProgressTrackingCheckpointIntervalMs", "0")`,
		fmt.Sprintf("Let it process at least two micro-batches, so that offsets/%d and offsets/%d and their commits exist (check with `ckpt inspect` or `ckpt doctor`)", L+1, L+2),
		"Stop the query, remove the two options, and start it again: the normal engine now finds two consecutive offsets files",
	}
}

// orphanChecksums lists the checksum files of l whose batch file is gone: Hadoop's ".N.crc" and
// the "N.crc" of Spark's checksum file manager.
func orphanChecksums(l *checkpoint.Log) []string {
	var out []string
	for _, e := range l.Checksums {
		n := logformat.ParseName(path.Base(e.Path))
		if n.HasBatch && logformat.ParseName(n.Target).Kind == logformat.NameBatch && !l.Has(n.Batch) {
			out = append(out, e.Path)
		}
	}
	for _, e := range l.Others {
		if t, ok := strings.CutSuffix(path.Base(e.Path), ".crc"); ok && !e.IsDir {
			if n := logformat.ParseName(t); n.Kind == logformat.NameBatch && !l.Has(n.Batch) {
				out = append(out, e.Path)
			}
		}
	}
	return out
}
