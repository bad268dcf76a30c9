// Package change proposes and applies a journaled plan for the commands that change a
// checkpoint (`ckpt offsets reset`, `ckpt rewind`, `ckpt purge`, `ckpt state repartition`,
// `ckpt sink repair`): the shared --execute, --yes, --backup-dir, --active-window and --force
// flags (ParseFlags checks them with -o and the restart flags), and Run, the one tail after a
// plan: the plan or dry run, the confirmation, journal.Apply, the -o json document or the
// closing lines that name the journal and `ckpt repair undo`.
package change

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Flags are the apply flags.
type Flags struct {
	// Execute applies the plan (default: only print it); Yes confirms without a prompt.
	Execute, Yes bool
	// DryRun is --dry-run, the explicit form of the default (print the plan only).
	DryRun bool
	// BackupDir is where the journal and backups go (default <checkpoint>/_ckpt/repairs).
	BackupDir string
	// ActiveWindow refuses when the checkpoint looks in use (default journal.DefaultActiveWindow;
	// a liveness record of `ckpt run` answers at once, see docs/offsets.md); Force overrides.
	ActiveWindow time.Duration
	Force        bool
}

// AddFlags registers the apply flags.
func (f *Flags) AddFlags(fl *pflag.FlagSet) {
	fl.BoolVar(&f.Execute, "execute", false, "apply the plan (default: only print it)")
	cli.AddDryRunFlag(fl, &f.DryRun)
	fl.BoolVarP(&f.Yes, "yes", "y", false, "apply without asking (required with --execute when stdin is not a terminal)")
	fl.StringVar(&f.BackupDir, "backup-dir", "", "where to put the journal and backups (default `DIR` <checkpoint>/_ckpt/repairs)")
	fl.DurationVar(&f.ActiveWindow, "active-window", journal.DefaultActiveWindow, "for checkpoints Spark writes: refuse when a log file is younger than this (0: no check)")
	fl.BoolVar(&f.Force, "force", false, "run even if the query looks alive or a repair holds the lock")
}

// Validate checks the flags' combination.
func (f *Flags) Validate() error {
	if f.ActiveWindow < 0 {
		return exitcode.UsageError(fmt.Errorf("--active-window %s: want 0 (no check) or more", f.ActiveWindow))
	}
	if err := cli.CheckDryRun(f.DryRun, f.Execute, "--execute"); err != nil {
		return err
	}
	if f.Yes && !f.Execute {
		return exitcode.UsageError(errors.New("--yes confirms --execute; without --execute nothing changes"))
	}
	return nil
}

// Env is what Apply needs from the command.
type Env struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	JSON      bool
	// Rand is the source of the random bits of repair ids (nil: crypto/rand; tests pin it).
	Rand io.Reader
	// Sink is the file sink output directory a plan's actions with Store "sink" change (the
	// --sink half of offsets reset and rewind, in the same journal). nil: none.
	Sink storage.Store
	// Quiet leaves out the line per changed file on stderr (ckpt purge changes thousands; its
	// progress shows on a terminal instead). Default false.
	Quiet bool
	// Checkpoint is the checkpoint the plan was made from, loaded a moment before: StateWarnings
	// checks liveness on it instead of listing the checkpoint again. nil: load it.
	Checkpoint *checkpoint.Checkpoint
}

// ErrDeclined is returned when the user answers no.
var ErrDeclined = errors.New("declined")

// Apply asks (or requires --yes) and executes p with repair's machinery. It returns ErrDeclined
// when the user says no.
func Apply(ctx context.Context, env Env, f *Flags, s storage.Store, p *journal.Plan, question string) (*journal.Record, error) {
	if !f.Yes {
		if env.JSON || !env.IO.CanPrompt() {
			why := "stdin is not a terminal"
			if env.JSON {
				why = "-o json output cannot carry a prompt"
			}
			return nil, exitcode.UsageError(fmt.Errorf("--execute needs --yes when %s (review the plan first: run without --execute)", why))
		}
		ok, err := env.IO.Confirm(question)
		if err != nil {
			return nil, err
		}
		if !ok {
			fmt.Fprintln(env.IO.Out, "Nothing changed.")
			return nil, ErrDeclined
		}
	}
	eo := journal.Options{
		Now:          env.Now,
		Tool:         "ckpt " + env.Version,
		ActiveWindow: f.ActiveWindow,
		Force:        f.Force,
		Progress:     progress(env.IO, env.Quiet),
		Rand:         env.Rand,
		Sink:         env.Sink,
		Hook:         killHook(),
	}
	if f.BackupDir != "" {
		bs, err := env.OpenStore(ctx, f.BackupDir)
		if err != nil {
			return nil, fmt.Errorf("--backup-dir: %w", err)
		}
		eo.BackupRoot = &journal.Location{Store: bs}
	}
	return journal.Apply(ctx, s, p, eo)
}

