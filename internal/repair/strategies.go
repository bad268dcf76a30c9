// Building one candidate per strategy and comparing the choices by what they lose and replay.

package repair

import (
	"context"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// candidate is the outcome of building one strategy.
type candidate struct {
	choice       bool // missing-previous-offsets was met: strategies differ
	actions      []journal.Action
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
		ch.Actions = []journal.Action{}
	}
	return ch
}

// build runs the fix-point loop for one strategy: diagnose the overlay, add the actions that
// answer its findings, apply them to the overlay, and again, until doctor finds nothing repair can
// act on. Then it predicts the restart on the result.
func build(ctx context.Context, s storage.Store, orig *checkpoint.Checkpoint, opts Options, st Strategy) (*candidate, error) {
	ov := journal.NewOverlay(orig) // its loads list nothing: orig's listings with the steps' changes
	c := &candidate{actions: []journal.Action{}}
	seen := map[string]bool{}
	procedure := false
	var rep *doctor.Report
	for step := 0; ; step++ {
		if step == maxSteps {
			return nil, fmt.Errorf("repair: the plan did not settle after %d steps (a bug: please report it with `ckpt inspect` output)", maxSteps)
		}
		cp, err := ov.Load(ctx)
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
		var fresh []journal.Action
		for _, a := range next {
			if seen[a.Path] {
				continue
			}
			seen[a.Path] = true
			// Filled as the actions before it leave the checkpoint: a step's actions never
			// touch each other's files.
			if err := ov.Add(ctx, &a); err != nil {
				return nil, err
			}
			fresh = append(fresh, a)
		}
		if len(fresh) == 0 {
			break
		}
		c.actions = append(c.actions, fresh...)
	}
	c.actions = order(c.actions)
	if st == "" && c.choice {
		return c, nil // NewPlan builds each strategy
	}

	cp, err := ov.Load(ctx) // the last step's load: nothing was added since
	if err != nil {
		return nil, err
	}
	popts := opts.Planner
	if procedure {
		popts.Mode = recovery.ModeAsync
		c.instructions = procedureSteps(cp)
	}
	after, err := ov.Predict(ctx, popts)
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
	if st == "" && c.refusal == "" && after.Blocked() {
		// A single repair that leaves a problem only a person can fix is still worth applying
		// (leftovers go); the remaining findings say what is left.
		c.warnings = append(c.warnings, "after this repair the restart still fails: "+firstLine(after.ErrorText()))
	}
	if c.refusal == "" && after.SparkBug != nil { // set only on a ReasonSparkBug failure
		c.warnings = append(c.warnings, fmt.Sprintf("after this repair the restart runs batch %d and then fails on Spark bug %s (not the checkpoint): %s",
			after.SparkBug.Batch, after.SparkBug.ID, after.SparkBug.Fix))
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
			if a.Op != journal.OpDelete || !strings.HasPrefix(a.Path, checkpoint.DirOffsets+"/") {
				continue
			}
			n := logformat.ParseName(path.Base(a.Path))
			if n.Kind == logformat.NameBatch && n.Batch <= *sl {
				if opts.Planner.SinkKind == recovery.SinkKindDelta {
					return fmt.Sprintf("it deletes %s, but the Delta sink has already committed batch %d (its txn action for the query reaches batch %d): Spark would plan batch %d again with new offsets and the sink would skip it as an \"already complete epoch\", losing its data silently",
						a.Path, n.Batch, *sl, n.Batch)
				}
				return fmt.Sprintf("it deletes %s, but the file sink has already committed batch %d (its _spark_metadata log reaches batch %d): Spark would plan batch %d again with new offsets and the sink would skip it as \"already committed\", losing its data silently",
					a.Path, n.Batch, *sl, n.Batch)
			}
		}
		if procedure {
			if opts.Planner.SinkKind == recovery.SinkKindDelta {
				return "the Delta sink does not support async progress tracking (Spark refuses to start: only Kafka, foreach, console and noop sinks do)"
			}
			return "the file sink does not support async progress tracking (Spark refuses to start: \"Sink FileSink[...] does not support async progress tracking\")"
		}
	}
	if after.Blocked() && c.choice {
		return "the restart would still fail: " + firstLine(after.ErrorText())
	}
	if !after.Failed() && after.NextBatch < 0 && c.choice {
		// The batch id after Long.MaxValue wraps: Spark 3.5.7 fails the restart with "More than
		// Int.MaxValue elements." (docs/spark-oracle.md, repairs checked by Spark).
		return fmt.Sprintf("the restart's next batch id would pass %d (Long.MaxValue) and wrap to %d: Spark fails (\"More than Int.MaxValue elements.\")", int64(math.MaxInt64), after.NextBatch)
	}
	return ""
}

// lossKey orders choices by what they lose: records first (Kafka), then batches.
func lossKey(r Replay) [2]int64 {
	return [2]int64{deref(r.LostRecords), int64(min(r.LostBatches.Count(), uint64(math.MaxInt64)))}
}

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
		parts = append(parts, "batch(es) "+r.LostBatches.String()+" never delivered")
	}
	return strings.Join(parts, ", ")
}

func less2(a, b [2]int64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// recommend picks the feasible choice that replays the least (records, then batches); ties go by
// preference. compareLoss has already ruled out the choices that lose more than another. It
// returns -1 when no choice is feasible.
func recommend(cs []Choice) int {
	best := -1
	key := func(c Choice) [4]int64 {
		return [4]int64{
			lossKey(c.Replay)[0], lossKey(c.Replay)[1],
			deref(c.Replay.ReplayedRecords), int64(min(c.Replay.ReplayedBatches.Count(), uint64(math.MaxInt64))),
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
