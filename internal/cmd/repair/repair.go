// Package repair implements `ckpt repair`, `ckpt repair undo` and `ckpt repair resume`.
package repair

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/deltastate"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/repair"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt repair`, separate from cobra so tests can call runRepair.
type Options struct {
	IO *iostreams.IOStreams
	// OpenStore opens a location argument (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	// Now is the clock (journal ids, the liveness window).
	Now func() time.Time
	// Rand is the source of the random bits of repair ids (nil: crypto/rand).
	Rand io.Reader
	// Version names the ckpt build in the journal.
	Version string

	// Checkpoint is the checkpoint location.
	Checkpoint string
	// AllowEmpty accepts an empty or unrelated directory as a checkpoint that has not started
	// (--allow-empty). Default: refuse it, so a typo never reads as a new query.
	AllowEmpty bool
	// Strategy picks a way out of missing-previous-offsets ("" = recommended).
	Strategy repair.Strategy
	// Sink is a file sink's output directory (or its _spark_metadata), "" for none.
	Sink string
	// Delta is --delta-sink: the Delta table the query writes to; its txn action for the query
	// id forbids deleting offsets of batches it has. Default: none.
	Delta cli.DeltaFlags
	// Execute applies the plan; Yes confirms without a prompt.
	Execute, Yes bool
	// DryRun is --dry-run, the explicit form of the default: print the plan only.
	DryRun bool
	// BackupDir is where repair directories go ("" = <checkpoint>/_ckpt/repairs).
	BackupDir string
	// ActiveWindow and Force: see journal.Options.
	ActiveWindow time.Duration
	Force        bool
	// Mode, SparkVersion and CommitFormatVersion describe the restart to plan for.
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	// Detected is what the checkpoint showed and the restart options took from it (set by
	// runRepair; nil when the flags said it all or the defaults stood).
	Detected *recovery.Detection
	// Output is "table" or "json".
	Output render.Format
	// Broker is --bootstrap-server and the Kafka client options: with a broker the predicted
	// replay counts the Kafka records that really exist there, and what the restart after the
	// plan meets on the broker is added to the warnings. Default: none.
	Broker cli.BrokerFlags
}

const long = `Repair what ckpt doctor finds, without losing a byte.

By default repair only prints the plan: each file it would change and why, every way out when
there is a choice, and what the restart does afterwards as the recovery planner predicts it (the
next batch, what runs again, how many records are read twice). Nothing changes.

--execute applies the plan. On a terminal it asks first; otherwise --yes is required. Before the
first change it copies every file it will touch to a backup directory and starts a journal there
(default <checkpoint>/_ckpt/repairs/<id>/, a directory Spark never reads; --backup-dir puts it
elsewhere). The journal is written before each change, so a repair that stops half-way (a crash,
an S3 error) is finished with 'ckpt repair resume <journal>' or reverted byte for byte with
'ckpt repair undo <journal>'. After the last change repair re-reads the checkpoint, runs the
planner again and prints the verified outcome.

What it repairs:
  offsets after a gap          uncommitted offsets files past a missing one are deleted
  async progress tracking      the latest offsets file lacks its predecessor although committed:
                               --strategy delete         delete back to the last consecutive pair
                                                         (replays the batches after it)
                               --strategy copy-previous  write a copy of offsets/L as offsets/L-1
                                                         (replays nothing; derived from Spark's
                                                         code, not documented by Spark)
                               --strategy copy-committed  the async crash (latest batch uncommitted):
                                                         write a copy of offsets/C (latest commit)
                                                         as offsets/L-1; batch L re-runs from C's
                                                         end, nothing lost (stateless queries only)
                               --strategy spark-procedure  Spark's documented steps; no file change
                               The recommended strategy loses nothing and replays the least.
  commits ahead of offsets     the commits without offsets are deleted
  corrupt latest file          an empty or truncated latest offsets or commit file is deleted
                               (an unfinished write: the batch runs again)
  leftovers                    .tmp files and orphan .crc files are deleted
