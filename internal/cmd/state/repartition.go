package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cli/change"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/repartition"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// RepartitionOptions are the inputs of `ckpt state repartition`, separate from cobra so tests
// call runRepartition.
type RepartitionOptions struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	// Rand is the source of the random bits of repair ids (nil: crypto/rand).
	Rand io.Reader

	Checkpoint string
	// Partitions is --partitions N (required, at least 1).
	Partitions          int
	Apply               change.Flags
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	Output              render.Format
	Detected            *recovery.Detection
}

const repartitionLong = `Rehash the state of every stateful operator to N partitions, the way Spark's shuffle places keys
(HashPartitioning: Murmur3 with seed 42 over the operator's key columns, pmod N), so that a
query whose spark.sql.shuffle.partitions was fixed at its first batch can run with another.

The result is what Spark 4.2.0's own offline repartition writes: on a checkpoint whose last batch
L committed, a no-data batch L+1 (offsets/L+1 as offsets/L with the new
spark.sql.shuffle.partitions, commits/L+1 as commits/L) and state version L+2 for every new
partition; no existing file changes. ckpt goes beyond 4.2.0: it writes the HDFS-backed provider
(Spark's default, which 4.2.0 refuses), and the result restarts on Spark 3.5, 4.0, 4.1 and 4.2.
A RocksDB store gets, for each new partition, an L+2 zip naming one new SST file, as 4.2.0 writes
it (each new partition's rows sorted within a memory budget, sorted runs spilled to $TMPDIR).
transformWithState and operators whose key columns cannot be told are refused.

By default it only prints the plan. --execute applies it like a repair: create-only writes, a
journal, verification by the recovery planner; 'ckpt repair undo <journal>' removes every file it
added. Refused while the query runs, and when the last batch did not commit.

The state is read once and the new files stream: --execute writes each new state file to
_ckpt/staging/<run>/ in the checkpoint as it is computed, and the journal places it from there
(a hard link on local disk), so memory stays flat whatever the size of the state.

Exit codes: 0 planned or applied, 1 refused or failed, 2 usage error.`

func newRepartition(env *cli.Env, runF func(*RepartitionOptions) error) *cobra.Command {
	opts := &RepartitionOptions{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
	var output string
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "repartition CHECKPOINT --partitions N",
		Short: "Rehash every operator's state to N partitions (as Spark 4.2.0 does; plan, journal, undo)",
		Long:  repartitionLong,
		Example: `  ckpt state repartition /data/checkpoints/orders --partitions 64
  ckpt state repartition ./ckpt --partitions 8 --execute --yes
  ckpt state repartition ./ckpt --partitions 8 -o json`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			if !cmd.Flags().Changed("partitions") {
				return exitcode.UsageError(errors.New("--partitions N is required: the new number of shuffle partitions"))
			}
			if opts.Partitions < 1 {
				return exitcode.UsageError(fmt.Errorf("--partitions %d: want 1 or more", opts.Partitions))
			}
			f, ro, err := change.ParseFlags(output, &opts.Apply, &restart)
			if err != nil {
				return err
			}
			opts.Output = f
			opts.Mode, opts.SparkVersion, opts.CommitFormatVersion = ro.Mode, ro.SparkVersion, ro.CommitFormatVersion
			if runF != nil {
				return runF(opts)
			}
			return runRepartition(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.IntVar(&opts.Partitions, "partitions", 0, "the new number of shuffle partitions `N`")
	opts.Apply.AddFlags(fl)
	restart.AddFlags(cmd)
	return cmd
}

type repartitionDoc struct {
	*repartition.Plan
	change.Outcome
	Detected *recovery.Detection `json:"detected,omitempty"`
}

func runRepartition(ctx context.Context, opts *RepartitionOptions) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	op, err := openToChange(ctx, opts.OpenStore, opts.Checkpoint, "ckpt state repartition", &opts.Mode, &opts.SparkVersion, &opts.CommitFormatVersion)
	if err != nil {
		return err
	}
	store, cp := op.store, op.cp
	opts.Detected = op.detected
	po := repartition.Options{Partitions: opts.Partitions, Planner: op.planner}
	if opts.Apply.Execute {
		// The new state files are streamed to the staging directory while they are planned
		// (one read of the state), and the journal places them from there. The run's marker
		// says, until the command ends, that its staging is in progress (the journal's lock
		// comes later): `ckpt purge --staging` leaves it alone.
		po.Stage, po.StageRun = store, stageRun(opts.Now, opts.Rand)
		release, err := journal.ClaimStaging(ctx, store, po.StageRun, "state repartition", opts.Version)
		if err != nil {
			return err
		}
		defer release()
	}
	p, err := repartition.NewPlan(ctx, store, po)
	if err != nil {
		return err
	}
	var j *journal.Record
	defer func() {
		// The staged files go when nothing will place them; a journal removes its own once
		// done or undone, and one that stopped half-way keeps them for `ckpt repair resume`.
		if j == nil && p.Staged {
			removeStaged(ctx, opts.IO, store, p.Checkpoint, p.StageRun, p.Actions)
		}
	}()
	if len(p.Actions) > 0 {
		p.Warnings = append(p.Warnings, change.StateWarnings(ctx, change.Env{Now: opts.Now, Checkpoint: cp}, &opts.Apply, store)...)
	}
	jsonOut := opts.Output == render.FormatJSON
	// The JSON names each new file with its digest and size; its bytes (the state) stay out.
	shown := *p
	shown.Actions = withoutData(p.Actions)
	doc := &repartitionDoc{Plan: &shown, Detected: opts.Detected}
	r := render.New(opts.IO)
	return change.Run(ctx, r, change.Change{
		Proposal: change.Proposal{JSON: jsonOut, Doc: doc, Print: func() { printRepartition(r, p, opts) },
			What: "state repartition", Refused: p.Refused, Pending: len(p.Actions) > 0, Execute: opts.Apply.Execute},
		Env:      change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, Rand: opts.Rand, Checkpoint: cp},
		Flags:    &opts.Apply,
		Store:    store,
		Plan:     p.JournalPlan(),
		Question: fmt.Sprintf("Write %d file(s) into %s (no existing file changes)?", len(p.Actions), p.Checkpoint),
		Outcome:  &doc.Outcome,
		Record:   &j,
	})
}