// killAfterEnv makes the process kill itself with SIGKILL right after its N-th file change: the
// crash test of every journaled command (kill -9 during --execute, then undo restores byte for
// byte). Only tests set it.
const killAfterEnv = "CKPT_TEST_KILL_AFTER_CHANGES"

// killAtEnv makes the process kill itself with SIGKILL at the N-th point of the engine's run
// (journal.Options.Hook: "locked", "journaled", "backed-up", "applying", "changed",
// "applied", "verified"), or at the first point of that name: the kill matrices of the tests.
const killAtEnv = "CKPT_TEST_KILL_AT"

func killHook() func(string) {
	at := os.Getenv(killAtEnv)
	if at == "" {
		return nil
	}
	n, numeric := strconv.Atoi(at)
	count := 0
	return func(point string) {
		count++
		if (numeric == nil && count == n) || point == at {
			killSelf()
		}
	}
}

func progress(io *iostreams.IOStreams, quiet bool) func(format string, args ...any) {
	killAfter, _ := strconv.Atoi(os.Getenv(killAfterEnv))
	changes := 0
	return func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		if !quiet {
			fmt.Fprintf(io.ErrOut, "ckpt: %s\n", line)
		}
		if killAfter <= 0 {
			return
		}
		for _, op := range []journal.Op{journal.OpDelete, journal.OpCopy, journal.OpWrite, journal.OpReplace} {
			if strings.HasPrefix(line, string(op)+" ") {
				changes++
			}
		}
		if changes == killAfter {
			killSelf()
		}
	}
}

// PrintExecuted closes a successful --execute: the verified restart, warnings, the journal, undo.
func PrintExecuted(r *render.Renderer, predicted *recovery.Result, j *journal.Record) {
	r.Println()
	note := "as predicted"
	if predicted != nil && j.Verified != nil && predicted.Verdict() != j.Verified.Verdict() {
		note = "NOT as predicted: " + predicted.Verdict()
	}
	verified := "unknown"
	if j.Verified != nil {
		verified = strings.TrimPrefix(j.Verified.Verdict(), "Restart ")
	}
	r.Printf("%s %s (%s)\n", r.Good("Applied and verified:"), verified, note)
	for _, w := range j.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
	r.Printf("Journal and backups: %s\n", j.Location)
	r.Printf("To revert: ckpt repair undo %s\n", shell.Quote(j.Location))
}

// PrintActions lists a plan's file changes.
func PrintActions(r *render.Renderer, as []journal.Action) {
	for i, a := range as {
		switch a.Op {
		case journal.OpCopy:
			r.Printf("  %d. copy %s to %s\n", i+1, a.From, a.Path)
		case journal.OpDelete:
			r.Printf("  %d. move %s into the backup\n", i+1, a.Path)
		case journal.OpReplace:
			r.Printf("  %d. replace %s (the original moves into the backup)\n", i+1, a.Path)
		default:
			r.Printf("  %d. %s %s\n", i+1, a.Op, a.Path)
		}
		r.Printf("     %s\n", r.Faint(a.Reason))
	}
}

// Refused is the error of a refused plan (exit code 1).
func Refused(what, reason string) error {
	return exitcode.New(exitcode.Failure, fmt.Errorf("%s refused: %s", what, reason))
}

// StateWarnings tells, at plan time, what would stop --execute: a held repair lock, or a query
// that is (or looks) alive. The plan itself is harmless to print either way.
func StateWarnings(ctx context.Context, env Env, f *Flags, s storage.Store) []string {
	var out []string
	if l, err := journal.DescribeLock(ctx, s, nil); err == nil && l != nil {
		out = append(out, l.Warning())
	}
	if env.Now == nil {
		return out
	}
	cp := env.Checkpoint
	if cp == nil {
		var err error
		if cp, err = checkpoint.Load(ctx, s); err != nil {
			return out
		}
	}
	if err := journal.CheckLive(ctx, s, cp, env.Now(), f.ActiveWindow, nil); err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		out = append(out, strings.TrimSuffix(msg, ".")+"; --execute will refuse")
	}
	return out
}

// Proposal is what a changing command shows before it may apply anything.
type Proposal struct {
	JSON    bool   // -o json: Doc is written instead of Print's table
	Doc     any    // the -o json document
	Print   func() // the plan for people
	What    string // the command, for a refusal ("offsets reset")
	Refused string // why the plan refuses, or ""
	Pending bool   // the plan has something to change
	Execute bool   // --execute
}

// Propose renders the plan and reports whether to go on and apply it. A refused plan is
// rendered and returned as an error; a dry run, or a plan with nothing to change, ends after
// the plan with the line that says how to apply it.
func Propose(out io.Writer, r *render.Renderer, p Proposal) (bool, error) {
	if p.Refused != "" {
		if p.JSON {
			_ = render.JSON(out, p.Doc)
		} else {
			p.Print()
		}
		return false, Refused(p.What, p.Refused)
	}
	if !p.JSON {
		p.Print()
	}
	if p.Pending && p.Execute {
		return true, nil
	}
	if p.JSON {
		return false, render.JSON(out, p.Doc)
	}
	if p.Pending {
		r.Println()
		r.Printf("Dry run: nothing changed. To apply, run the same command with --execute\n")
	}
	return false, nil
}

