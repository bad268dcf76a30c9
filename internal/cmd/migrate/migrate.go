// Package migrate is `ckpt migrate`: rewrite a checkpoint a newer Spark release wrote in the
// formats an older release reads (internal/migrate plans it; the journal applies and undoes it).
package migrate

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
	"github.com/ckpt-dev/ckpt/internal/migrate"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt migrate`, separate from cobra so tests call runMigrate.
type Options struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	// Rand is the source of the random bits of repair ids (nil: crypto/rand).
	Rand io.Reader

	Checkpoint string
	// To is the --to-spark release line ("3.5").
	To     string
	Mode   recovery.Mode
	Apply  change.Flags
	Output render.Format
}

const long = `Rewrite a checkpoint that a newer Spark release wrote in the formats an older release reads, so
that the older release restarts the query (a rollback after an upgrade).

What it rewrites:
  - checkpoint format v2 (spark.sql.streaming.stateStore.checkpointFormatVersion=2, Spark 4.0+,
    RocksDB): commit files v2 with the state's unique ids, and state files named
    <version>_<uuid>.zip / .changelog, which Spark 3.5, 4.0 and 4.1 with the default setting
    refuse (UnsupportedLogVersion, INVALID_LOG_VERSION.EXACT_MATCH_VERSION) and which even
    4.2 cannot list with the setting at 1;
  - RocksDB SST files of rocksdb.formatVersion 6, which Spark 3.5's RocksDB refuses.
State files are not rewritten in place: after the last committed batch L it adds a no-data
batch L+1 (offsets/L+1 a copy of offsets/L, commits/L+1 a v1 commit) and state version L+2 of
every store in format v1, and moves the v2 files into the backup.

Refused, with the reason: transformWithState state (3.5 has none; ckpt does not write its
column families), offsets v2 and commits v3 for a release that reads neither, Avro-encoded
state for 3.5, row checksums (4.2) for older releases, a last batch that did not commit, and
a query that runs.

By default it only prints the plan. --execute applies it like a repair: a journal, backups,
verification by the recovery planner for the target release; 'ckpt repair undo <journal>'
restores every byte (until the older release has run a batch).

Exit codes: 0 planned, applied or nothing to do, 1 refused or failed, 2 usage error.`

// NewCmd returns `ckpt migrate`.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
	var output, mode string
	cmd := &cobra.Command{
		Use:   "migrate CHECKPOINT --to-spark VERSION",
		Short: "Rewrite a newer Spark's checkpoint for an older release (plan, journal, undo)",
		Long:  long,
		Example: `  ckpt migrate ./ckpt --to-spark 3.5
  ckpt migrate ./ckpt --to-spark 4.0 --execute --yes
  ckpt migrate s3://bucket/ckpt --to-spark 3.5 -o json`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			if opts.To == "" {
				return exitcode.UsageError(fmt.Errorf("--to-spark is required: the release to migrate to (%s)", strings.Join(migrate.Targets, ", ")))
			}
			to, err := migrate.Target(opts.To)
			if err != nil {
				return exitcode.UsageError(err)
			}
			opts.To = to
			if mode != "" {
				m, err := recovery.ParseMode(mode)
				if err != nil {
					return exitcode.UsageError(fmt.Errorf("--mode: %w", err))
				}
				opts.Mode = m
			}
			f, _, err := change.ParseFlags(output, &opts.Apply, &cli.RestartFlags{})
			if err != nil {
				return err
			}
			opts.Output = f
			if runF != nil {
				return runF(opts)
			}
			return runMigrate(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.StringVar(&opts.To, "to-spark", "", "the release to migrate to: "+strings.Join(migrate.Targets, ", "))
	fl.StringVar(&mode, "mode", "", "the engine of the restart predicted: sync or async (default: detected)")
	opts.Apply.AddFlags(fl)
	return cmd
}

type doc struct {
	*migrate.Plan
	change.Outcome
}

func runMigrate(ctx context.Context, opts *Options) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	store, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{Command: "ckpt migrate"})
	if err != nil {
		return err
	}
	cp, err := checkpoint.LoadAt(ctx, store, loc)
	if err != nil {
		return err
	}
	if opts.Mode == "" {
		// Only the engine is detected: the release is the target, the format v1.
		to, one := opts.To, 1
		recovery.DetectDefaults(ctx, cp, &opts.Mode, &to, &one)
	}
	p, err := migrate.NewPlan(ctx, store, migrate.Options{To: opts.To, Mode: opts.Mode})
	if err != nil {
		return err
	}
	if len(p.Actions) > 0 {
		p.Warnings = append(p.Warnings, change.StateWarnings(ctx, change.Env{Now: opts.Now, Checkpoint: cp}, &opts.Apply, store)...)
	}
	shown := *p
	shown.Actions = make([]journal.Action, len(p.Actions))
	for i, a := range p.Actions {
		a.Data = nil // the JSON names each new file with its digest and size
		shown.Actions[i] = a
	}
	d := &doc{Plan: &shown}
	r := render.New(opts.IO)
	err = change.Run(ctx, r, change.Change{
		Proposal: change.Proposal{JSON: opts.Output == render.FormatJSON, Doc: d, Print: func() { printPlan(r, p) },
			What: "migrate", Refused: p.Refused, Pending: len(p.Actions) > 0, Execute: opts.Apply.Execute},
		Env:      change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, Rand: opts.Rand, Checkpoint: cp},
		Flags:    &opts.Apply,
		Store:    store,
		Plan:     p.JournalPlan(),
		Question: fmt.Sprintf("Rewrite %s for Spark %s (%d file change(s), v2 files moved into the backup)?", p.Checkpoint, p.To, len(p.Actions)),
		Outcome:  &d.Outcome,
	})
	if errors.Is(err, change.ErrDeclined) {
		return nil
	}
	return err
}

func printPlan(r *render.Renderer, p *migrate.Plan) {
	kv := [][2]string{{"Checkpoint", render.Escape(p.Checkpoint)}, {"To", "Spark " + p.To}}
	if p.Before != nil {
		kv = append(kv, [2]string{"Restart now", strings.TrimPrefix(p.Before.Verdict(), "Restart ")})
	}
	r.KV(kv)
	r.Println()
	if len(p.Found) > 0 {
		r.Printf("In a format newer than Spark %s reads:\n", p.To)
		for _, it := range p.Found {
			r.Printf("  - %s\n", render.Escape(it.What))
			switch {
			case it.Refused != "":
				r.Printf("    %s %s\n", r.Bad("cannot be expressed:"), render.Escape(it.Refused))
			case it.Change != "":
				r.Printf("    %s\n", r.Faint(render.Escape(it.Change)))
			}
		}
		r.Println()
	}
	if p.Refused != "" {
		r.Printf("%s %s\n", r.Bad("Refused:"), render.Escape(p.Refused))
		return
	}
	if p.Nothing {
		r.Printf("Nothing to rewrite: Spark %s reads this checkpoint as it is.\n", p.To)
		return
	}
	r.Printf("Adds the no-data batch %d after batch %d and writes state version %d in checkpoint format v1 (%d bytes).\n", p.NewBatch, p.Batch, p.Version, p.Bytes)
	r.Printf("File changes (%d):\n", len(p.Actions))
	change.PrintActions(r, p.Actions)
	if p.After != nil {
		r.Printf("Restart on Spark %s afterwards: %s (verified by the recovery planner after --execute).\n", p.To, strings.TrimPrefix(p.After.Verdict(), "Restart "))
	}
	for _, w := range p.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), render.Escape(w))
	}
}
