// Package purge implements `ckpt purge`.
package purge

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
	"github.com/ckpt-dev/ckpt/internal/cli/change"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/purge"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt purge`, separate from cobra so tests can call run.
type Options struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	// Rand is the source of the random bits of repair ids (cli.Env.Rand; nil: crypto/rand).
	Rand io.Reader

	Checkpoint string
	// Keep is --keep N, the newest batches kept (required, at least MinBatchesToRetain).
	Keep int
	// MinBatchesToRetain is the query's spark.sql.streaming.minBatchesToRetain (default 100).
	MinBatchesToRetain int
	// Sink is a file sink's output directory ("" = none): its expired log files go too.
	Sink string
	// Staging is --staging: list, and with --execute remove, the stale runs under
	// _ckpt/staging instead of purging batches.
	Staging             bool
	Apply               change.Flags
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	Output              render.Format
	// Detected is what the checkpoint showed and the planner options took from it (run).
	Detected *recovery.Detection
}

const long = `Delete the offsets and commits files older than the newest N batches, for checkpoints that
grew to 100k+ files (slow listings, slow restarts).

Never below what Spark needs: --keep is at least minBatchesToRetain (Spark's default 100; say
--min-batches-to-retain if the query sets spark.sql.streaming.minBatchesToRetain lower), and the
files a restart reads (the offsets file before the latest, the latest commit) always stay. The
recovery planner checks that the restart does exactly what it does now. State store files are not
touched.

--sink DIR also deletes the file sink log files Spark's own deleteExpiredLog would delete (those
below the compaction batch before the newest N batches), in a journal of their own in the sink.

By default it only prints the plan (--dry-run says so explicitly). --execute applies it like a
repair: backup, journal, verification; 'ckpt repair undo <journal>' restores every byte.

--staging (instead of --keep) lists the runs under _ckpt/staging: new state files that 'ckpt
state repartition|edit --execute' streams there before its journal, which Spark never reads, left
behind when the command was killed before its journal. --execute removes the stale ones: runs
whose ckpt is gone (a marker names its host and pid) and that no journal may still place (the
repair lock held, or a journal under _ckpt/repairs neither done nor undone, keeps them).

Exit codes: 0 planned or applied, 1 refused or failed, 2 usage error.`

