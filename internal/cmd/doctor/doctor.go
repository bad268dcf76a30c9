// Package doctor implements `ckpt doctor`: every known bad condition of a checkpoint, each with a
// stable code, Spark's error and the command that fixes it.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/deltastate"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt doctor`, separate from cobra so tests can call runDoctor.
type Options struct {
	IO *iostreams.IOStreams
	// OpenStore opens the checkpoint and sink locations (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)

	// Checkpoint is the location as typed; it is substituted into the printed fix commands.
	Checkpoint string
	// Mode, SparkVersion and CommitFormatVersion describe the restart to diagnose.
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	// Sink is a file sink's output directory, or "".
	Sink string
	// Recursive diagnoses every checkpoint below Checkpoint (fleet.Find), one row each. Default:
	// false (Checkpoint is one checkpoint).
	Recursive bool
	// Deep reads every log file.
	Deep bool
	// AllowEmpty accepts an empty or unrelated directory as a checkpoint that has not started.
	// Default: refuse it (exit 1), so a typo never reads as "no problems".
	AllowEmpty bool
	// FailOn is the lowest severity that makes the exit code 3.
	FailOn doctor.Severity
	// Explain, when set, prints the page of one code instead of diagnosing.
	Explain string
	// Output is "table" or "json".
	Output render.Format
	// Broker is --bootstrap-server and the Kafka client options: with a broker, doctor also
	// checks the offsets the restart reads next against it. Default: none.
	Broker cli.BrokerFlags
	// Detected is what the checkpoint showed and the restart options took from it (set by
	// runDoctor; nil when the flags said it all or the defaults stood).
	Detected *recovery.Detection
	// Delta is --delta-table (the tables of the query's Delta sources) and --delta-sink (the
	// Delta table it writes to). Default: none.
	Delta cli.DeltaFlags
	// FailOnDataLoss is --fail-on-data-loss, the Kafka source option the broker checks model.
	// Default: true, Spark's default.
	FailOnDataLoss bool
}

const long = `Find every known bad condition in a Spark Structured Streaming checkpoint.

Each finding has a stable code (a public contract for runbooks: see docs/doctor.md, or
ckpt doctor --explain CODE), a severity, a plain explanation, the exact error Spark will raise, and
the command that fixes it. What a restart does is decided by the same recovery planner as
ckpt replay, for the engine (--mode) and Spark release (--spark-version) you restart with.

doctor reads only the listings of offsets/ and commits/ and the few files a restart reads, so it
costs about one directory listing even with 100k batches. Zero-byte files show in the listing;
--deep also reads every other log file (concurrently) to find damaged or too-new older files and
changes in the number of sources.

With --bootstrap-server (plus Spark's kafka.* client options: --kafka-option, --kafka-option-file)
doctor also asks the broker for each partition's earliest and latest offsets and checks the
offsets the restart reads next: offsets-out-of-range (retention deleted records not yet read),
topic-recreated, partitions-removed, partitions-added and topic-missing, each with the message
Spark stops with, what failOnDataLoss=false does instead, and the records affected.
--fail-on-data-loss=false models that source option. The broker is only read.

Severities: error (the restart fails, or silently loses or duplicates data), warning (something is
wrong and will bite later), info (expected behaviour worth knowing).

Exit codes:
  0  no finding at or above --fail-on (default error)
  1  ckpt failed (the location cannot be read or holds no checkpoint)
  2  usage error (unknown flag, mode, version, severity or code)
  3  at least one finding at or above --fail-on`

