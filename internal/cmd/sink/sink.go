// Package sink implements `ckpt sink verify|repair|size`: a file sink's output checked against
// its _spark_metadata log, missing or damaged compaction files rebuilt, and the log's growth.
package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cli/change"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The subcommands.
const (
	ActionVerify = "verify"
	ActionRepair = "repair"
	ActionSize   = "size"
)

// StrategyRebuildCompact names `ckpt sink repair` in its journal.
const StrategyRebuildCompact journal.Strategy = "sink-rebuild-compact"

// Options are the inputs of `ckpt sink`, separate from cobra so tests can call run.
type Options struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	Rand      io.Reader

	// Action is verify, repair or size.
	Action string
	// Output is the file sink's output directory (or its _spark_metadata directory).
	Output string
	Format render.Format
	// Repair: the compact interval for a log without compaction files (default 10), whether to
	// leave out entries whose data files are gone (default false), the sink's retention option
	// (default 0: none; verify too), and the apply flags.
	CompactInterval int
	DropMissing     bool
	Retention       time.Duration
	Apply           change.Flags
	// MaxProblems bounds the problems verify lists per code (default 1000; counts stay exact).
	MaxProblems int
}

const long = `Check, repair and measure a file sink's output and its _spark_metadata log.

  verify  the files the log lists as live (the latest compaction and the batches after it, adds
          minus deletes, as Spark's allFiles) against the data files in OUTPUT: missing, extra
          (invisible to readers: typical after a failed batch) and size mismatches, with doctor's
          codes (ckpt doctor --explain CODE)
  repair  rebuild a missing or damaged N.compact by Spark's compaction rules (the previous
          compaction and every batch since, minus deletes). Only prints the plan unless
          --execute; the change is journaled and 'ckpt repair undo <journal>' reverts it.
          Entries whose data files are gone are kept unless --drop-missing
  size    the log's growth (compaction file sizes and entries) and the settings that bound it

Exit codes: 0 fine (or planned/applied), 1 failed or refused, 2 usage error, 3 verify found an
error-level problem.`

// NewCmd builds `ckpt sink`. runF replaces run in tests of the wiring.
func NewCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sink (verify|repair|size) OUTPUT",
		Short: "Verify, repair and measure a file sink's output and _spark_metadata log",
		Long:  long,
	}
	for _, action := range []string{ActionVerify, ActionRepair, ActionSize} {
		cmd.AddCommand(newSub(env, action, runF))
	}
	return cmd
}

