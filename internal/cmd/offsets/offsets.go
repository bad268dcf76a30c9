// Package offsets implements `ckpt offsets export` and `ckpt offsets reset`.
package offsets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cli/change"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/flagfile"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/position"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt offsets export` and `ckpt offsets reset`, separate from cobra so
// tests can call run.
type Options struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	// Rand is the source of the random bits of repair ids (cli.Env.Rand; nil: crypto/rand).
	Rand io.Reader

	// Checkpoint is the checkpoint location.
	Checkpoint string
	// Reset is false for export.
	Reset bool
	// Target is the new position (reset); Topics narrow it (--topic, default: every partition).
	Target position.Target
	Topics []position.Selector
	// AllowOutOfRange writes offsets outside the broker's log (default: refused).
	AllowOutOfRange bool
	// Export is --export FILE: write the plan as CSV topic,partition,offset ("" = no file).
	Export string
	// Apply are --execute, --yes, --backup-dir, --active-window and --force.
	Apply change.Flags
	// Mode, SparkVersion and CommitFormatVersion describe the restart to predict.
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	// Output is table or json (export also "plain": the JSON only, to paste).
	Output string
	// Broker is --bootstrap-server and the Kafka client options (default: none).
	Broker cli.BrokerFlags
	// Sink is reset's --sink: the query's file sink output directory ("" = none).
	Sink string
}

const longExport = `Print Spark's startingOffsets for starting a NEW checkpoint where this one stands: the end offsets
of the latest committed batch, one JSON per Kafka source.

With --bootstrap-server every current partition of the topics is listed, as Spark requires when
startingOffsets is a JSON: a partition the checkpoint never saw gets -2 (earliest).

  -o plain   only the JSON, one line per source, to paste into .option("startingOffsets", …)
  -o json    the whole answer as a document (docs/offsets.md)`

const longReset = `Move a query's Kafka offsets without throwing its checkpoint away.

The targets are those of kafka-consumer-groups --reset-offsets (docs/offsets.md compares them):
  --to-earliest, --to-latest       the broker's log start or end (needs --bootstrap-server)
  --to-offset N                    offset N on every chosen partition
  --shift-by N                     the current offset plus N (negative: back)
  --to-datetime T                  the first offset with a timestamp at or after T (ListOffsets)
  --by-duration D                  --to-datetime at now minus D (e.g. 1h30m)
  --from-file F                    CSV topic,partition,offset or Spark's startingOffsets JSON
--topic T[:P,…] (repeatable) narrows the reset to those topics or partitions. --export F writes
the plan as CSV, which --from-file reads back.

It writes batch L+1: offsets/L+1 (metadata and other sources copied from offsets/L, the new
offsets for the chosen partitions) and commits/L+1 (a copy of commits/L), so Spark resumes at
batch L+2 from the new position. The plan shows, per partition, the old and new offsets and how
many records are skipped or read again (counted on the broker with --bootstrap-server).

By default it only prints the plan. --execute applies it like a repair: backup, journal,
verification by the recovery planner, and 'ckpt repair undo <journal>' restores every byte.

A query that writes to a file sink needs --sink DIR (its output directory): batch L+1 never runs,
so the reset also writes its _spark_metadata entry, with no file, in the same journal (one resume
or undo does both halves). Without it the sink's log skips L+1, and every spark.read of the output and the sink's
next compaction fail ("_spark_metadata/L+1 doesn't exist"; verified with real Spark).

Refused: the latest batch uncommitted (the refusal names the command that settles it), the query
alive, a stateful query (state/ not empty), a file source, offsets outside the broker's log
(unless --allow-out-of-range).

Exit codes: 0 planned or applied, 1 refused or failed, 2 usage error.`

// NewCmd builds `ckpt offsets` with export and reset. runF replaces run in tests of the wiring.
func NewCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "offsets",
		Short: "Export a checkpoint's position, or reset it (plan, backup, journal, undo)",
	}
	cmd.AddCommand(newExportCmd(env, runF), newResetCmd(env, runF))
	return cmd
}

func newOptions(env *cli.Env) *Options {
	return &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
}

func newExportCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	opts := newOptions(env)
	cmd := &cobra.Command{
		Use:   "export CHECKPOINT",
		Short: "Print startingOffsets for a new checkpoint where this one stands",
		Long:  longExport,
		Example: `  ckpt offsets export /data/checkpoints/orders
  ckpt offsets export s3://bucket/ckpt --bootstrap-server kafka:9092 -o plain`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			switch opts.Output {
			case "table", "json", "plain":
			default:
				return exitcode.UsageError(fmt.Errorf("-o %q: want table, json or plain", opts.Output))
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table, json or plain")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "plain"}, cobra.ShellCompDirectiveNoFileComp))
	opts.Broker.AddFlags(cmd.Flags())
	return cmd
}

func newResetCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	opts := newOptions(env)
	opts.Reset = true
	var restart cli.RestartFlags
	var toEarliest, toLatest bool
	var toOffset, shiftBy int64
	var toDatetime, fromFile string
	var byDuration time.Duration
	var topics []string
	cmd := &cobra.Command{
		Use:   "reset CHECKPOINT (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime T | --by-duration D | --from-file F)",
		Short: "Move the Kafka offsets a query resumes from",
		Long:  longReset,
		Example: `  ckpt offsets reset ./ckpt --to-datetime 2025-01-02T15:00:00Z --bootstrap-server kafka:9092
  ckpt offsets reset ./ckpt --shift-by -1000 --topic orders:0,1 --execute --yes
  ckpt offsets reset ./ckpt --from-file offsets.csv --execute`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			fl := cmd.Flags()
			var kinds []position.TargetKind
			for _, k := range []position.TargetKind{position.ToEarliest, position.ToLatest, position.ToOffset, position.ShiftBy, position.ToDatetime, position.ByDuration, position.FromFile} {
				if fl.Changed(string(k)) {
					kinds = append(kinds, k)
				}
			}
			if len(kinds) != 1 {
				return exitcode.UsageError(errors.New("give exactly one target: --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime, --by-duration or --from-file"))
			}
			t := position.Target{Kind: kinds[0], Offset: toOffset, Shift: shiftBy, Duration: byDuration}
			switch t.Kind {
			case position.ToOffset:
				if toOffset < 0 {
					return exitcode.UsageError(fmt.Errorf("--to-offset %d: want 0 or more", toOffset))
				}
			case position.ToDatetime:
				tm, err := position.ParseDatetime(toDatetime)
				if err != nil {
					return exitcode.UsageError(fmt.Errorf("--to-datetime: %w", err))
				}
				t.Time = tm
			case position.ByDuration:
				if byDuration <= 0 {
					return exitcode.UsageError(fmt.Errorf("--by-duration %s: want a positive duration", byDuration))
				}
			case position.FromFile:
				data, err := flagfile.Read("--from-file", fromFile)
				if err != nil {
					return exitcode.UsageError(fmt.Errorf("--from-file: %w", err))
				}
				if t.File, err = position.ParseOffsetsFile(fromFile, data); err != nil {
					return exitcode.UsageError(fmt.Errorf("--from-file: %w", err))
				}
			}
			opts.Target = t
			for _, s := range topics {
				sel, err := position.ParseSelector(s)
				if err != nil {
					return exitcode.UsageError(err)
				}
				opts.Topics = append(opts.Topics, sel)
			}
			_, ro, err := change.ParseFlags(opts.Output, &opts.Apply, &restart)
			if err != nil {
				return err
			}
			opts.Mode, opts.SparkVersion, opts.CommitFormatVersion = ro.Mode, ro.SparkVersion, ro.CommitFormatVersion
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &opts.Output)
	fl := cmd.Flags()
	fl.BoolVar(&toEarliest, "to-earliest", false, "reset to the broker's log start (needs --bootstrap-server)")
	fl.BoolVar(&toLatest, "to-latest", false, "reset to the broker's log end (needs --bootstrap-server)")
	fl.Int64Var(&toOffset, "to-offset", 0, "reset every chosen partition to offset `N`")
	fl.Int64Var(&shiftBy, "shift-by", 0, "move every chosen partition by `N` offsets (negative: back)")
	fl.StringVar(&toDatetime, "to-datetime", "", "reset to the first offset with a timestamp at or after `T` (RFC 3339, YYYY-MM-DDTHH:mm:SS.sss UTC, or epoch ms; needs --bootstrap-server)")
	fl.DurationVar(&byDuration, "by-duration", 0, "reset to the first offset at or after now minus `D` (needs --bootstrap-server)")
	fl.StringVar(&fromFile, "from-file", "", "reset to the offsets in `FILE`: CSV topic,partition,offset or Spark's startingOffsets JSON")
	fl.StringArrayVar(&topics, "topic", nil, "only these partitions: `TOPIC[:P,…]` (repeatable; default: every partition)")
	fl.StringVar(&opts.Export, "export", "", "write the plan's new offsets to `FILE` as CSV topic,partition,offset")
	fl.BoolVar(&opts.AllowOutOfRange, "allow-out-of-range", false, "write offsets outside the broker's log (default: refused)")
	fl.StringVar(&opts.Sink, "sink", "", "file sink output `DIR` (with _spark_metadata): also write the log entry of the batch the reset writes")
	opts.Apply.AddFlags(fl)
	restart.AddFlags(cmd)
	opts.Broker.AddFlags(fl)
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	store, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	// There is no position to export or move in anything but a checkpoint.
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{Command: "ckpt offsets"})
	if err != nil {
		return err
	}
	cp, err := checkpoint.LoadAt(ctx, store, loc) // the root listed once
	if err != nil {
		return err
	}
	var broker position.Broker
	if opts.Broker.Enabled() {
		if broker, err = position.NewBroker(ctx, &opts.Broker, cp); err != nil {
			return err
		}
	}
	if !opts.Reset {
		return runExport(ctx, opts, cp, broker)
	}
	return runReset(ctx, opts, cp, broker)
}

