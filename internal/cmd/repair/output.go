package repair

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/repair"
	"github.com/ckpt-dev/ckpt/internal/shell"
)

// output is what one `ckpt repair` run produced.
type output struct {
	Plan         *repair.Plan
	Journal      *string
	Executed     bool
	Verified     *recovery.Result
	JournalState journal.State
	Detected     *recovery.Detection
}

// document is the -o json form (docs/repair.md). actions, after, journal and executed are the
// contract the issue fixed; the rest explains them.
type document struct {
	Checkpoint string           `json:"checkpoint"`
	Executed   bool             `json:"executed"`
	Journal    *string          `json:"journal"`
	Actions    []journal.Action `json:"actions"`
	// After is the verified restart when executed, else the predicted one.
	After        *recovery.Result `json:"after"`
	Predicted    *recovery.Result `json:"predicted"`
	Replay       repair.Replay    `json:"replay"`
	Strategy     repair.Strategy  `json:"strategy,omitempty"`
	Recommended  repair.Strategy  `json:"recommended,omitempty"`
	Instructions []string         `json:"instructions"`
	Choices      []repair.Choice  `json:"choices"`
	Before       *recovery.Result `json:"before"`
	Findings     []doctor.Finding `json:"findings"`
	Remaining    []doctor.Finding `json:"remaining"`
	Refused      *string          `json:"refused"`
	Warnings     []string         `json:"warnings"`
	// Detected is what the checkpoint showed and the planner's options took from it.
	Detected *recovery.Detection `json:"detected,omitempty"`
}

func (o *output) doc() document {
	p := o.Plan
	d := document{
		Detected:     o.Detected,
		Checkpoint:   p.Checkpoint,
		Executed:     o.Executed,
		Journal:      o.Journal,
		Actions:      p.Actions,
		After:        p.After,
		Predicted:    p.After,
		Replay:       p.Replay,
		Strategy:     p.Strategy,
		Recommended:  p.Recommended,
		Instructions: p.Instructions,
		Choices:      p.Choices,
		Before:       p.Before,
		Findings:     p.Findings,
		Remaining:    p.Remaining,
		Warnings:     p.Warnings,
	}
	if o.Verified != nil {
		d.After = o.Verified
	}
	if d.Actions == nil {
		d.Actions = []journal.Action{}
	}
	if d.Instructions == nil {
		d.Instructions = []string{}
	}
	if d.Choices == nil {
		d.Choices = []repair.Choice{}
	}
	if p.Refused != "" {
		d.Refused = &p.Refused
	}
	return d
}

// restartText is a verdict without the leading "Restart ". A resume says where it reads from
// instead of "nothing re-runs", which would sit badly next to a replay of delivered data: the
// new batch N reads on from the end offsets of batch N-1, whatever was delivered after them.
func restartText(r *recovery.Result) string {
	if r == nil {
		return "unknown"
	}
	v := r.Verdict()
	if !r.Failed() && r.RerunBatch == nil && r.LatestOffsets != nil && r.NextBatch > 0 {
		return fmt.Sprintf("resumes at batch %d, reading on from where batch %d ended", r.NextBatch, r.NextBatch-1)
	}
	if s, ok := strings.CutPrefix(v, "Restart "); ok {
		return s
	}
	return v
}