func newSub(env *cli.Env, action string, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand, Action: action}
	var output string
	short := map[string]string{
		ActionVerify: "Compare the files the sink's log lists as live with the output's data files",
		ActionRepair: "Rebuild a missing or damaged compaction file of the sink's log (plan, journal, undo)",
		ActionSize:   "Show the sink log's growth and the settings that bound it",
	}[action]
	c := &cobra.Command{
		Use:   action + " OUTPUT",
		Short: short,
		Long:  long,
		Args:  cli.ExactArgs(1, "a file sink output directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Output = args[0]
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Format = f
			if action == ActionRepair {
				if err := opts.Apply.Validate(); err != nil {
					return err
				}
				if opts.CompactInterval <= 0 {
					return exitcode.UsageError(fmt.Errorf("--compact-interval %d: want 1 or more", opts.CompactInterval))
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(c, &output)
	fl := c.Flags()
	switch action {
	case ActionVerify:
		fl.IntVar(&opts.MaxProblems, "max-problems", 1000, "list at most `N` problems per code (counts stay exact)")
		fl.DurationVar(&opts.Retention, "retention", 0, "the sink's retention option: readers skip entries older than this, and so does verify (0: none)")
	case ActionRepair:
		fl.IntVar(&opts.CompactInterval, "compact-interval", sinklog.DefaultCompactInterval, "spark.sql.streaming.fileSink.log.compactInterval, used when the log has no compaction file left")
		fl.BoolVar(&opts.DropMissing, "drop-missing", false, "leave out of the rebuilt file the entries whose data files are gone")
		fl.DurationVar(&opts.Retention, "retention", 0, "the sink's retention option: leave out entries older than this, as Spark's compaction does (0: none)")
		opts.Apply.AddFlags(fl)
	}
	return c
}

// Run runs one subcommand.
func Run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	store, err := opts.OpenStore(ctx, OutputDir(opts.Output))
	if err != nil {
		return err
	}
	switch opts.Action {
	case ActionVerify:
		return verify(ctx, opts, store)
	case ActionRepair:
		return repairLog(ctx, opts, store)
	case ActionSize:
		return size(ctx, opts, store)
	}
	return exitcode.UsageError(fmt.Errorf("unknown sink action %q", opts.Action))
}

// OutputDir is the output directory of what the user typed: the parent when it names
// _spark_metadata itself (verify needs the data files beside the log).
func OutputDir(uri string) string {
	u := strings.TrimRight(uri, `/`)
	if sinklog.Locate(u) != "" {
		return uri
	}
	i := strings.LastIndex(u, "/")
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return u[:i]
}

func verify(ctx context.Context, opts *Options, store storage.Store) error {
	v, err := sinklog.Verify(ctx, store, sinklog.VerifyOptions{MaxProblems: opts.MaxProblems, Retention: opts.Retention, Now: opts.Now})
	if err != nil {
		return err
	}
	findings := doctor.SinkFindings(v, opts.Output)
	fail := false
	for _, f := range findings {
		if f.Severity == doctor.Error {
			fail = true
		}
	}
	if v.Counts[sinklog.CodeCorruptLogFile] > 0 || v.Counts[sinklog.CodeEntryOutside] > 0 {
		fail = true
	}
	if opts.Format == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, struct {
			*sinklog.Verification
			OK bool `json:"ok"`
		}{v, !fail}); err != nil {
			return err
		}
	} else {
		printVerification(render.New(opts.IO), opts.Output, v)
	}
	if fail {
		return exitcode.Silent(exitcode.Findings)
	}
	return nil
}

func printVerification(r *render.Renderer, output string, v *sinklog.Verification) {
	base := v.Base
	if v.BaseGuessed {
		base += " (guessed from the entries: the log names another location)"
	}
	r.KV([][2]string{
		{"Output", output},
		{"Entries resolve against", base},
		{"Latest batch", fmt.Sprint(v.Latest)},
		{"Compact interval", fmt.Sprint(v.CompactInterval)},
		{"Live files (log)", liveCell(v)},
		{"Data files (output)", fmt.Sprintf("%d (%d bytes)", v.Present, v.PresentBytes)},
	})
	r.Println()
	if v.OK() {
		r.Printf("%s every live file is present with its size, and no other data file is there\n", r.Good("OK:"))
		return
	}
	rows := [][]string{}
	for _, p := range v.Problems {
		rows = append(rows, []string{p.Code, p.Path, sizeCell(p.LogSize), sizeCell(p.Size), p.LogFile})
	}
	r.Table(render.Table{Title: "Problems", Headers: []string{"CODE", "PATH", "LOG SIZE", "SIZE", "LISTED IN"}, Rows: rows})
	var counts []string
	for _, code := range []string{sinklog.CodeLogBatchMissing, sinklog.CodeCorruptLogFile, sinklog.CodeEntryOutside,
		sinklog.CodeFileMissing, sinklog.CodeFileSizeMismatch, sinklog.CodeFileExtra} {
		if n := v.Counts[code]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", code, n))
		}
	}
	r.Printf("\n%s\n", strings.Join(counts, ", "))
	r.Printf("%s\n", r.Faint("ckpt doctor --explain CODE says what each means and how to fix it"))
}

func liveCell(v *sinklog.Verification) string {
	s := fmt.Sprintf("%d (%d bytes)", v.Live, v.LiveBytes)
	if v.Expired > 0 {
		s += fmt.Sprintf("; %d past --retention, skipped by readers", v.Expired)
	}
	return s
}

