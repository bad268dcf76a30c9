package repair

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// JournalOptions are the inputs of `ckpt repair undo` and `ckpt repair resume`.
type JournalOptions struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string

	// Op is "undo" or "resume".
	Op string
	// Journal is the repair directory (or its journal/ directory, or a snapshot in it).
	Journal string
	// Checkpoint overrides the checkpoint the journal names ("" = from the journal).
	Checkpoint string
	// Last: Journal is a checkpoint, and the journal is its newest repair not undone (--last).
	Last       bool
	Yes, Force bool
	// DryRun shows the journal's actions and changes nothing (--dry-run). Default: false.
	DryRun       bool
	ActiveWindow time.Duration
	Output       render.Format
	// Verbose is the global -v: every action and every restored file, one line each, instead of
	// the summary a journal of more than listLimit actions gets.
	Verbose bool
}

// listLimit is the most actions undo and resume list one by one without -v.
const listLimit = 20

var journalLong = map[string]string{
	"undo": `Restore every file a repair changed to the bytes it had before the repair.

JOURNAL is the repair directory printed by 'ckpt repair --execute' (by default
<checkpoint>/_ckpt/repairs/<id>), its journal/ directory, or one snapshot file in it. undo reads
the newest snapshot, compares each file the repair touched with the hashes recorded before and
after the change, and restores from the backup only what the repair changed. A file that has
changed since (a restarted query wrote it) stops the undo before anything is touched, since
restoring would destroy that write. Running undo twice is harmless.

An undo changes the checkpoint, so it asks first on a terminal and needs --yes otherwise. It takes
the repair lock; the lock left by a repair that stopped half-way is its own and is taken over.`,
	"resume": `Finish a repair that stopped half-way (a crash, a storage error).

JOURNAL is the repair directory printed by 'ckpt repair --execute'. resume backs up what was not
backed up yet, applies the actions the file hashes show as not yet applied, then verifies the
checkpoint with the planner, exactly as the original run would have. A file with bytes that
neither the original nor the repair explain stops it before anything is touched.

resume asks first on a terminal and needs --yes otherwise.`,
}