Every deleted offsets file takes the commits at or above it, and every file its .crc.

With --bootstrap-server (plus Spark's kafka.* client options: --kafka-option, --kafka-option-file)
the predicted replay counts the Kafka records that still exist on the broker instead of
subtracting offsets, and the problems the restart after the plan meets there (records deleted by
retention, a recreated topic, …; see ckpt doctor) are listed as warnings: repair does not fix
them. The broker is only read.

Safety: repair refuses when a log file is younger than --active-window (the query may be running)
or another repair holds the lock (<checkpoint>/_ckpt/lock); --force overrides both with a warning.
With --sink it refuses to delete offsets of a batch the file sink has committed, since Spark would
plan that batch again and the sink would silently skip it; --delta-sink does the same for a Delta
sink (the version of its txn action whose appId is the query id). It only ever changes files directly in
offsets/ and commits/, never through a symbolic link.

Exit codes:
  0  the plan was printed, or applied and verified (or there was nothing to repair)
  1  the repair was refused or failed (a half-way repair names its journal)
  2  usage error, or --execute without --yes when nobody can be asked`

// NewCmd builds `ckpt repair` with its undo and resume subcommands. runF replaces runRepair in
// tests of the flag wiring.
func NewCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
	var output, strategy string
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "repair CHECKPOINT",
		Short: "Plan and apply a safe repair (backup, journal, verify, undo)",
		Long:  long,
		Example: `  ckpt repair /data/checkpoints/orders                  # print the plan
  ckpt repair /data/checkpoints/orders --execute        # apply it (asks first)
  ckpt repair s3://bucket/ckpt --strategy delete --execute --yes
  ckpt repair ./ckpt --sink /data/output/orders         # refuse plans that lose sink output
  ckpt repair undo ./ckpt/_ckpt/repairs/20250101T120000Z-1a2b3c4d`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Output = f
			if opts.Strategy, err = repair.ParseStrategy(strategy); err != nil {
				return exitcode.UsageError(err)
			}
			ro, err := restart.Options()
			if err != nil {
				return err
			}
			opts.Mode, opts.SparkVersion, opts.CommitFormatVersion = ro.Mode, ro.SparkVersion, ro.CommitFormatVersion
			if opts.ActiveWindow < 0 {
				return exitcode.UsageError(fmt.Errorf("--active-window %s: want 0 (no check) or more", opts.ActiveWindow))
			}
			if err := cli.CheckDryRun(opts.DryRun, opts.Execute, "--execute"); err != nil {
				return err
			}
			if opts.Sink != "" && opts.Delta.Sink != "" {
				return exitcode.UsageError(errors.New("--sink and --delta-sink: a query has one sink, give one of them"))
			}
			if opts.Yes && !opts.Execute {
				return exitcode.UsageError(errors.New("--yes confirms --execute; without --execute nothing changes"))
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRepair(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.StringVar(&strategy, "strategy", "", "way out of missing-previous-offsets: delete, copy-previous, copy-committed or spark-procedure (default: the recommended one)")
	strategies := make([]string, len(repair.Strategies))
	for i, s := range repair.Strategies {
		strategies[i] = string(s)
	}
	_ = cmd.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions(strategies, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&opts.Sink, "sink", "", "file sink output `DIR` (with _spark_metadata): never delete offsets the sink has committed")
	opts.Delta.AddSinkFlag(fl)
	fl.BoolVar(&opts.Execute, "execute", false, "apply the plan (default: only print it)")
	cli.AddDryRunFlag(fl, &opts.DryRun)
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "apply without asking (required with --execute when stdin is not a terminal)")
	fl.StringVar(&opts.BackupDir, "backup-dir", "", "where to put the journal and backups (default `DIR` <checkpoint>/_ckpt/repairs)")
	fl.DurationVar(&opts.ActiveWindow, "active-window", journal.DefaultActiveWindow, "refuse when a log file is younger than this (0: no check)")
	fl.BoolVar(&opts.Force, "force", false, "run even if the query looks alive or another repair holds the lock")
	restart.AddFlags(cmd)
	cli.AddAllowEmptyFlag(fl, &opts.AllowEmpty)
	opts.Broker.AddFlags(fl)

	cmd.AddCommand(newJournalCmd(env, "undo", nil), newJournalCmd(env, "resume", nil), newListCmd(env))
	return cmd
}

func (o *Options) plannerOptions(sinkLatest *int64) recovery.Options {
	return recovery.Options{Mode: o.Mode, SparkVersion: o.SparkVersion, CommitFormatVersion: o.CommitFormatVersion, SinkLatest: sinkLatest}
}

func runRepair(ctx context.Context, opts *Options) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	store, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{AllowEmpty: opts.AllowEmpty, AllowEmptyFlag: true, Command: "ckpt repair"})
	if err != nil {
		return err
	}
	var sinkLatest *int64
	if opts.Sink != "" {
		if sinkLatest, err = readSinkLatest(ctx, opts); err != nil {
			return err
		}
	}
	// One load (on Require's root listing) serves the detection, the sinks, the broker, every
	// strategy's overlays and the warnings: each loaded the checkpoint again before.
	cp, err := checkpoint.LoadAt(ctx, store, loc)
	if err != nil {
		return err
	}
	opts.Detected = recovery.DetectDefaults(ctx, cp, &opts.Mode, &opts.SparkVersion, &opts.CommitFormatVersion)
	ropts := repair.Options{Planner: opts.plannerOptions(sinkLatest), Strategy: opts.Strategy, Sink: opts.Sink, Checkpoint: cp}
	if opts.Delta.Sink != "" {
		txn, err := deltastate.ReadSink(ctx, opts.OpenStore, cp, opts.Delta.Sink)
		if err != nil {
			return err
		}
		ropts.Planner.SinkLatest, ropts.Planner.SinkKind, ropts.Sink = &txn.Version, recovery.SinkKindDelta, opts.Delta.Sink
	}
	if opts.Broker.Enabled() {
		if ropts.Broker, err = readBroker(ctx, cp, opts); err != nil {
			return err
		}
	}
	plan, err := repair.NewPlan(ctx, store, ropts)
	if err != nil {
		return err
	}
	if ropts.Broker != nil {
		if err := addBrokerWarnings(ctx, cp, plan, ropts.Broker); err != nil {
			return err
		}
	}
	addStateWarnings(ctx, store, cp, plan, opts)

	out := &output{Plan: plan, Journal: nil, Executed: false, Detected: opts.Detected}
	r := render.New(opts.IO)
	json := opts.Output == render.FormatJSON

	switch {
	case plan.Refused != "":
		if json {
			if err := render.JSON(opts.IO.Out, out.doc()); err != nil {
				return err
			}
		} else {
			printPlan(r, plan, opts)
		}
		return exitcode.New(exitcode.Failure, errors.New("repair refused: "+plan.Refused))
	case !opts.Execute || len(plan.Actions) == 0:
		if json {
			if err := render.JSON(opts.IO.Out, out.doc()); err != nil {
				return err
			}
			return stillFails(plan)
		}
		printPlan(r, plan, opts)
		printNextStep(r, plan, opts)
		return stillFails(plan)
	}

	// --execute with something to change: ask, or require --yes.
	if !opts.Yes {
		if json || !opts.IO.CanPrompt() {
			why := "stdin is not a terminal"
			if json {
				why = "-o json output cannot carry a prompt"
			}
			return exitcode.UsageError(fmt.Errorf("--execute needs --yes when %s (review the plan first: run without --execute)", why))
		}
		printPlan(r, plan, opts)
		// A query that looks alive is refused before the question, not after the answer.
		if eo, err := opts.execOptions(ctx); err != nil {
			return err
		} else if err := journal.CheckIdleBefore(ctx, store, eo); err != nil {
			return err
		}
		ok, err := opts.IO.Confirm(fmt.Sprintf("Apply %s to %s?", plural(len(plan.Actions), "change"), plan.Checkpoint))
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(opts.IO.Out, "Nothing changed.")
			return nil
		}
	} else if !json {
		printPlan(r, plan, opts)
	}

	eo, err := opts.execOptions(ctx)
	if err != nil {
		return err
	}
	j, err := journal.Apply(ctx, store, plan.JournalPlan(), eo)
	if j != nil {
		out.Journal = &j.Location
		out.Executed = j.State == journal.StateDone
		out.Verified = j.Verified
		out.JournalState = j.State
	}
	if err != nil {
		if json && j != nil {
			_ = render.JSON(opts.IO.Out, out.doc())
		}
		return err
	}
	if json {
		if err := render.JSON(opts.IO.Out, out.doc()); err != nil {
			return err
		}
		return stillFails(plan)
	}
	printExecuted(r, plan, j)
	return stillFails(plan)
}

// stillFails is exit 3 (exitcode.Findings, as replay's failed prediction) when the restart
// after the plan still fails on the checkpoint: "Nothing to repair." or an applied repair is no
// all-clear then, and a script must not read it as one.
func stillFails(plan *repair.Plan) error {
	if plan.After != nil && plan.After.Blocked() {
		return exitcode.Silent(exitcode.Findings)
	}
	return nil
}

func (o *Options) execOptions(ctx context.Context) (journal.Options, error) {
	eo := journal.Options{
		Now:          o.Now,
		Rand:         o.Rand,
		Tool:         "ckpt " + o.Version,
		ActiveWindow: o.ActiveWindow,
		Force:        o.Force,
		Progress: func(format string, args ...any) {
			fmt.Fprintf(o.IO.ErrOut, "ckpt: "+format+"\n", args...)
		},
	}
	if o.BackupDir != "" {
		bs, err := o.OpenStore(ctx, o.BackupDir)
		if err != nil {
			return eo, fmt.Errorf("--backup-dir: %w", err)
		}
		eo.BackupRoot = &journal.Location{Store: bs}
	}
	return eo, nil
}

// readSinkLatest reads the file sink's latest batch from one listing, as doctor does: the output
// directory holds _spark_metadata, or the argument is that directory. An empty log is -1.
func readSinkLatest(ctx context.Context, opts *Options) (*int64, error) {
	s, err := opts.OpenStore(ctx, opts.Sink)
	if err != nil {
		return nil, fmt.Errorf("--sink: %w", err)
	}
	latest, ok, err := sinklog.LatestAt(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("read the file sink log: %w", err)
	}
	if !ok {
		latest = -1
	}
	return &latest, nil
}

// addStateWarnings tells, at plan time, what would stop --execute: a live-looking query or a held
// lock. The plan itself is harmless to print in either case.
func addStateWarnings(ctx context.Context, s storage.Store, cp *checkpoint.Checkpoint, p *repair.Plan, opts *Options) {
	if l, err := journal.DescribeLock(ctx, s, nil); err == nil && l != nil {
		p.Warnings = append(p.Warnings, l.Warning())
	}
	if len(p.Actions) == 0 || opts.ActiveWindow <= 0 || opts.Now == nil {
		return
	}
	if err := journal.CheckLive(ctx, s, cp, opts.Now(), opts.ActiveWindow, nil); err != nil {
		p.Warnings = append(p.Warnings, strings.TrimSuffix(firstLine(err.Error()), ".")+"; --execute will refuse")
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "ch") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// pluralU is plural for a count of batch ids, which can exceed an int.
func pluralU(n uint64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "ch") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
