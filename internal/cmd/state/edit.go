package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	"github.com/ckpt-dev/ckpt/internal/stateedit"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// EditOptions are the inputs of `ckpt state edit`, separate from cobra so tests call runEdit.
type EditOptions struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	// Rand is the source of the random bits of repair ids (nil: crypto/rand).
	Rand io.Reader

	Checkpoint string
	// Edit is the edit: one of Where, DropOperator, Evict (with the operator it is limited to).
	Edit                stateedit.Options
	Apply               change.Flags
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	Output              render.Format
	Detected            *recovery.Detection
}

const editLong = `Drop state rows: the keys matching an expression, one operator's whole state, or the rows a
given watermark would already have evicted. The restart then loads state without them; every other
key keeps its value.

  --where EXPR                   drop the rows where EXPR is true. EXPR is an expression in the
                                 language of 'ckpt run --filter' over key and value (the state
                                 row's key and value structs: key.k, value.count) and
                                 partition_id; timestamps and dates are times (compare with
                                 date("2024-01-08")), decimals numbers.
  --operator ID --drop-operator  drop every row of operator ID.
  --evict-before-watermark WM    drop the rows Spark's eviction would drop at watermark WM
                                 (milliseconds since the epoch, or an RFC 3339 time): the
                                 operator's key must hold the event-time column (a timestamp, or
                                 a window, compared by its end), as a windowed aggregation's or a
                                 dropDuplicates' on the event time does.
--operator ID limits --where and --evict-before-watermark to one operator.

State files are never rewritten: as 'ckpt state repartition' and Spark 4.2.0's repartition do,
the edit adds a no-data batch L+1 after the last committed batch L (offsets/L+1 and commits/L+1
copies of L's) and state version L+2 of every store and partition: on the HDFS-backed provider
a delta removing the dropped keys (an empty snapshot for a dropped operator), on RocksDB a
changelog deleting them; other operators get an empty one. The watermark in the offset log is
not changed.

Refused: stream-stream joins' rows (their four stores change together; --drop-operator drops a
join whole), transformWithState, state checkpoint format v2, a last batch that did not
commit, and a query that runs.

By default it only prints the plan. --execute applies it like a repair: create-only writes, a
journal, verification by the recovery planner; 'ckpt repair undo <journal>' removes every file it
added.

Exit codes: 0 planned or applied, 1 refused or failed, 2 usage error.`