// NewCmd builds `ckpt purge`. runF replaces run in tests of the wiring.
func NewCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
	var output string
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "purge CHECKPOINT --keep N",
		Short: "Delete offsets and commits older than the newest N batches (plan, backup, journal, undo)",
		Long:  long,
		Example: `  ckpt purge /data/checkpoints/orders --keep 1000
  ckpt purge s3://bucket/checkpoints/orders --keep 1000 --execute --yes
  ckpt purge ./ckpt --keep 100 --sink /data/output/orders --execute`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			if opts.Staging {
				if cmd.Flags().Changed("keep") || opts.Sink != "" {
					return exitcode.UsageError(errors.New("--staging removes leftover staged files only: run it without --keep and --sink"))
				}
				f, _, err := change.ParseFlags(output, &opts.Apply, &restart)
				if err != nil {
					return err
				}
				opts.Output = f
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return runStaging(cmd.Context(), opts)
			}
			if !cmd.Flags().Changed("keep") {
				return exitcode.UsageError(errors.New("--keep N is required: how many of the newest batches keep their files"))
			}
			if opts.Keep < 1 {
				return exitcode.UsageError(fmt.Errorf("--keep %d: want 1 or more", opts.Keep))
			}
			if opts.MinBatchesToRetain < 1 {
				return exitcode.UsageError(fmt.Errorf("--min-batches-to-retain %d: want 1 or more", opts.MinBatchesToRetain))
			}
			if opts.Keep < opts.MinBatchesToRetain {
				return exitcode.UsageError(fmt.Errorf("--keep %d is below minBatchesToRetain %d, which Spark keeps itself (--min-batches-to-retain if the query sets spark.sql.streaming.minBatchesToRetain lower)", opts.Keep, opts.MinBatchesToRetain))
			}
			f, ro, err := change.ParseFlags(output, &opts.Apply, &restart)
			if err != nil {
				return err
			}
			opts.Output = f
			opts.Mode, opts.SparkVersion, opts.CommitFormatVersion = ro.Mode, ro.SparkVersion, ro.CommitFormatVersion
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.IntVar(&opts.Keep, "keep", 0, "keep the files of the newest `N` batches (at least --min-batches-to-retain)")
	fl.IntVar(&opts.MinBatchesToRetain, "min-batches-to-retain", logformat.DefaultMinBatchesToRetain, "the query's spark.sql.streaming.minBatchesToRetain")
	fl.StringVar(&opts.Sink, "sink", "", "file sink output `DIR` (with _spark_metadata): delete the log files Spark would expire too")
	fl.BoolVar(&opts.Staging, "staging", false, "instead of batches: list (and with --execute remove) the stale runs under _ckpt/staging left by a killed state repartition or edit")
	opts.Apply.AddFlags(fl)
	restart.AddFlags(cmd)
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	store, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{Command: "ckpt purge"})
	if err != nil {
		return err
	}
	cp, err := checkpoint.LoadAt(ctx, store, loc) // the plan, its verification and the warnings share it
	if err != nil {
		return err
	}
	opts.Detected = recovery.DetectDefaults(ctx, cp, &opts.Mode, &opts.SparkVersion, &opts.CommitFormatVersion)
	po := purge.Options{Keep: opts.Keep, MinBatchesToRetain: opts.MinBatchesToRetain, Checkpoint: cp,
		Planner: recovery.Options{Mode: opts.Mode, SparkVersion: opts.SparkVersion, CommitFormatVersion: opts.CommitFormatVersion}}
	if opts.Sink != "" {
		if po.Sink, err = opts.OpenStore(ctx, opts.Sink); err != nil {
			return fmt.Errorf("--sink: %w", err)
		}
	}
	p, err := purge.NewPlan(ctx, store, po)
	if err != nil {
		return err
	}
	if len(p.Actions) > 0 {
		p.Warnings = append(p.Warnings, change.StateWarnings(ctx, change.Env{Now: opts.Now, Checkpoint: cp}, &opts.Apply, store)...)
	}
	jsonOut := opts.Output == render.FormatJSON
	doc := &purgeDoc{Plan: p, Detected: opts.Detected}
	r := render.New(opts.IO)
	sinkActions := p.Sink != nil && len(p.Sink.Actions) > 0
	c := change.Change{
		Proposal: change.Proposal{JSON: jsonOut, Doc: doc, Print: func() { printPlan(r, p, opts) },
			What: "purge", Refused: p.Refused, Pending: len(p.Actions) > 0 || sinkActions, Execute: opts.Apply.Execute},
		Env:      change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, Rand: opts.Rand, Quiet: true},
		Flags:    &opts.Apply,
		Store:    store,
		Plan:     p.JournalPlan(),
		Question: fmt.Sprintf("Delete %d file(s) of %s (backed up first)?", len(p.Actions), p.Checkpoint),
		Outcome:  &doc.Outcome,
	}
	if sinkActions {
		c.Sink = &change.SinkChange{
			Store:    po.Sink,
			Plan:     p.Sink.JournalPlan(),
			Question: fmt.Sprintf("Delete %d file sink log file(s) of %s (backed up first)?", len(p.Sink.Actions), p.Sink.Sink),
			Journal:  &doc.SinkJournal,
			Failed:   "the file sink's log was not purged",
			Closing: func(j *journal.Record) {
				r.Printf("File sink log: %d file(s) deleted, journal and backups: %s\n", len(p.Sink.Actions), j.Location)
				r.Printf("To revert the sink: ckpt repair undo %s\n", j.Location)
			},
		}
	}
	return change.Run(ctx, r, c)
}

type purgeDoc struct {
	*purge.Plan
	change.Outcome
	SinkJournal *string             `json:"sinkJournal,omitempty"`
	Detected    *recovery.Detection `json:"detected,omitempty"`
}

func printPlan(r *render.Renderer, p *purge.Plan, opts *Options) {
	r.KV([][2]string{
		{"Checkpoint", p.Checkpoint},
		{"Restart", strings.TrimPrefix(p.Before.Verdict(), "Restart ")}, // not "Restart:  Restart resumes…"
	})
	r.FaintLines(opts.Detected.Lines())
	r.Println()
	switch {
	case p.Refused != "":
		r.Printf("%s %s\n", r.Bad("Refused:"), p.Refused)
	case p.From < 0:
		r.Printf("Nothing to purge: the checkpoint has %s, --keep %d keeps them all.\n", fmt.Sprintf("%d offsets files", p.Batches), p.Keep)
	case len(p.Actions) == 0:
		r.Printf("Nothing to purge: every offsets and commits file is at or above batch %d (%s).\n", p.From, p.Why)
	default:
		r.Printf("Delete offsets and commits below batch %d (%s): %d offsets and %d commits files, %s with their checksums, %s.\n",
			p.From, p.Why, p.Offsets, p.Commits, files(len(p.Actions)), bytes(p.Bytes))
		r.Printf("Restart afterwards: %s (unchanged, verified by the recovery planner).\n", strings.TrimPrefix(p.After.Verdict(), "Restart "))
	}
	if s := p.Sink; s != nil {
		if len(s.Actions) == 0 {
			r.Printf("File sink %s: nothing Spark would expire yet (latest batch %d, compact interval %d).\n", s.Sink, s.Latest, s.Interval)
		} else {
			r.Printf("File sink %s: delete %s below the compaction batch %d, %s (Spark's deleteExpiredLog; a journal of its own there).\n",
				s.Sink, files(len(s.Actions)), s.Below, bytes(s.Bytes))
		}
	}
	for _, w := range p.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
}

func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

func bytes(n int64) string {
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