func sizeCell(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// repairDoc is the JSON of `ckpt sink repair`.
type repairDoc struct {
	*sinklog.Rebuild
	Actions  []journal.Action `json:"actions"`
	Executed bool             `json:"executed"`
	Journal  *string          `json:"journal"`
}

func repairLog(ctx context.Context, opts *Options, store storage.Store) error {
	rb, err := sinklog.PlanRebuild(ctx, store, sinklog.RebuildOptions{
		DefaultInterval: opts.CompactInterval, DropMissing: opts.DropMissing, Retention: opts.Retention, Now: opts.Now})
	if err != nil {
		return err
	}
	doc := &repairDoc{Rebuild: rb, Actions: []journal.Action{}}
	for _, c := range rb.Compacts {
		reason := fmt.Sprintf("rebuilt from %s: %s", strings.Join(c.From, ", "), render.CountAs(int64(c.Entries), "entry", "entries"))
		if c.Replaces == "" {
			doc.Actions = append(doc.Actions, journal.Action{Op: journal.OpWrite, Path: c.Path, Data: c.Data, Reason: reason, Code: doctor.CodeSinkLogBatchMissing})
			continue
		}
		if c.CRC != "" {
			doc.Actions = append(doc.Actions, journal.Action{Op: journal.OpDelete, Path: c.CRC,
				Reason: "checksum of the replaced file: Hadoop would reject the rebuilt bytes with it", Code: doctor.CodeCorruptLogFile})
		}
		code, why := doctor.CodeCorruptLogFile, "damaged; "
		if c.Reason == "drop-missing" {
			code, why = doctor.CodeSinkFileMissing, fmt.Sprintf("%d entr(ies) naming gone data files left out; ", len(c.Dropped))
		}
		doc.Actions = append(doc.Actions, journal.Action{Op: journal.OpReplace, Path: c.Path, Data: c.Data, Reason: why + reason, Code: code})
	}
	for i := range doc.Actions {
		if err := journal.Fill(ctx, store, &doc.Actions[i]); err != nil {
			return err
		}
	}
	jsonOut := opts.Format == render.FormatJSON
	r := render.New(opts.IO)
	if !jsonOut {
		printRebuild(r, rb, doc.Actions)
	}
	if len(doc.Actions) == 0 {
		if jsonOut {
			_ = render.JSON(opts.IO.Out, doc)
		}
		if len(rb.Unrepairable) > 0 {
			return change.Refused("sink repair", strings.Join(rb.Unrepairable, "; "))
		}
		return nil
	}
	if !opts.Apply.Execute {
		if jsonOut {
			return render.JSON(opts.IO.Out, doc)
		}
		r.Println()
		r.Printf("Dry run: nothing changed. To apply, run the same command with --execute\n")
		return nil
	}
	// A running query may be writing (or compacting) the log right now: the newest log file
	// says so, as the newest offsets file does for a checkpoint.
	if w := opts.Apply.ActiveWindow; w > 0 && !opts.Apply.Force && opts.Now != nil {
		if e, ok, err := sinklog.LastWrite(ctx, store); err != nil {
			return err
		} else if age := opts.Now().Sub(e.ModTime); ok && !e.ModTime.IsZero() && age < w {
			return change.Refused("sink repair", fmt.Sprintf("%s was written %s ago (within --active-window %s): the query looks alive. "+
				"Stop it first, or pass --force (or --active-window 0) if it is stopped", e.Path, age.Round(time.Second), w))
		}
	}
	env := change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, JSON: jsonOut, Rand: opts.Rand}
	plan := &journal.Plan{Strategy: StrategyRebuildCompact, Actions: doc.Actions}
	j, err := change.Apply(ctx, env, &opts.Apply, store, plan, fmt.Sprintf("Write %d rebuilt compaction file(s) in %s?", len(rb.Compacts), opts.Output))
	if errors.Is(err, change.ErrDeclined) {
		return nil
	}
	if j != nil {
		doc.Journal, doc.Executed = &j.Location, j.State == journal.StateDone
	}
	if jsonOut {
		if jerr := render.JSON(opts.IO.Out, doc); err == nil {
			err = jerr
		}
	}
	if err != nil {
		return err
	}
	if !jsonOut {
		r.Println()
		r.Printf("%s %d compaction file(s) written\n", r.Good("Applied:"), len(rb.Compacts))
		r.Printf("Journal and backups: %s\n", j.Location)
		r.Printf("To revert: ckpt repair undo %s\n", shell.Quote(j.Location))
		r.Printf("Check the result: ckpt sink verify %s\n", shell.Quote(opts.Output))
	}
	return nil
}