// replayText says in a few words what a plan costs on restart.
func replayText(r repair.Replay) string {
	var parts []string
	if n := r.ReplayedBatches.Count(); n > 0 {
		what := "the data of " + pluralU(n, "batch") + " already delivered (" + r.ReplayedBatches.String() + ") is read again"
		if n == 1 {
			what = "the data of batch " + r.ReplayedBatches.String() + ", already delivered, is read again"
		}
		s := what
		if r.ReplayedRecords != nil {
			s += fmt.Sprintf(" (%s)", plural(int(*r.ReplayedRecords), "record"))
		}
		parts = append(parts, s)
	}
	if r.RerunBatch != nil {
		s := fmt.Sprintf("batch %d re-runs", *r.RerunBatch)
		if r.RerunRecords != nil {
			s += fmt.Sprintf(" (%s)", plural(int(*r.RerunRecords), "record"))
		}
		parts = append(parts, s)
	}
	if r.LostRecords != nil && *r.LostRecords > 0 || len(r.LostBatches) > 0 {
		s := "LOSES"
		if len(r.LostBatches) > 0 {
			s += " " + pluralU(r.LostBatches.Count(), "batch") + " (" + r.LostBatches.String() + ")"
		}
		if r.LostRecords != nil && *r.LostRecords > 0 {
			s += fmt.Sprintf(" (%s never read)", plural(int(*r.LostRecords), "record"))
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "nothing runs twice"
	}
	if r.BrokerCounts && (r.RerunRecords != nil || r.ReplayedRecords != nil) {
		return strings.Join(parts, "; ") + " (Kafka records counted on the broker)"
	}
	return strings.Join(parts, "; ")
}

func printPlan(r *render.Renderer, p *repair.Plan, opts *Options) {
	r.KV([][2]string{
		{"Checkpoint", p.Checkpoint},
		{"Restart", restartText(p.Before)},
	})
	r.FaintLines(opts.Detected.Lines())
	if len(p.Findings) > 0 {
		r.Println()
		rows := make([][]string, 0, len(p.Findings))
		for _, f := range p.Findings {
			rows = append(rows, []string{severity(r, f.Severity), f.Code, f.Path, f.Message})
		}
		r.Table(render.Table{Title: "Findings", Headers: []string{"severity", "code", "path", "message"}, Rows: rows})
	}
	if len(p.Choices) > 0 {
		r.Println()
		rows := make([][]string, 0, len(p.Choices))
		for _, c := range p.Choices {
			name := string(c.Strategy)
			if c.Recommended {
				name += " *"
			}
			after, cost := restartText(c.After), replayText(c.Replay)
			if !c.Feasible {
				after, cost = "refused", c.Refusal
			}
			rows = append(rows, []string{name, changes(c.Actions, c.Instructions), after, cost})
		}
		r.Table(render.Table{Title: "Ways out of missing-previous-offsets", Headers: []string{"strategy", "changes", "restart afterwards", "replay"}, Rows: rows})
		for _, c := range p.Choices {
			r.Printf("  %s: %s\n", c.Strategy, c.Note)
		}
		if p.Recommended != "" {
			r.Printf("  * recommended: keeps every record and replays the least; --strategy picks another\n")
		}
	}
	r.Println()
	switch {
	case p.Refused != "":
		r.Printf("%s %s\n", r.Bad("Refused:"), p.Refused)
	case len(p.Actions) == 0 && len(p.Instructions) == 0:
		r.Println(r.Good("Nothing to repair."))
	default:
		title := "Plan"
		if p.Strategy != "" {
			title += " (" + string(p.Strategy)
			if p.Strategy == p.Recommended {
				title += ", recommended"
			}
			title += ")"
		}
		r.Printf("%s: %s\n", r.Bold(title), changes(p.Actions, p.Instructions))
		for i, a := range p.Actions {
			switch a.Op {
			case journal.OpCopy:
				r.Printf("  %d. copy %s to %s\n", i+1, a.From, a.Path)
			default:
				r.Printf("  %d. %s %s\n", i+1, a.Op, a.Path)
			}
			r.Printf("     %s\n", r.Faint(a.Reason))
		}
		for i, s := range p.Instructions {
			r.Printf("  step %d. %s\n", i+1, s)
		}
		r.Println()
		label := "Restart after the plan"
		if p.Strategy == repair.StrategySparkProcedure {
			label = "Restart in step 1 (async)"
		}
		kv := [][2]string{
			{label, restartText(p.After)},
			{"Replay", replayText(p.Replay)},
		}
		if p.After != nil && p.After.Sink != nil {
			label := "File sink"
			if p.After.Sink.Kind == recovery.SinkKindDelta {
				label = "Delta sink"
			}
			kv = append(kv, [2]string{label, p.After.Sink.Message})
		}
		r.KV(kv)
	}
	if len(p.Remaining) > 0 {
		r.Println()
		r.Println(r.Bold("Left for you (repair does not change these):"))
		for _, f := range p.Remaining {
			r.Printf("  %s %s: %s\n", severity(r, f.Severity), f.Code, firstLine(f.Message))
		}
	}
	if len(p.Warnings) > 0 {
		r.Println()
		for _, w := range p.Warnings {
			r.Printf("%s %s\n", r.Warn("warning:"), w)
		}
	}
}

func printNextStep(r *render.Renderer, p *repair.Plan, opts *Options) {
	if len(p.Actions) == 0 {
		if len(p.Instructions) > 0 {
			r.Println()
			r.Println("No file to change: follow the steps above.")
		}
		return
	}
	r.Println()
	cmd := "ckpt repair " + shell.Quote(opts.Checkpoint)
	if opts.Strategy != "" {
		cmd += " --strategy " + string(opts.Strategy)
	}
	if opts.Sink != "" {
		cmd += " --sink " + shell.Quote(opts.Sink)
	}
	r.Printf("Dry run: nothing changed. To apply: %s --execute\n", cmd)
}

func printExecuted(r *render.Renderer, p *repair.Plan, j *journal.Record) {
	r.Println()
	note := "as predicted"
	if p.After != nil && j.Verified != nil && restartText(p.After) != restartText(j.Verified) {
		note = "NOT as predicted: " + restartText(p.After)
	}
	r.Printf("%s %s (%s)\n", r.Good("Applied and verified:"), restartText(j.Verified), note)
	for _, w := range j.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
	r.Printf("Journal and backups: %s\n", j.Location)
	r.Printf("To revert: ckpt repair undo %s\n", shell.Quote(j.Location))
}

func severity(r *render.Renderer, s doctor.Severity) string {
	switch s {
	case doctor.Error:
		return r.Bad(string(s))
	case doctor.Warning:
		return r.Warn(string(s))
	}
	return string(s)
}

func changes(as []journal.Action, steps []string) string {
	switch {
	case len(as) == 0 && len(steps) > 0:
		return "no file; " + plural(len(steps), "manual step")
	case len(as) == 0:
		return "none"
	}
	return plural(len(as), "file change")
}