func runExport(ctx context.Context, opts *Options, cp *checkpoint.Checkpoint, broker position.Broker) (err error) {
	x, err := position.ExportOffsetsWith(ctx, cp, broker, opts.planner())
	if err != nil {
		return err
	}
	if !x.Sound {
		// Printed, but no all-clear: exit 3 as replay's failed prediction.
		defer func() {
			if err == nil {
				err = exitcode.Silent(exitcode.Findings)
			}
		}()
	}
	switch opts.Output {
	case "json":
		return render.JSON(opts.IO.Out, x)
	case "plain":
		for _, s := range x.Sources {
			if s.StartingOffsets != "" {
				fmt.Fprintln(opts.IO.Out, s.StartingOffsets)
			}
		}
		for _, w := range x.Warnings {
			fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", w)
		}
		return nil
	}
	r := render.New(opts.IO)
	where := fmt.Sprintf("end of batch %d (the latest committed)", x.Batch)
	if !x.Sound {
		where = fmt.Sprintf("end of batch %d (NOT SOUND: see the warnings)", x.Batch)
	}
	r.KV([][2]string{{"Checkpoint", x.Checkpoint}, {"Position", where}})
	r.Println()
	for _, s := range x.Sources {
		if s.Kind != position.KindKafka {
			r.Printf("source %d (%s): no Kafka startingOffsets\n", s.Source, s.Kind)
			continue
		}
		r.Printf("source %d: .option(\"startingOffsets\", %s)\n", s.Source, quoteScala(s.StartingOffsets))
		if len(s.Unseen) > 0 {
			var names []string
			for _, tp := range s.Unseen {
				names = append(names, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
			}
			r.Printf("  %s\n", r.Faint("-2 (earliest) for partitions the checkpoint never saw: "+strings.Join(names, ", ")))
		}
	}
	for _, w := range x.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
	return nil
}

// quoteScala quotes s as a string literal in Scala, Python and Java alike.
func quoteScala(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func (o *Options) planner() recovery.Options {
	return recovery.Options{Mode: o.Mode, SparkVersion: o.SparkVersion, CommitFormatVersion: o.CommitFormatVersion}
}

func runReset(ctx context.Context, opts *Options, cp *checkpoint.Checkpoint, broker position.Broker) error {
	store := cp.Store
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	ro := position.ResetOptions{
		Checkpoint: cp, Target: opts.Target, Topics: opts.Topics, Broker: broker, AllowOutOfRange: opts.AllowOutOfRange, Now: now, Planner: opts.planner(),
	}
	if opts.Sink != "" {
		var err error
		if ro.Sink, err = openSink(ctx, opts); err != nil {
			return err
		}
	}
	p, err := position.PlanReset(ctx, store, ro)
	if err != nil {
		return err
	}
	if len(p.Actions) > 0 {
		p.Warnings = append(p.Warnings, change.StateWarnings(ctx, change.Env{Now: opts.Now, Checkpoint: cp}, &opts.Apply, store)...)
	}
	if opts.Export != "" && p.Refused == "" {
		if err := writeCSV(opts.Export, p.Rows); err != nil {
			return err
		}
	}
	jsonOut := opts.Output == string(render.FormatJSON)
	doc := &resetDoc{ResetPlan: p}
	r := render.New(opts.IO)
	c := change.Change{
		Proposal: change.Proposal{JSON: jsonOut, Doc: doc, Print: func() { printReset(r, p) },
			What: "offsets reset", Refused: p.Refused, Pending: len(p.Actions) > 0, Execute: opts.Apply.Execute},
		Env:      change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, Rand: opts.Rand, Sink: ro.Sink},
		Flags:    &opts.Apply,
		Store:    store,
		Plan:     p.JournalPlan(),
		Question: fmt.Sprintf("Write batch %d with the new offsets to %s?", p.NewBatch, p.Checkpoint),
		Outcome:  &doc.Outcome,
		Verified: &doc.Verified,
		Closing: func(*journal.Record) {
			if doc.SinkJournal != nil {
				r.Printf("File sink log: entry of batch %d written (no file)\n", p.NewBatch)
			}
		},
	}
	if p.Sink != nil {
		c.SinkJournal = &doc.SinkJournal
	}
	return change.Run(ctx, r, c)
}

// openSink opens the file sink's output directory (--sink names it or its _spark_metadata).
func openSink(ctx context.Context, opts *Options) (storage.Store, error) {
	s, err := opts.OpenStore(ctx, sinklog.OutputDir(opts.Sink))
	if err != nil {
		return nil, fmt.Errorf("--sink: %w", err)
	}
	if es, err := s.List(ctx, sinklog.Dir); err != nil {
		return nil, fmt.Errorf("--sink: %w", err)
	} else if len(es) == 0 {
		return nil, exitcode.UsageError(fmt.Errorf("--sink %s: no %s log there", opts.Sink, sinklog.Dir))
	}
	return s, nil
}

// resetDoc is the -o json form of a reset (docs/offsets.md).
type resetDoc struct {
	*position.ResetPlan
	change.Outcome
	Verified *recovery.Result `json:"verified"`
	// SinkJournal is the journal of the file sink's half (--sink).
	SinkJournal *string `json:"sinkJournal,omitempty"`
}

func printReset(r *render.Renderer, p *position.ResetPlan) {
	r.KV([][2]string{{"Checkpoint", p.Checkpoint}, {"Restart now", strings.TrimPrefix(verdict(p.Before), "Restart ")}})
	if len(p.Rows) > 0 {
		r.Println()
		rows := make([][]string, 0, len(p.Rows))
		for _, row := range p.Rows {
			old := "-"
			if row.Old != nil {
				old = fmt.Sprint(*row.Old)
			}
			logRange := ""
			if row.LogStart != nil {
				logRange = fmt.Sprintf("%d-%d", *row.LogStart, *row.LogEnd)
				if row.OutOfRange {
					logRange += " OUT OF RANGE"
				}
			}
			effect := "unchanged"
			switch {
			case row.Skipped > 0:
				effect = fmt.Sprintf("skips %d", row.Skipped)
			case row.Reread > 0:
				effect = fmt.Sprintf("re-reads %d", row.Reread)
			case row.Changed():
				effect = "moves (no record in between)"
			}
			rows = append(rows, []string{fmt.Sprint(row.Source), row.Topic, fmt.Sprint(row.Partition), old, fmt.Sprint(row.New), logRange, effect})
		}
		title := "Offsets (records counted as offset differences)"
		if p.BrokerCounts {
			title = "Offsets (records counted on the broker)"
		}
		r.Table(render.Table{Title: title, Headers: []string{"source", "topic", "partition", "old", "new", "broker log", "records"}, Rows: rows})
	}
	r.Println()
	switch {
	case p.Refused != "":
		r.Printf("%s %s\n", r.Bad("Refused:"), p.Refused)
	case len(p.Actions) == 0:
		r.Println(r.Good("Nothing to change: every chosen partition is already at its new offset."))
	default:
		r.Printf("%s: write batch %d, so the query resumes at batch %d from the new offsets\n", r.Bold("Plan"), p.NewBatch, p.NewBatch+1)
		change.PrintActions(r, p.Actions)
		if p.Sink != nil {
			r.Printf("%s: write the log entry of batch %d in %s (in the same journal)\n", r.Bold("File sink"), p.NewBatch, p.Sink.Sink)
			change.PrintActions(r, p.Sink.Actions)
		}
		r.Println()
		r.KV([][2]string{{"Restart after the plan", strings.TrimPrefix(verdict(p.After), "Restart ")}})
	}
	for _, w := range p.Warnings {
		r.Printf("%s %s\n", r.Warn("warning:"), w)
	}
}

func verdict(r *recovery.Result) string {
	if r == nil {
		return "unknown"
	}
	return r.Verdict()
}

// writeCSV writes the new offsets as kafka-consumer-groups' --export CSV: topic,partition,offset.
func writeCSV(name string, rows []position.Row) error {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%d,%d\n", r.Topic, r.Partition, r.New)
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	return nil
}