func printRebuild(r *render.Renderer, rb *sinklog.Rebuild, actions []journal.Action) {
	r.Printf("Sink log: latest batch %d, compact interval %d\n", rb.Latest, rb.CompactInterval)
	for _, u := range rb.Unrepairable {
		r.Printf("%s %s\n", r.Bad("cannot repair:"), u)
	}
	if len(rb.Compacts) == 0 {
		if len(rb.Unrepairable) == 0 {
			r.Printf("%s every compaction file Spark reads is present and parses; nothing to rebuild\n", r.Good("OK:"))
		}
		return
	}
	for _, c := range rb.Compacts {
		r.Printf("\n%s (%s): %d entries, %d bytes of data", c.Path, c.Reason, c.Entries, c.Bytes)
		if c.Salvaged > 0 {
			r.Printf(", %d salvaged from the damaged file", c.Salvaged)
		}
		if len(c.Dropped) > 0 {
			r.Printf(", %d dropped (--drop-missing)", len(c.Dropped))
		}
		if c.Expired > 0 {
			r.Printf(", %d past --retention", c.Expired)
		}
		r.Printf("\n  from %s\n", strings.Join(c.From, ", "))
		for _, w := range c.Warnings {
			r.Printf("  %s %s\n", r.Warn("warning:"), w)
		}
	}
	r.Println()
	r.Printf("Plan:\n")
	change.PrintActions(r, actions)
}

func size(ctx context.Context, opts *Options, store storage.Store) error {
	g, err := sinklog.MeasureGrowth(ctx, store)
	if err != nil {
		return err
	}
	if opts.Format == render.FormatJSON {
		return render.JSON(opts.IO.Out, g)
	}
	r := render.New(opts.IO)
	kv := [][2]string{
		{"Latest batch", fmt.Sprint(g.Latest)},
		{"Compact interval", fmt.Sprintf("%d (%s)", g.CompactInterval, g.IntervalSource)},
		{"Log size", fmt.Sprintf("%d bytes (%d compaction files, %d batch files of %d bytes)", g.LogBytes, len(g.Compacts), g.Deltas, g.DeltaBytes)},
	}
	if g.OldestEntry != nil {
		kv = append(kv, [2]string{"Oldest live entry", g.OldestEntry.Format(time.RFC3339)})
	}
	if len(g.Compacts) >= 2 {
		kv = append(kv, [2]string{"Growth", fmt.Sprintf("%.0f bytes and %.1f entries per batch", g.BytesPerBatch, g.EntriesPerBatch)})
	}
	r.KV(kv)
	if len(g.Compacts) > 0 {
		rows := [][]string{}
		for _, c := range g.Compacts {
			e := fmt.Sprint(c.Entries)
			if c.Error != "" {
				e += " (damaged)"
			}
			rows = append(rows, []string{fmt.Sprint(c.Batch), fmt.Sprint(c.Bytes), e, c.Modified.UTC().Format(time.RFC3339)})
		}
		r.Println()
		r.Table(render.Table{Title: "Compaction files", Headers: []string{"BATCH", "BYTES", "ENTRIES", "WRITTEN"}, Rows: rows})
	}
	if p := g.Projection(1000); p != "" {
		r.Printf("\n%s\n", p)
	}
	r.Println()
	rows := [][]string{}
	for _, s := range g.Settings {
		rows = append(rows, []string{s.Key, s.Default, s.Effect})
	}
	r.Table(render.Table{Title: "What bounds it", Headers: []string{"SETTING", "DEFAULT", "EFFECT"}, Rows: rows})
	return nil
}
