package doctor

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// renderReport prints the report the way restic check does: the verdict first, then each
// finding with its code, Spark's error and the next command, most serious first.
func renderReport(r *render.Renderer, rep *doctor.Report, opts *Options) {
	r.Println(r.Hang(2, verdict(r, rep)))
	res := rep.Restart
	r.Println(r.Faint(fmt.Sprintf("checkpoint %s · %s engine · Spark %s", opts.Checkpoint, res.Mode, res.SparkVersion))) // wrapped on a terminal
	r.FaintLines(opts.Detected.Lines())
	// Where the summary says "no problems found", the other checks left out say how far that goes
	// (the broker's is in the summary itself).
	if rep.Max().Rank() < doctor.Warning.Rank() {
		var msgs []string
		for _, n := range rep.NotChecked {
			if n.Check != doctor.CheckKafkaOffsets {
				msgs = append(msgs, n.Message)
			}
		}
		if len(msgs) > 0 {
			r.Println(r.Faint(strings.Join(msgs, " · ")))
		}
	}
	for _, f := range rep.Findings {
		r.Println()
		head := severity(r, f.Severity) + "  " + r.Bold(f.Code)
		if f.Path != "" {
			head += "  " + r.Faint(f.Path)
		}
		r.Println(head)
		r.Println("  " + r.Hang(2, f.Message))
		if f.SparkError != nil {
			block(r, "Spark:", *f.SparkError)
		}
		if k := f.Kafka; k != nil && (k.DataLoss || k.Fails) && k.FailOnDataLossFalse != "" {
			label := "failOnDataLoss=false:"
			if !k.FailOnDataLoss {
				label = "failOnDataLoss=false (as given):"
			}
			r.Printf("  %s %s\n", r.Faint(label), r.Hang(3+len(label), k.FailOnDataLossFalse))
		}
		block(r, "Fix:", f.Fix)
		for _, c := range f.Commands {
			r.Printf("  %s %s\n", r.Faint("Run:  "), c)
		}
	}
	if len(rep.Findings) > 0 {
		r.Println()
		r.Println(r.Faint("Explain a code: ckpt doctor --explain CODE · all codes: docs/doctor.md"))
	}
}

// block prints a labelled, possibly multi-line value with its continuation lines aligned.
func block(r *render.Renderer, label, text string) {
	// Spark's instruction text ends with a newline and spaces: no blank line for them.
	text = strings.TrimRight(text, " \t\n")
	for i, line := range strings.Split(text, "\n") {
		l := "      "
		if i == 0 {
			l = fmt.Sprintf("%-6s", label)
		}
		r.Printf("  %s %s\n", r.Faint(l), r.Hang(3+len(l), line))
	}
}

// severity pads and colours a severity name.
func severity(r *render.Renderer, s doctor.Severity) string {
	name := fmt.Sprintf("%-7s", s)
	switch s {
	case doctor.Error:
		return r.Bad(name)
	case doctor.Warning:
		return r.Warn(name)
	}
	return r.Faint(name)
}

// verdict is the first line: a symbol, the counts and the planner's one-line prediction.
func verdict(r *render.Renderer, rep *doctor.Report) string {
	var counts []string
	for _, c := range []struct {
		s    doctor.Severity
		word string
	}{{doctor.Error, "error"}, {doctor.Warning, "warning"}, {doctor.Info, "note"}} {
		if n := rep.Count(c.s); n > 0 {
			w := c.word
			if n > 1 {
				w += "s"
			}
			counts = append(counts, fmt.Sprintf("%d %s", n, w))
		}
	}
	summary := strings.Join(counts, ", ")
	// "No problems" claims no more than was checked: the broker's offsets first of all.
	unchecked := ""
	for _, n := range rep.NotChecked {
		if n.Check == doctor.CheckKafkaOffsets {
			unchecked = "; " + n.Message
		}
	}
	switch rep.Max() {
	case doctor.Error:
		return r.Bad("✗ "+summary+".") + " " + rep.Restart.Verdict()
	case doctor.Warning:
		return r.Warn("! "+summary+".") + " " + rep.Restart.Verdict()
	case doctor.Info:
		return r.Good("✓ no problems found ("+summary+")"+unchecked+".") + " " + rep.Restart.Verdict()
	}
	return r.Good("✓ no problems found"+unchecked+".") + " " + rep.Restart.Verdict()
}

// withDetected is the -o json report with what was detected ("detected", absent when nothing was).
type withDetected struct {
	*doctor.Report
	Detected *recovery.Detection `json:"detected,omitempty"`
}
