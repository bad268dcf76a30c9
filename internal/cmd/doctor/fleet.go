package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/fleet"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// fleetRow is one checkpoint of `doctor --recursive`.
type fleetRow struct {
	Location string `json:"location"`
	// Status is the worst severity found ("error", "warning", "info"), "ok", or "unreadable"
	// when the checkpoint could not be diagnosed (Error says why).
	Status   string   `json:"status"`
	Errors   int      `json:"errors"`
	Warnings int      `json:"warnings"`
	Notes    int      `json:"notes"`
	Codes    []string `json:"codes"`
	Verdict  string   `json:"verdict,omitempty"`
	Error    string   `json:"error,omitempty"`
	// Engine is the engine and release diagnosed ("sync, Spark 3.5"), detected or given.
	Engine string `json:"engine,omitempty"`

	rank int
}

// fleetDoc is the -o json form of `doctor --recursive`.
type fleetDoc struct {
	Parent      string     `json:"parent"`
	Checkpoints []fleetRow `json:"checkpoints"`
	// Worst is the status of the first row.
	Worst string `json:"worst"`
}

// statusRank orders rows worst first.
var statusRank = map[string]int{"unreadable": 0, "error": 1, "warning": 2, "info": 3, "ok": 4}

// runFleet diagnoses every checkpoint below opts.Checkpoint, one row each, worst first. The exit
// code is the worst: 1 when one could not be read, 3 when one has findings at or above --fail-on.
func runFleet(ctx context.Context, opts *Options) error {
	parent, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	rels, err := fleet.Find(ctx, parent, fleet.Options{})
	if err != nil {
		return err
	}
	if len(rels) == 0 {
		return cli.NoCheckpointBelow(ctx, parent, opts.Checkpoint)
	}
	doc := fleetDoc{Parent: opts.Checkpoint, Checkpoints: make([]fleetRow, 0, len(rels))}
	fails, unreadable := false, false
	for _, rel := range rels {
		row, rep := diagnoseOne(ctx, opts, fleet.Join(opts.Checkpoint, rel))
		if rep != nil && rep.Fails(opts.FailOn) {
			fails = true
		}
		unreadable = unreadable || row.Status == "unreadable"
		doc.Checkpoints = append(doc.Checkpoints, row)
	}
	sort.SliceStable(doc.Checkpoints, func(i, j int) bool { return doc.Checkpoints[i].rank < doc.Checkpoints[j].rank })
	doc.Worst = doc.Checkpoints[0].Status
	if opts.Output == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, doc); err != nil {
			return err
		}
	} else {
		renderFleet(render.New(opts.IO), doc)
	}
	switch {
	case unreadable:
		return exitcode.Silent(exitcode.Failure)
	case fails:
		return exitcode.Silent(exitcode.Findings)
	}
	return nil
}

// diagnoseOne runs doctor on one checkpoint of the fleet, with its own detected defaults.
func diagnoseOne(ctx context.Context, opts *Options, loc string) (fleetRow, *doctor.Report) {
	row := fleetRow{Location: loc, Codes: []string{}}
	fail := func(err error) (fleetRow, *doctor.Report) {
		row.Status, row.Error, row.rank = "unreadable", firstLine(err.Error()), statusRank["unreadable"]
		return row, nil
	}
	store, err := opts.OpenStore(ctx, loc)
	if err != nil {
		return fail(err)
	}
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return fail(err)
	}
	mode, spark, commitFmt := opts.Mode, opts.SparkVersion, opts.CommitFormatVersion
	recovery.DetectDefaults(ctx, cp, &mode, &spark, &commitFmt)
	rep, err := doctor.Run(ctx, cp, doctor.Options{Mode: mode, SparkVersion: spark, CommitFormatVersion: commitFmt, Deep: opts.Deep, Location: loc})
	if err != nil {
		return fail(err)
	}
	row.Errors, row.Warnings, row.Notes = rep.Count(doctor.Error), rep.Count(doctor.Warning), rep.Count(doctor.Info)
	seen := map[string]bool{}
	for _, f := range rep.Findings {
		if !seen[f.Code] {
			seen[f.Code] = true
			row.Codes = append(row.Codes, f.Code)
		}
	}
	row.Status = "ok"
	if m := rep.Max(); m != "" {
		row.Status = string(m)
	}
	row.rank = statusRank[row.Status]
	row.Verdict = rep.Restart.Verdict()
	row.Engine = fmt.Sprintf("%s, Spark %s", rep.Restart.Mode, rep.Restart.SparkVersion)
	return row, rep
}

func renderFleet(r *render.Renderer, doc fleetDoc) {
	counts := map[string]int{}
	for _, c := range doc.Checkpoints {
		counts[c.Status]++
	}
	var parts []string
	// "3 with errors", not "3 error": the count is of checkpoints, the word of their worst finding.
	for _, s := range []struct{ status, words string }{{"unreadable", "unreadable"}, {"error", "with errors"}, {"warning", "with warnings"}, {"info", "with notes"}, {"ok", "ok"}} {
		if n := counts[s.status]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s.words))
		}
	}
	head := fmt.Sprintf("%s below %s: %s", checkpoints(len(doc.Checkpoints)), doc.Parent, strings.Join(parts, ", "))
	switch doc.Worst {
	case "unreadable", "error":
		r.Println(r.Bad("✗ " + head))
	case "warning":
		r.Println(r.Warn("! " + head))
	default:
		r.Println(r.Good("✓ " + head))
	}
	r.Println()
	rows := make([][]string, 0, len(doc.Checkpoints))
	for _, c := range doc.Checkpoints {
		what := strings.Join(c.Codes, " ")
		restart := c.Verdict
		if c.Error != "" {
			restart = c.Error
		}
		rows = append(rows, []string{c.Location, statusText(r, c.Status), what, restart})
	}
	r.Table(render.Table{Headers: []string{"checkpoint", "status", "codes", "restart"}, Rows: rows})
	r.Println()
	r.Println(r.Faint("One checkpoint in full: ckpt doctor <checkpoint>"))
}

func statusText(r *render.Renderer, s string) string {
	switch s {
	case "unreadable", "error":
		return r.Bad(s)
	case "warning":
		return r.Warn(s)
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func checkpoints(n int) string {
	if n == 1 {
		return "1 checkpoint"
	}
	return fmt.Sprintf("%d checkpoints", n)
}