func newJournalCmd(env *cli.Env, op string, runF func(context.Context, *JournalOptions) error) *cobra.Command {
	opts := &JournalOptions{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Op: op}
	var output string
	short := map[string]string{
		"undo":   "Restore a checkpoint byte for byte from a repair's journal (--last: its newest repair)",
		"resume": "Finish a repair that stopped half-way, from its journal",
	}[op]
	cmd := &cobra.Command{
		Use:   op + " JOURNAL" + map[string]string{"undo": " | CHECKPOINT --last"}[op],
		Short: short,
		Long:  journalLong[op],
		Args:  cli.ExactArgs(1, "a repair journal (the directory printed by ckpt repair --execute)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Journal = args[0]
			if v := cmd.Flag("verbose"); v != nil && v.Value.String() == "true" {
				opts.Verbose = true
			}
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Output = f
			if opts.ActiveWindow < 0 {
				return exitcode.UsageError(fmt.Errorf("--active-window %s: want 0 (no check) or more", opts.ActiveWindow))
			}
			if err := cli.CheckDryRun(opts.DryRun, opts.Yes, "--yes"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runJournal(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "go ahead without asking (required when stdin is not a terminal)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what the journal holds and would be "+map[string]string{"undo": "restored", "resume": "finished"}[op]+"; change nothing")
	fl.BoolVar(&opts.Force, "force", false, "run even if the query looks alive or another repair holds the lock")
	fl.DurationVar(&opts.ActiveWindow, "active-window", journal.DefaultActiveWindow, "refuse when a log file is younger than this (0: no check)")
	fl.StringVar(&opts.Checkpoint, "checkpoint", "", "the checkpoint `LOCATION`, when it is not where the journal says (moved since)")
	if op == "undo" {
		fl.BoolVar(&opts.Last, "last", false, "JOURNAL is a checkpoint: undo its newest repair not undone (ckpt repair list shows them)")
	}
	return cmd
}

// journalDoc is the -o json form of undo and resume.
type journalDoc struct {
	Op         string          `json:"op"`
	Journal    string          `json:"journal"`
	Checkpoint string          `json:"checkpoint"`
	State      journal.State   `json:"state"`
	Actions    []journal.Entry `json:"actions"`
	Verified   any             `json:"verified"`
	Warnings   []string        `json:"warnings"`
}

func runJournal(ctx context.Context, opts *JournalOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.Last {
		cs, err := opts.OpenStore(ctx, opts.Journal)
		if err != nil {
			return err
		}
		if opts.Journal, err = lastJournal(ctx, cs, opts.Journal); err != nil {
			return err
		}
	}
	dir := journal.DirOf(opts.Journal)
	js, err := opts.OpenStore(ctx, dir)
	if err != nil {
		return err
	}
	loc := journal.Location{Store: js}
	j, err := journal.Read(ctx, loc)
	if err != nil {
		return noJournalHint(ctx, opts, err)
	}
	cpURI := opts.Checkpoint
	if cpURI == "" {
		cpURI = j.Checkpoint
		if c, ok := journal.CheckpointOf(dir); ok {
			// The journal sits in the checkpoint's own _ckpt/: the checkpoint is where it is now,
			// even if it was moved since the repair.
			cpURI = c
		}
	}
	cs, err := opts.OpenStore(ctx, cpURI)
	if err != nil {
		return err
	}
	r := render.New(opts.IO)
	json := opts.Output == render.FormatJSON
	if !json {
		r.KV([][2]string{
			{"Journal", dir},
			{"Checkpoint", cpURI},
			{"Repair", fmt.Sprintf("%s (%s, %s)", j.ID, orNone(string(j.Strategy)), j.State)},
		})
		if opts.Verbose || len(j.Actions) <= listLimit {
			for i, a := range j.Actions {
				line := fmt.Sprintf("  %d. %s %s", i+1, a.Op, a.Path)
				if a.Op == journal.OpCopy {
					line = fmt.Sprintf("  %d. copy %s to %s", i+1, a.From, a.Path)
				}
				r.Printf("%s  %s\n", line, r.Faint("["+string(a.State)+"]"))
			}
		} else {
			for _, g := range summarize(j.Actions) {
				r.Printf("  %s\n", g)
			}
			r.Printf("  %s\n", r.Faint("(-v lists every file, -o json too)"))
		}
	}
	if opts.DryRun {
		if json {
			return render.JSON(opts.IO.Out, journalDoc{Op: opts.Op, Journal: dir, Checkpoint: cpURI, State: j.State, Actions: j.Actions, Warnings: []string{}})
		}
		r.Printf("Dry run: nothing changed. To %s: ckpt repair %s %s\n", opts.Op, opts.Op, shell.Quote(dir))
		return nil
	}
	if opts.Op == "undo" && j.State == journal.StateUndone {
		// Nothing to change, so nothing to confirm: said as such, exit 0, with or without --yes.
		if json {
			return render.JSON(opts.IO.Out, journalDoc{Op: opts.Op, Journal: dir, Checkpoint: cpURI, State: j.State, Actions: j.Actions, Warnings: []string{}})
		}
		r.Printf("%s this repair was undone already (%s); nothing to do.\n", r.Good("Undone:"), j.Updated.UTC().Format(time.RFC3339))
		return nil
	}
	if !opts.Yes {
		if json || !opts.IO.CanPrompt() {
			return exitcode.UsageError(fmt.Errorf("%s changes the checkpoint: it needs --yes when stdin is not a terminal", opts.Op))
		}
		q := map[string]string{"undo": "Restore these files to their state before the repair?", "resume": "Finish this repair?"}[opts.Op]
		ok, err := opts.IO.Confirm(q)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(opts.IO.Out, "Nothing changed.")
			return nil
		}
	}
	quiet := !opts.Verbose && len(j.Actions) > listLimit
	eo := journal.Options{
		Now: opts.Now, Tool: "ckpt " + opts.Version, ActiveWindow: opts.ActiveWindow, Force: opts.Force,
		Progress: func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			if quiet && perFile(line) {
				return // the summary at the end says it in a few lines
			}
			fmt.Fprintf(opts.IO.ErrOut, "ckpt: %s\n", line)
		},
	}
	started := time.Now()
	if j.Sink != "" {
		// One journal covers the checkpoint and its file sink's log (offsets reset --sink,
		// rewind --sink): both halves are undone or finished together.
		if eo.Sink, err = opts.OpenStore(ctx, j.Sink); err != nil {
			return fmt.Errorf("the file sink %s of this journal: %w", j.Sink, err)
		}
	}
	var res *journal.Record
	if opts.Op == "undo" {
		res, err = journal.Undo(ctx, cs, loc, eo)
	} else {
		res, err = journal.Resume(ctx, cs, loc, eo)
	}
	if err != nil {
		return err
	}
	if json {
		d := journalDoc{Op: opts.Op, Journal: dir, Checkpoint: cpURI, State: res.State, Actions: res.Actions, Warnings: res.Warnings}
		if res.Verified != nil {
			d.Verified = res.Verified
		}
		if d.Warnings == nil {
			d.Warnings = []string{}
		}
		return render.JSON(opts.IO.Out, d)
	}
	r.Println()
	for _, w := range res.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
	if opts.Op == "undo" {
		r.Printf("%s every file the repair changed has its original bytes again.\n", r.Good("Undone:"))
		if quiet {
			r.Printf("%s\n", undoSummary(res.Actions, time.Since(started)))
		}
		r.Printf("Check with: ckpt doctor %s\n", shell.Quote(cpURI))
		return nil
	}
	r.Printf("%s %s\n", r.Good("Applied and verified:"), restartText(res.Verified))
	r.Printf("To revert: ckpt repair undo %s\n", shell.Quote(dir))
	return nil
}

// perFile reports whether a progress line is about one file ("restored offsets/3").
func perFile(line string) bool {
	for _, p := range []string{"restored ", "delete ", "copy ", "write ", "replace "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// group is the actions of one operation in one directory.
type group struct {
	dir   string
	op    journal.Op
	n     int
	bytes int64
}

func groups(as []journal.Entry) []group {
	var out []group
	idx := map[string]int{}
	for _, a := range as {
		dir := path.Dir(a.Path) + "/"
		if a.Store != "" {
			dir = a.Store + ":" + dir
		}
		k := dir + "\x00" + string(a.Op)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, group{dir: dir, op: a.Op})
		}
		out[i].n++
		out[i].bytes += a.Size
	}
	return out
}

// summarize is the journal's actions in a few lines: per directory and operation, how many files
// and bytes.
func summarize(as []journal.Entry) []string {
	verb := map[journal.Op]string{journal.OpDelete: "moved into the backup", journal.OpCopy: "created by copy", journal.OpWrite: "written", journal.OpReplace: "replaced"}
	var out []string
	for _, g := range groups(as) {
		out = append(out, fmt.Sprintf("%-16s %s %s (%s)", escape(g.dir), files(g.n), verb[g.op], size(g.bytes)))
	}
	return out
}

// undoSummary closes an undo of many files: how many were restored and removed per directory,
// the bytes, the time.
func undoSummary(as []journal.Entry, took time.Duration) string {
	var parts []string
	var total int
	var bytes int64
	for _, g := range groups(as) {
		what := "restored"
		if g.op == journal.OpCopy || g.op == journal.OpWrite {
			what = "removed"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", escape(g.dir), files(g.n), what))
		total += g.n
		bytes += g.bytes
	}
	return fmt.Sprintf("%s in all (%s; %s), in %s.", files(total), strings.Join(parts, ", "), size(bytes), took.Round(time.Millisecond))
}

// escape quotes a name with control characters, so a file name never reaches the terminal raw.
func escape(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError {
			return strconv.Quote(s)
		}
	}
	return s
}

func files(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n == 1 {
		return s + " file"
	}
	return s + " files"
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func orNone(s string) string {
	if s == "" {
		return "single repair"
	}
	return s
}