func newEdit(env *cli.Env, runF func(*EditOptions) error) *cobra.Command {
	opts := &EditOptions{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
	var output, evict string
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "edit CHECKPOINT (--where EXPR | --operator ID --drop-operator | --evict-before-watermark WM)",
		Short: "Drop state rows by expression, operator or watermark (plan, journal, undo)",
		Long:  editLong,
		Example: `  ckpt state edit ./ckpt --where 'key.k == "poison"'
  ckpt state edit ./ckpt --operator 1 --drop-operator --execute --yes
  ckpt state edit ./ckpt --evict-before-watermark 2024-01-11T00:00:00Z -o json`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			fl := cmd.Flags()
			opts.Edit.HasOperator = fl.Changed("operator")
			if fl.Changed("evict-before-watermark") {
				ms, err := parseWatermark(evict)
				if err != nil {
					return exitcode.UsageError(err)
				}
				opts.Edit.Evict, opts.Edit.EvictBefore = true, ms
			}
			if err := checkEdit(&opts.Edit); err != nil {
				return exitcode.UsageError(err)
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
			return runEdit(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	fl.StringVar(&opts.Edit.Where, "where", "", "drop the rows where this expression over key, value and partition_id is true")
	fl.Int64Var(&opts.Edit.Operator, "operator", 0, "the operator `ID` the edit is limited to (required by --drop-operator)")
	fl.BoolVar(&opts.Edit.DropOperator, "drop-operator", false, "drop every row of the --operator")
	fl.StringVar(&evict, "evict-before-watermark", "", "drop the rows a watermark `WM` (ms since the epoch or an RFC 3339 time) would have evicted")
	opts.Apply.AddFlags(fl)
	restart.AddFlags(cmd)
	return cmd
}

// checkEdit is the usage check of the edit flags (one edit; --drop-operator with --operator).
func checkEdit(o *stateedit.Options) error {
	n := 0
	for _, b := range []bool{o.Where != "", o.DropOperator, o.Evict} {
		if b {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("say what to drop: --where EXPR, --operator ID --drop-operator, or --evict-before-watermark WM")
	case n > 1:
		return errors.New("--where, --drop-operator and --evict-before-watermark are separate edits: choose one")
	case o.DropOperator && !o.HasOperator:
		return errors.New("--drop-operator needs --operator ID: the operator whose state is dropped")
	}
	return nil
}

// parseWatermark reads milliseconds since the epoch or an RFC 3339 time (UTC without a zone).
func parseWatermark(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("--evict-before-watermark %q: want milliseconds since the epoch or a time like 2024-01-11T00:00:00Z", s)
}

type editDoc struct {
	*stateedit.Plan
	change.Outcome
	Detected *recovery.Detection `json:"detected,omitempty"`
}

func runEdit(ctx context.Context, opts *EditOptions) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	op, err := openToChange(ctx, opts.OpenStore, opts.Checkpoint, "ckpt state edit", &opts.Mode, &opts.SparkVersion, &opts.CommitFormatVersion)
	if err != nil {
		return err
	}
	store, cp := op.store, op.cp
	opts.Detected = op.detected
	o := opts.Edit
	o.Planner = op.planner
	if opts.Apply.Execute {
		// As `state repartition`: the new state files stream to the staging directory while
		// they are planned, and the journal places them from there.
		o.Stage, o.StageRun = store, stageRun(opts.Now, opts.Rand)
		release, err := journal.ClaimStaging(ctx, store, o.StageRun, "state edit", opts.Version)
		if err != nil {
			return err
		}
		defer release()
	}
	p, err := stateedit.NewPlan(ctx, store, o)
	if errors.Is(err, stateedit.ErrOptions) {
		return exitcode.UsageError(err)
	}
	if err != nil {
		return err
	}
	var j *journal.Record
	defer func() {
		// A journal removes its staged files once done or undone; one that stopped half-way
		// keeps them for `ckpt repair resume`.
		if j == nil && p.Staged {
			removeStaged(ctx, opts.IO, store, p.Checkpoint, p.StageRun, p.Actions)
		}
	}()
	if len(p.Actions) > 0 {
		p.Warnings = append(p.Warnings, change.StateWarnings(ctx, change.Env{Now: opts.Now, Checkpoint: cp}, &opts.Apply, store)...)
	}
	// The JSON names each new file with its digest and size; its bytes (the state) stay out.
	shown := *p
	shown.Actions = withoutData(p.Actions)
	doc := &editDoc{Plan: &shown, Detected: opts.Detected}
	r := render.New(opts.IO)
	return change.Run(ctx, r, change.Change{
		Proposal: change.Proposal{JSON: opts.Output == render.FormatJSON, Doc: doc, Print: func() { printEdit(r, p, opts) },
			What: "state edit", Refused: p.Refused, Pending: len(p.Actions) > 0, Execute: opts.Apply.Execute},
		Env:      change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, Rand: opts.Rand, Checkpoint: cp},
		Flags:    &opts.Apply,
		Store:    store,
		Plan:     p.JournalPlan(),
		Question: fmt.Sprintf("Write %d file(s) into %s, dropping %d state row(s) (no existing file changes)?", len(p.Actions), p.Checkpoint, p.Dropped),
		Outcome:  &doc.Outcome,
		Record:   &j,
	})
}

func printEdit(r *render.Renderer, p *stateedit.Plan, opts *EditOptions) {
	kv := [][2]string{{"Checkpoint", render.Escape(p.Checkpoint)}}
	if p.Before != nil {
		kv = append(kv, [2]string{"Restart", strings.TrimPrefix(p.Before.Verdict(), "Restart ")})
	}
	switch p.Edit {
	case stateedit.EditWhere:
		kv = append(kv, [2]string{"Drop", "rows where " + render.Escape(p.Where)})
	case stateedit.EditDropOperator:
		kv = append(kv, [2]string{"Drop", fmt.Sprintf("operator %d", opts.Edit.Operator)})
	case stateedit.EditEvict:
		kv = append(kv, [2]string{"Drop", fmt.Sprintf("rows evicted at watermark %d (%s)", *p.EvictBefore, time.UnixMilli(*p.EvictBefore).UTC().Format(time.RFC3339Nano))})
	}
	r.KV(kv)
	r.FaintLines(opts.Detected.Lines())
	r.Println()
	if p.Refused != "" {
		r.Printf("%s %s\n", r.Bad("Refused:"), render.Escape(p.Refused))
		return
	}
	r.Printf("Drops %d of %s of batch %d (version %d), written as version %d after a no-data batch %d (codec %s).\n",
		p.Dropped, render.Count(p.Rows, "row"), p.Batch, p.Batch+1, p.Version, p.NewBatch, p.Codec)
	t := render.Table{Headers: []string{"operator", "name", "store", "edited", "version " + strconv.FormatInt(p.Version, 10), "rows", "dropped", "dropped per partition"}}
	for _, op := range p.Operators {
		for _, st := range op.Stores {
			edited := "no"
			if op.Edited {
				edited = "yes"
				if op.EventTime != "" {
					edited += " (" + render.Escape(op.EventTime) + ")"
				}
			}
			rows, dropped, per := fmt.Sprint(st.Rows), fmt.Sprint(st.Dropped), ints(st.PerPart)
			if !op.Edited {
				rows, dropped, per = "-", "-", "- (an empty "+st.File+")"
			}
			t.Rows = append(t.Rows, []string{fmt.Sprint(op.ID), render.Escape(op.Name), render.Escape(st.Name), edited, st.File, rows, dropped, per})
		}
	}
	r.Table(t)
	r.Println()
	r.Printf("Files to add (%d, %d bytes; none changed or removed):\n", len(p.Actions), p.Bytes)
	change.PrintActions(r, p.Actions)
	if p.After != nil {
		r.Printf("Restart afterwards: %s (verified by the recovery planner after --execute).\n", strings.TrimPrefix(p.After.Verdict(), "Restart "))
	}
	for _, w := range p.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), render.Escape(w))
	}
}
