// Package rewind implements `ckpt rewind`.
package rewind

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
	"github.com/ckpt-dev/ckpt/internal/liveness"
	"github.com/ckpt-dev/ckpt/internal/position"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt rewind`, separate from cobra so tests can call run.
type Options struct {
	IO        *iostreams.IOStreams
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	Now       func() time.Time
	Version   string
	// Rand is the source of the random bits of repair ids (cli.Env.Rand; nil: crypto/rand).
	Rand io.Reader

	Checkpoint string
	// ToBatch or ToTime: where to go back to (exactly one).
	ToBatch *int64
	ToTime  *time.Time
	// Sink is a file sink's output directory ("" = none).
	Sink string
	// KafkaSink says the query writes to Kafka (default false); AllowDuplicates accepts the
	// records written again (default false: refused).
	KafkaSink, AllowDuplicates bool
	Apply                      change.Flags
	Mode                       recovery.Mode
	SparkVersion               string
	CommitFormatVersion        int
	Output                     render.Format
}

const long = `Make the next run of a query re-execute from batch N+1.

Offsets and commits above N, and state versions above N+1 (HDFS <v>.delta and <v>.snapshot,
RocksDB <v>.zip and <v>.changelog, checkpoint format v2's <v>_<id>.zip and .changelog), are moved
into the backup: the query then stands where it stood after batch N, and runs batch N+1 with the
offsets it plans then. --to-time T picks the last batch whose batch timestamp is at or before T.

By default it only prints the plan. --execute applies it like a repair: backup, journal,
verification by the recovery planner; 'ckpt repair undo <journal>' restores every byte.

Sinks: output already written is not taken back.
  --sink DIR        a file sink: its _spark_metadata entries above N move too, into the backup
                    of the same journal (one ckpt repair undo reverts both);
                    the data files they added stay, invisible to readers. Without --sink the sink
                    would skip the re-run batches as already committed
  --kafka-sink      the query writes to Kafka, which cannot unsend: refused unless
                    --allow-duplicates, and then the plan says how many records run again

Exit codes: 0 planned or applied, 1 refused or failed, 2 usage error.`

// NewCmd builds `ckpt rewind`. runF replaces run in tests of the wiring.
func NewCmd(env *cli.Env, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Version: env.Version, Rand: env.Rand}
	var output, toTime string
	var toBatch int64
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "rewind CHECKPOINT (--to-batch N | --to-time T)",
		Short: "Go back to an earlier batch (plan, backup, journal, undo)",
		Long:  long,
		Example: `  ckpt rewind /data/checkpoints/orders --to-batch 41
  ckpt rewind ./ckpt --to-time 2025-01-02T15:00:00Z --execute --yes
  ckpt rewind ./ckpt --to-batch 41 --kafka-sink --allow-duplicates --execute`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Checkpoint = args[0]
			fl := cmd.Flags()
			if fl.Changed("to-batch") == fl.Changed("to-time") {
				return exitcode.UsageError(errors.New("give exactly one of --to-batch and --to-time"))
			}
			if fl.Changed("to-batch") {
				if toBatch < 0 {
					return exitcode.UsageError(fmt.Errorf("--to-batch %d: want 0 or more", toBatch))
				}
				opts.ToBatch = &toBatch
			} else {
				t, err := position.ParseDatetime(toTime)
				if err != nil {
					return exitcode.UsageError(fmt.Errorf("--to-time: %w", err))
				}
				opts.ToTime = &t
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
	fl.Int64Var(&toBatch, "to-batch", 0, "stand after batch `N`: the next run executes N+1")
	fl.StringVar(&toTime, "to-time", "", "go back to the last batch whose batch timestamp is at or before `T` (RFC 3339 or epoch ms)")
	fl.StringVar(&opts.Sink, "sink", "", "file sink output `DIR` (with _spark_metadata): its log entries above N move too")
	fl.BoolVar(&opts.KafkaSink, "kafka-sink", false, "the query writes to Kafka: refuse unless --allow-duplicates")
	fl.BoolVar(&opts.AllowDuplicates, "allow-duplicates", false, "with --kafka-sink: rewind although the re-run batches write their output again")
	opts.Apply.AddFlags(fl)
	restart.AddFlags(cmd)
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
	// There is nothing to rewind in anything but a checkpoint.
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{Command: "ckpt rewind"})
	if err != nil {
		return err
	}
	cp, err := checkpoint.LoadAt(ctx, store, loc) // the root listed once, the plan and the liveness check share it
	if err != nil {
		return err
	}
	ro := position.RewindOptions{Checkpoint: cp, ToBatch: opts.ToBatch, ToTime: opts.ToTime, KafkaSink: opts.KafkaSink, AllowDuplicates: opts.AllowDuplicates,
		Planner: recovery.Options{Mode: opts.Mode, SparkVersion: opts.SparkVersion, CommitFormatVersion: opts.CommitFormatVersion}}
	if opts.Sink != "" {
		if ro.Sink, err = openSink(ctx, opts); err != nil {
			return err
		}
	}
	var detected string
	if rec, err := liveness.Read(ctx, cp); err == nil && rec != nil && rec.Sink == query.SinkKafka && !ro.KafkaSink {
		// `ckpt run` recorded its sink: a Kafka sink is known without --kafka-sink.
		ro.KafkaSink = true
		detected = "the query writes to Kafka (sink recorded by ckpt run in " + liveness.Path + ")"
	}
	p, err := position.PlanRewind(ctx, store, ro)
	if err != nil {
		return err
	}
	if len(p.Actions) > 0 {
		p.Warnings = append(p.Warnings, change.StateWarnings(ctx, change.Env{Now: opts.Now, Checkpoint: cp}, &opts.Apply, store)...)
	}
	if detected != "" {
		p.Warnings = append(p.Warnings, detected)
	}
	jsonOut := opts.Output == render.FormatJSON
	doc := &rewindDoc{RewindPlan: p}
	r := render.New(opts.IO)
	c := change.Change{
		Proposal: change.Proposal{JSON: jsonOut, Doc: doc, Print: func() { printPlan(r, p) },
			What: "rewind", Refused: p.Refused, Pending: len(p.Actions) > 0, Execute: opts.Apply.Execute},
		Env:      change.Env{IO: opts.IO, OpenStore: opts.OpenStore, Now: opts.Now, Version: opts.Version, Rand: opts.Rand, Sink: ro.Sink},
		Flags:    &opts.Apply,
		Store:    store,
		Plan:     p.JournalPlan(),
		Question: fmt.Sprintf("Move %d file(s) of %s into the backup?", len(p.Actions), p.Checkpoint),
		Outcome:  &doc.Outcome,
		Verified: &doc.Verified,
		Closing: func(*journal.Record) {
			if doc.SinkJournal != nil {
				r.Printf("File sink log: %d entr(ies) moved; %d data file(s) they added are left in place, invisible to readers\n", len(p.Sink.Entries), len(p.Sink.DataFiles))
			}
		},
	}
	if p.Sink != nil {
		c.SinkJournal = &doc.SinkJournal
	}
	return change.Run(ctx, r, c)
}

type rewindDoc struct {
	*position.RewindPlan
	change.Outcome
	Verified *recovery.Result `json:"verified"`
	// SinkJournal is the journal of the file sink's half (--sink).
	SinkJournal *string `json:"sinkJournal,omitempty"`
}

func printPlan(r *render.Renderer, p *position.RewindPlan) {
	kv := [][2]string{{"Checkpoint", p.Checkpoint}, {"Restart now", strings.TrimPrefix(verdict(p.Before), "Restart ")}}
	if p.Refused == "" || p.Batch > 0 {
		kv = append(kv, [2]string{"Rewind to", fmt.Sprintf("after batch %d (batch timestamp %s)", p.Batch, time.UnixMilli(p.BatchTimestampMs).UTC().Format(time.RFC3339))})
	}
	r.KV(kv)
	r.Println()
	switch {
	case p.Refused != "":
		r.Printf("%s %s\n", r.Bad("Refused:"), p.Refused)
	case len(p.Actions) == 0:
		r.Println(r.Good(fmt.Sprintf("Nothing to change: batch %d is already the latest.", p.Batch)))
	default:
		r.Printf("%s: move %s, %s and %s into the backup\n", r.Bold("Plan"), render.CountAs(int64(p.Offsets), "offsets file", "offsets files"), render.Count(int64(p.Commits), "commit"), render.Count(int64(p.StateFiles), "state file"))
		change.PrintActions(r, p.Actions)
		r.Println()
		again := "no committed batch runs again"
		if p.RerunTo >= p.RerunFrom {
			again = fmt.Sprintf("batches %d-%d, already committed, run again", p.RerunFrom, p.RerunTo)
			if p.RerunRecords != nil {
				again += " (" + render.Count(*p.RerunRecords, "Kafka record") + ")"
			}
		}
		r.KV([][2]string{{"Restart after the plan", strings.TrimPrefix(verdict(p.After), "Restart ")}, {"Replay", again}})
		if p.Sink != nil {
			r.Println()
			r.Printf("%s: move %s of %s into the backup (in the same journal)\n", r.Bold("File sink"), render.CountAs(int64(len(p.Sink.Entries)), "log entry", "log entries"), p.Sink.Sink)
			change.PrintActions(r, p.Sink.Actions)
			r.Printf("  %d data file(s) those entries added stay in place, invisible to readers of the sink:\n", len(p.Sink.DataFiles))
			for i, f := range p.Sink.DataFiles {
				if i == 5 {
					r.Printf("    … and %d more (-o json lists them all)\n", len(p.Sink.DataFiles)-5)
					break
				}
				r.Printf("    %s\n", f)
			}
		}
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