// ParseFlags checks the flags every command that changes a checkpoint shares, in the order the
// commands report them: -o, the apply flags, then the restart flags. It returns the output
// format and the restart to predict (Mode, SparkVersion, CommitFormatVersion).
func ParseFlags(output string, f *Flags, restart *cli.RestartFlags) (render.Format, recovery.Options, error) {
	format, err := cli.ParseOutput(output)
	if err != nil {
		return "", recovery.Options{}, err
	}
	if err := f.Validate(); err != nil {
		return "", recovery.Options{}, err
	}
	ro, err := restart.Options()
	if err != nil {
		return "", recovery.Options{}, err
	}
	return format, ro, nil
}

// Outcome is what the -o json document of a change says about applying it.
type Outcome struct {
	Executed bool    `json:"executed"`
	Journal  *string `json:"journal"`
}

// Change is one command's change to a checkpoint, from its plan to its closing lines.
type Change struct {
	// Proposal is the plan as the command shows it (Proposal.JSON: -o json).
	Proposal
	// Env is what applying needs (Env.JSON is set from Proposal.JSON).
	Env   Env
	Flags *Flags
	// Store is the checkpoint, Plan the change to it (no actions: only Sink changes anything),
	// Question what the confirmation asks.
	Store    storage.Store
	Plan     *journal.Plan
	Question string
	// Outcome is the document's record of the journal, filled when there is one.
	Outcome *Outcome
	// SinkJournal, when set, receives the journal's location once the change succeeded: the
	// plan changes the file sink's log too (--sink), in the same journal.
	SinkJournal **string
	// Verified, when set, receives the verified restart whenever there is a journal.
	Verified **recovery.Result
	// Record, when set, receives the journal whenever there is one.
	Record **journal.Record
	// Closing, when set, prints what follows the closing lines of a successful change.
	Closing func(j *journal.Record)
	// Sink is a second change in the file sink's own store and journal, applied after the
	// checkpoint's (purge --sink); nil: none.
	Sink *SinkChange
}

// SinkChange is the file sink's half of a change, with a journal of its own.
type SinkChange struct {
	Store    storage.Store
	Plan     *journal.Plan
	Question string
	// Journal receives the sink journal's location, Failed names what was not done when it fails,
	// and Closing prints the lines after it succeeds.
	Journal **string
	Failed  string
	Closing func(j *journal.Record)
}

// Run shows the plan and, with --execute, applies it: the confirmation (once for both halves),
// the engine, and then the -o json document or the closing lines. A refused plan is an error
// (exit code 1); a declined confirmation is not.
func Run(ctx context.Context, r *render.Renderer, c Change) error {
	out := c.Env.IO.Out
	if ok, err := Propose(out, r, c.Proposal); !ok {
		return err
	}
	c.Env.JSON = c.JSON
	flags := *c.Flags
	if len(c.Plan.Actions) > 0 {
		j, err := Apply(ctx, c.Env, &flags, c.Store, c.Plan, c.Question)
		if errors.Is(err, ErrDeclined) {
			return nil
		}
		if j != nil {
			c.Outcome.Journal, c.Outcome.Executed = &j.Location, j.State == journal.StateDone
			if c.Verified != nil {
				*c.Verified = j.Verified
			}
			if c.Record != nil {
				*c.Record = j
			}
		}
		if err != nil {
			if c.JSON && j != nil {
				_ = render.JSON(out, c.Doc)
			}
			return err
		}
		if c.SinkJournal != nil {
			// One journal covers the checkpoint and the sink's log: resume and undo do both.
			*c.SinkJournal = &j.Location
		}
		if !c.JSON {
			PrintExecuted(r, c.Plan.After, j)
			if c.Closing != nil {
				c.Closing(j)
			}
		}
		flags.Yes = true // asked once
	}
	if s := c.Sink; s != nil && len(s.Plan.Actions) > 0 {
		flags.ActiveWindow = 0 // the query's liveness was checked on the checkpoint
		j, err := Apply(ctx, c.Env, &flags, s.Store, s.Plan, s.Question)
		if errors.Is(err, ErrDeclined) {
			return nil
		}
		if j != nil {
			*s.Journal = &j.Location
		}
		if err != nil {
			if c.JSON {
				_ = render.JSON(out, c.Doc)
			}
			return fmt.Errorf("%s: %w", s.Failed, err)
		}
		if !c.JSON {
			s.Closing(j)
		}
	}
	if c.JSON {
		return render.JSON(out, c.Doc)
	}
	return nil
}