// NewCmd builds `ckpt doctor`. runF replaces runDoctor in tests of the flag wiring.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, FailOnDataLoss: true}
	var output, failOn string
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "doctor CHECKPOINT",
		Short: "Find every known problem in a checkpoint, with Spark's error and the fix",
		Long:  long,
		Example: `  ckpt doctor /data/checkpoints/orders
  ckpt doctor s3://bucket/checkpoints/orders --spark-version 4.0 --mode async
  ckpt doctor ./ckpt --sink /data/output/orders --fail-on warning -o json
  ckpt doctor ./ckpt --bootstrap-server kafka:9092
  ckpt doctor --explain missing-previous-offsets
  ckpt doctor ./ckpt --delta-table s3://lake/events --delta-sink s3://lake/out
  ckpt doctor --recursive s3://bucket/checkpoints    # every checkpoint below, worst first`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.Explain != "" {
				return cli.ExactArgs(0, "no checkpoint with --explain")(cmd, args)
			}
			return cli.ExactArgs(1, "a checkpoint location")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Output = f
			if opts.Explain != "" {
				if _, ok := doctor.Lookup(opts.Explain); !ok {
					return exitcode.UsageError(fmt.Errorf("unknown code %q; the codes are:\n  %s", opts.Explain, strings.Join(doctor.IDs(), "\n  ")))
				}
			} else {
				opts.Checkpoint = args[0]
			}
			ro, err := restart.Options()
			if err != nil {
				return err
			}
			opts.Mode, opts.SparkVersion, opts.CommitFormatVersion = ro.Mode, ro.SparkVersion, ro.CommitFormatVersion
			if opts.FailOn, err = doctor.ParseSeverity(failOn); err != nil {
				return exitcode.UsageError(fmt.Errorf("--fail-on: %w", err))
			}
			if opts.Recursive && (opts.Explain != "" || opts.Sink != "" || cli.BrokerGiven(cmd.Flags())) {
				return exitcode.UsageError(errors.New("--recursive diagnoses every checkpoint below a folder: --explain, --sink and --bootstrap-server apply to one checkpoint"))
			}
			if opts.Sink != "" && opts.Delta.Sink != "" {
				return exitcode.UsageError(errors.New("--sink and --delta-sink: a query has one sink, give one of them"))
			}
			if cmd.Flags().Changed("fail-on-data-loss") && !opts.Broker.Enabled() {
				return exitcode.UsageError(errors.New("--fail-on-data-loss models the Kafka source option for the broker checks: give --bootstrap-server too"))
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Recursive {
				ctx, stop := cli.Progress(cmd.Context(), opts.IO, opts.Output)
				defer stop()
				return runFleet(ctx, opts)
			}
			return runDoctor(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	fl := cmd.Flags()
	restart.AddFlags(cmd)
	fl.StringVar(&opts.Sink, "sink", "", "file sink output `DIR` (holding _spark_metadata) to compare with the checkpoint")
	fl.BoolVarP(&opts.Recursive, "recursive", "r", false, "diagnose every checkpoint below the folder or S3 prefix, one row each, worst first")
	fl.BoolVar(&opts.Deep, "deep", false, "read every offsets and commits file, not only those a restart reads")
	cli.AddAllowEmptyFlag(fl, &opts.AllowEmpty)
	fl.StringVar(&failOn, "fail-on", string(doctor.Error), "lowest severity that makes the exit code 3: error, warning or info")
	fl.StringVar(&opts.Explain, "explain", "", "print the documentation of one finding `CODE` and exit")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{string(doctor.Error), string(doctor.Warning), string(doctor.Info)}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("explain", cobra.FixedCompletions(doctor.IDs(), cobra.ShellCompDirectiveNoFileComp))
	opts.Broker.AddFlags(fl)
	opts.Delta.AddTableFlag(fl)
	opts.Delta.AddSinkFlag(fl)
	fl.BoolVar(&opts.FailOnDataLoss, "fail-on-data-loss", true, "with --bootstrap-server: the Kafka source option failOnDataLoss the query runs with (--fail-on-data-loss=false)")
	return cmd
}

func runDoctor(ctx context.Context, opts *Options) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	if opts.Explain != "" {
		return explain(opts)
	}
	store, err := opts.OpenStore(ctx, opts.Checkpoint)
	if err != nil {
		return err
	}
	// A typo in the path must not read as "a new query, nothing wrong".
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{AllowEmpty: opts.AllowEmpty, AllowEmptyFlag: true, Command: "ckpt doctor"})
	if err != nil {
		return err
	}
	cp, err := checkpoint.LoadAt(ctx, store, loc) // the root listed once
	if err != nil {
		return err
	}
	opts.Detected = recovery.DetectDefaults(ctx, cp, &opts.Mode, &opts.SparkVersion, &opts.CommitFormatVersion)
	dopts := doctor.Options{
		Mode:                opts.Mode,
		SparkVersion:        opts.SparkVersion,
		CommitFormatVersion: opts.CommitFormatVersion,
		Deep:                opts.Deep,
		Location:            opts.Checkpoint,
		SinkLocation:        opts.Sink,
	}
	if opts.Sink != "" {
		if dopts.Sink, err = opts.OpenStore(ctx, opts.Sink); err != nil {
			return fmt.Errorf("--sink: %w", err)
		}
	}
	if dopts.Delta, err = deltastate.ReadTables(ctx, opts.OpenStore, cp, opts.Delta.Tables); err != nil {
		return err
	}
	if dopts.DeltaSink, err = deltastate.ReadSink(ctx, opts.OpenStore, cp, opts.Delta.Sink); err != nil {
		return err
	}
	if opts.Delta.Sink != "" {
		dopts.SinkLocation = opts.Delta.Sink
	}
	if opts.Broker.Enabled() {
		st, err := opts.Broker.ReadCheckpoint(ctx, nil, cp)
		if err != nil {
			return err
		}
		dopts.Broker = &doctor.Broker{State: st, FailOnDataLossFalse: !opts.FailOnDataLoss, CommandArgs: opts.Broker.CommandArgs()}
	}
	rep, err := doctor.Run(ctx, cp, dopts)
	if err != nil {
		return err
	}
	if opts.Output == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, withDetected{rep, opts.Detected}); err != nil {
			return err
		}
	} else {
		renderReport(render.New(opts.IO), rep, opts)
	}
	if rep.Fails(opts.FailOn) {
		return exitcode.Silent(exitcode.Findings)
	}
	return nil
}

// explainDoc is the JSON form of --explain.
type explainDoc struct {
	Code        string            `json:"code"`
	Title       string            `json:"title"`
	Severities  []doctor.Severity `json:"severities"`
	Summary     string            `json:"summary"`
	Explanation string            `json:"explanation"`
	SparkError  string            `json:"sparkError"`
	Fix         string            `json:"fix"`
}

func explain(opts *Options) error {
	c, _ := doctor.Lookup(opts.Explain)
	if opts.Output == render.FormatJSON {
		return render.JSON(opts.IO.Out, explainDoc{c.ID, c.Title, c.Severities, c.Summary, c.Explanation, c.SparkError, c.Fix})
	}
	page, _ := doctor.Explain(c.ID)
	render.New(opts.IO).Markdown(page) // rendered on a terminal, Markdown as it is when piped
	return nil
}
