package repair

import (
	"context"
	"fmt"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Strategy is a way out of `missing-previous-offsets` (batch L-1's offsets file is missing). Other
// problems have a single repair and no strategy.
type Strategy = journal.Strategy

// The strategies, in the order the plan lists them.
const (
	// StrategyCopyPrevious writes a copy of offsets/L as offsets/L-1. Derived from Spark's code
	// (spark-semantics §6.6), not documented by Spark: when commits/L exists, offsets/L-1 only seeds
	// the start offsets, which the commit then replaces with offsets/L, so nothing re-runs.
	StrategyCopyPrevious Strategy = "copy-previous"
	// StrategySparkProcedure is Spark's documented way out of the async-progress trap: run the
	// query with async progress tracking and a checkpoint interval of 0 for two micro-batches. It
	// changes no file; the plan prints the steps.
	StrategySparkProcedure = journal.StrategySparkProcedure
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
	// sink's latest batch (--sink) or the Delta sink's txn version for the query (--delta-sink,
	// SinkKind "delta"), which also forbids deleting offsets the sink has committed.
	Planner recovery.Options
	// Strategy picks a way out of missing-previous-offsets; "" takes the recommended one.
	Strategy Strategy
	// Sink is the --sink or --delta-sink location as the user typed it, for messages.
	Sink string
	// Broker is the Kafka broker's state for the checkpoint's topics (--bootstrap-server:
	// topicstate.Read of recovery.CheckpointTopics); with it the Kafka records of Replay
	// count what really exists on the broker instead of subtracting offsets (broker.go).
	// nil: offsets are subtracted.
	Broker *recovery.BrokerState
	// Checkpoint is the checkpoint of the store loaded a moment before (checkpoint.LoadAt), nil:
	// NewPlan loads it. Every strategy plans on overlays made from it, which list nothing again.
	Checkpoint *checkpoint.Checkpoint
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
	// Actions are the file changes, in the order journal.Apply applies them.
	Actions []journal.Action `json:"actions"`
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
	// Options are the planner options used (journal.Apply verifies with them).
	Options recovery.Options `json:"-"`
}

// Choice is one strategy with its predicted consequence.
type Choice struct {
	Strategy Strategy         `json:"strategy"`
	Actions  []journal.Action `json:"actions"`
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
	ReplayedBatches Batches `json:"replayedBatches"`
	ReplayedRecords *int64  `json:"replayedRecords"`
	// LostRecords are records after the delivered position that the restart never reads, and
	// LostBatches the batch ids whose data never reaches the output: never processed again although
	// no commit or sink says they were delivered, or re-planned with new data under ids the file
	// sink skips as already committed.
	LostRecords *int64  `json:"lostRecords"`
	LostBatches Batches `json:"lostBatches"`
	// SkippedBatches are the planner's batches whose data is never processed again
	// (recovery.Result.Skipped).
	SkippedBatches Batches `json:"skippedBatches"`
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
	cp := opts.Checkpoint
	if cp == nil || cp.Store != s {
		var err error
		if cp, err = checkpoint.Load(ctx, s); err != nil {
			return nil, err
		}
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
			p.Actions = []journal.Action{}
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
		p.Actions = []journal.Action{}
		p.After = before
		p.Remaining = p.Findings
		return p, nil
	}
	c := p.Choices[pick]
	p.Strategy = c.Strategy
	p.Actions, p.Instructions, p.After, p.Replay, p.Remaining = c.Actions, c.Instructions, c.After, c.Replay, c.remaining
	if !c.Feasible {
		p.Refused = fmt.Sprintf("strategy %s: %s", c.Strategy, c.Refusal)
		p.Actions = []journal.Action{}
	}
	return p, nil
}

func nonNilFindings(fs []doctor.Finding) []doctor.Finding {
	if fs == nil {
		return []doctor.Finding{}
	}
	return fs
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *Plan) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: p.Strategy, Actions: p.Actions, After: p.After, Options: p.Options}
}