func printRepartition(r *render.Renderer, p *repartition.Plan, opts *RepartitionOptions) {
	kv := [][2]string{{"Checkpoint", render.Escape(p.Checkpoint)}}
	if p.Before != nil {
		kv = append(kv, [2]string{"Restart", strings.TrimPrefix(p.Before.Verdict(), "Restart ")})
	}
	r.KV(kv)
	r.FaintLines(opts.Detected.Lines())
	r.Println()
	if p.Refused != "" {
		r.Printf("%s %s\n", r.Bad("Refused:"), render.Escape(p.Refused))
		return
	}
	r.Printf("Partitions %d → %d: the state of batch %d (version %d) rehashed into version %d, after a no-data batch %d (%s, codec %s).\n",
		p.From, p.To, p.Batch, p.Batch+1, p.Version, p.NewBatch, render.Count(p.Rows, "row"), p.Codec)
	t := render.Table{Headers: []string{"operator", "name", "store", "key columns", "rows", "rows per partition (old)", "rows per partition (new)"}}
	for _, op := range p.Operators {
		for _, st := range op.Stores {
			t.Rows = append(t.Rows, []string{fmt.Sprint(op.ID), render.Escape(op.Name), render.Escape(st.Name), render.Escape(strings.Join(st.KeyColumns, ", ")),
				fmt.Sprint(st.Rows), ints(st.RowsFrom), ints(st.RowsTo)})
		}
	}
	r.Table(t)
	r.Println()
	r.Printf("Files to add (%d, %d bytes; none changed or removed):\n", len(p.Actions), p.Bytes)
	change.PrintActions(r, p.Actions)
	if p.After != nil {
		r.Printf("Restart afterwards: %s (verified by the recovery planner after --execute).\n", strings.TrimPrefix(p.After.Verdict(), "Restart "))
	}
	r.Println()
	r.Printf("Beyond Spark 4.2.0:\n")
	for _, b := range p.BeyondSpark {
		r.Printf("  - %s\n", b)
	}
	for _, w := range p.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), render.Escape(w))
	}
}

func ints(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, " ")
}

// stageRun names the staging directory of one --execute: the time and random bits, as repair
// ids are made.
func stageRun(now func() time.Time, r io.Reader) string {
	if now == nil {
		now = time.Now
	}
	if r == nil {
		r = rand.Reader
	}
	var b [4]byte
	_, _ = io.ReadFull(r, b[:])
	return now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// removeStaged deletes the staged sources of a plan's copies when nothing will place them
// (no journal was written), warning when it cannot.
func removeStaged(ctx context.Context, opts *iostreams.IOStreams, store storage.Store, checkpoint, run string, actions []journal.Action) {
	var files []string
	for _, a := range actions {
		if a.Op == journal.OpCopy {
			files = append(files, a.From)
		}
	}
	if len(files) == 0 {
		return
	}
	if err := journal.RemoveStaged(context.WithoutCancel(ctx), store, files); err != nil {
		fmt.Fprintf(opts.ErrOut, "ckpt: warning: the staged files under %s/%s/%s stay: %s\n",
			render.Escape(checkpoint), journal.StagingDir, render.Escape(run), render.Escape(err.Error()))
	}
}
