// Package replay implements `ckpt replay`: what a restart of the query does
// with a checkpoint, as predicted by recovery.Plan.
package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/deltastate"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt replay`, separate from cobra so tests can
// call runReplay.
type Options struct {
	IO *iostreams.IOStreams
	// OpenStore opens a location (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)

	// Location is the checkpoint.
	Location string
	// Mode, SparkVersion and CommitFormatVersion go to recovery.Plan.
	Mode                recovery.Mode
	SparkVersion        string
	CommitFormatVersion int
	// Detected is what the checkpoint showed and the restart options took from it (set by
	// runReplay; nil when the flags said it all or the defaults stood).
	Detected *recovery.Detection
	// Sink is a file sink's output directory (or its _spark_metadata); "" for none.
	Sink string
	// AllowEmpty accepts an empty or unrelated directory as a checkpoint that has not started
	// (--allow-empty). Default: refuse it, so a typo never reads as a new query.
	AllowEmpty bool
	// Delta is --delta-sink (a Delta sink: says whether it skips the re-run) and --delta-table
	// (the tables of Delta sources: whether the restart can still read them). Default: none.
	Delta cli.DeltaFlags
	// WhatIf is a recovery.WhatIfPoints entry, or "".
	WhatIf string
	// Output is "table" or "json".
	Output render.Format
	// Broker is --bootstrap-server and the Kafka client options: with a broker the re-run is
	// counted against it and what the restart meets there is predicted (broker.go).
	// Default: none.
	Broker cli.BrokerFlags
	// FailOnDataLoss is --fail-on-data-loss, the Kafka source option the prediction assumes.
	// Default: true, Spark's default.
	FailOnDataLoss bool
	// Trigger is --trigger, the query's trigger (recovery.Options.Trigger): availableNow, once or
	// processingTime ("processingTime=MS" is accepted). Default "": unknown, the rules that
	// depend on it are left out.
	Trigger string
	// State is --state: how the state stores the first batch loads are checked: "read" (the
	// default: every file of every load is read, as Spark reads it) or "list" (the listing
	// only: missing files, not damaged ones).
	State string
	// Exact is --exact: count the re-run's data records by reading them (CountExact) instead
	// of subtracting the offsets the broker still has. Default: false.
	Exact bool
}

const long = `Predict what restarting the query does with this checkpoint, the way Spark decides it.

replay applies Spark's restart rules (MicroBatchExecution.populateStartOffsets and its async
override) to the checkpoint's offsets and commit logs: which batch runs first, which batch
re-runs and over which offsets, per source and Kafka partition, which batches are never
replayed, and whether Spark refuses to start, with the exception and driver log lines Spark
prints. It reads the listings and at most a handful of files, and the state the first batch
loads: the version Spark's state store providers load in every partition (batch N loads
version N), the files they open for it, read as Spark reads them (--state list: the listing
only), and the failure Spark meets there.

  --mode            sync (default; Spark 2.2+ MicroBatchExecution), async (asynchronous progress
                    tracking, Spark 3.4+: gaps in offsets/ are tolerated) or spark-2.1 (no commit
                    log: the latest offsets batch always re-runs)
  --spark-version   the release that restarts the query: 2.1 … 3.5, 4.0, 4.1, 4.2 or master;
                    default 3.5. It decides which log versions are readable, the error texts,
                    and what a missing metadata file does. Releases that would behave
                    differently are listed at the end. A line stands for its newest patch
                    release ckpt models (4.1 is 4.1.1, 4.0 is 4.0.0); give a patch release
                    (4.1.0) to predict another: some Spark bugs are patch-release specific.
  --sink DIR        a file sink's output directory: says whether the sink skips the re-run
  --delta-sink PATH a Delta sink's table: the same, from its txn action for the query id
  --delta-table [I=]PATH  a Delta source's table: fails as Spark does when it was replaced or
                    no longer holds the version the restart reads
                    batch (no duplicates) or is behind or ahead of the commit log
  --trigger T       the query's trigger: availableNow, once or processingTime (default: unknown).
                    Spark 4.0.0 under availableNow checks a re-run's Kafka partitions against
                    the offsets it fetched at start; without --trigger that rule is left out.
  --what-if POINT   crash-after-offsets, crash-before-commit or crash-after-commit: what a
                    restart does if the query dies at that point of the next batch

With --bootstrap-server (plus Spark's kafka.* client options: --kafka-option, --kafka-option-file)
replay asks the broker for each partition's earliest and latest offsets: the re-run is counted
in records that really exist (ON BROKER; --exact reads them and counts data records only), and
what the restart meets there (records deleted by retention, a recreated topic, partitions added
or removed, a missing topic) is added with Spark's message. With failOnDataLoss=true (Spark's
default) such a loss stops the query, so the predicted outcome is "fail";
--fail-on-data-loss=false predicts the other setting. The broker is only read.

-o json prints the prediction as one JSON document (schema: docs/replay.md).

Exit codes:
  0  the restart succeeds
  1  ckpt could not read the checkpoint
  2  usage error
  3  the restart fails (Spark refuses to start or aborts on the first batches)`

// --state values.
const (
	stateRead = "read"
	stateList = "list"
)

// NewCmd builds `ckpt replay`. runF replaces runReplay in tests of the flag
// wiring.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, FailOnDataLoss: true}
	var output string
	var restart cli.RestartFlags
	cmd := &cobra.Command{
		Use:   "replay CHECKPOINT",
		Short: "Predict what a restart of the query does with a checkpoint",
		Long:  long,
		Example: `  ckpt replay /data/checkpoints/orders
  ckpt replay s3://bucket/checkpoints/orders --spark-version 4.0 -o json
  ckpt replay ./ckpt --mode async
  ckpt replay ./ckpt --sink /data/output/orders --what-if crash-before-commit
  ckpt replay ./ckpt --bootstrap-server kafka:9092 --fail-on-data-loss=false`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Location = args[0]
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			opts.Output = f
			ro, err := restart.Options()
			if err != nil {
				return err
			}
			opts.Mode, opts.SparkVersion, opts.CommitFormatVersion = ro.Mode, ro.SparkVersion, ro.CommitFormatVersion
			if t, err := parseTrigger(opts.Trigger); err != nil {
				return exitcode.UsageError(err)
			} else {
				opts.Trigger = t
			}
			if opts.WhatIf != "" && !validPoint(opts.WhatIf) {
				return exitcode.UsageError(fmt.Errorf("invalid --what-if %q: want %s", opts.WhatIf, strings.Join(recovery.WhatIfPoints, ", ")))
			}
			if opts.Sink != "" && opts.Delta.Sink != "" {
				return exitcode.UsageError(errors.New("--sink and --delta-sink: a query has one sink, give one of them"))
			}
			if !opts.Broker.Enabled() && (opts.Exact || cmd.Flags().Changed("fail-on-data-loss")) {
				return exitcode.UsageError(errors.New("--exact and --fail-on-data-loss need the broker: give --bootstrap-server too"))
			}
			if opts.State != stateRead && opts.State != stateList {
				return exitcode.UsageError(fmt.Errorf("invalid --state %q: want %s or %s", opts.State, stateRead, stateList))
			}
			if runF != nil {
				return runF(opts)
			}
			return runReplay(cmd.Context(), opts)
		},
	}
	cli.AddOutputFlag(cmd, &output)
	restart.AddFlags(cmd)
	cmd.Flags().StringVar(&opts.Sink, "sink", "", "a file sink's output `DIR` (or its _spark_metadata)")
	opts.Delta.AddSinkFlag(cmd.Flags())
	opts.Delta.AddTableFlag(cmd.Flags())
	cmd.Flags().StringVar(&opts.WhatIf, "what-if", "", "predict the restart after a crash at `POINT` of the next batch: "+strings.Join(recovery.WhatIfPoints, ", "))
	cmd.Flags().StringVar(&opts.Trigger, "trigger", "", "the query's `TRIGGER`: availableNow, once or processingTime (default: unknown)")
	_ = cmd.RegisterFlagCompletionFunc("trigger", cobra.FixedCompletions([]string{recovery.TriggerAvailableNow, recovery.TriggerOnce, recovery.TriggerProcessingTime}, cobra.ShellCompDirectiveNoFileComp))
	cli.AddAllowEmptyFlag(cmd.Flags(), &opts.AllowEmpty)
	opts.Broker.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&opts.FailOnDataLoss, "fail-on-data-loss", true, "with --bootstrap-server: the Kafka source option failOnDataLoss the query runs with (--fail-on-data-loss=false)")
	cmd.Flags().StringVar(&opts.State, "state", stateRead, "how the state the first batch loads is checked: read (its files, as Spark reads them) or list (missing files only)")
	cmd.Flags().BoolVar(&opts.Exact, "exact", false, "with --bootstrap-server: count the re-run's data records by reading them (slow on large ranges)")
	_ = cmd.RegisterFlagCompletionFunc("what-if", cobra.FixedCompletions(recovery.WhatIfPoints, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseTrigger reads --trigger: availableNow, once, processingTime or processingTime=MS (the
// interval does not change the prediction), as spark/restart's --trigger spells them.
func parseTrigger(s string) (string, error) {
	name, _, _ := strings.Cut(s, "=")
	switch name {
	case recovery.TriggerUnknown, recovery.TriggerAvailableNow, recovery.TriggerOnce, recovery.TriggerProcessingTime:
		return name, nil
	}
	return "", fmt.Errorf("invalid --trigger %q: want %s, %s or %s", s, recovery.TriggerAvailableNow, recovery.TriggerOnce, recovery.TriggerProcessingTime)
}

func validPoint(p string) bool {
	for _, w := range recovery.WhatIfPoints {
		if p == w {
			return true
		}
	}
	return false
}

func runReplay(ctx context.Context, opts *Options) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	store, err := opts.OpenStore(ctx, opts.Location)
	if err != nil {
		return err
	}
	loc, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{AllowEmpty: opts.AllowEmpty, AllowEmptyFlag: true, Command: "ckpt replay"})
	if err != nil {
		return err
	}
	cp, err := checkpoint.LoadAt(ctx, store, loc) // the root listed once
	if err != nil {
		return err
	}
	opts.Detected = recovery.DetectDefaults(ctx, cp, &opts.Mode, &opts.SparkVersion, &opts.CommitFormatVersion)
	po := recovery.Options{Mode: opts.Mode, SparkVersion: opts.SparkVersion, CommitFormatVersion: opts.CommitFormatVersion, Trigger: opts.Trigger}
	if opts.Sink != "" {
		latest, err := sinkLatest(ctx, opts)
		if err != nil {
			return err
		}
		po.SinkLatest = &latest
	}
	if txn, err := deltastate.ReadSink(ctx, opts.OpenStore, cp, opts.Delta.Sink); err != nil {
		return err
	} else if txn != nil {
		po.SinkLatest, po.SinkKind = &txn.Version, recovery.SinkKindDelta
	}
	if po.Delta, err = deltastate.ReadTables(ctx, opts.OpenStore, cp, opts.Delta.Tables); err != nil {
		return err
	}
	var broker *brokerConn
	if opts.Broker.Enabled() {
		if broker, err = readBroker(ctx, opts, cp); err != nil {
			return err
		}
		defer broker.close()
		po.Broker, po.FailOnDataLossFalse = broker.state, !opts.FailOnDataLoss
	}
	var res *recovery.Result
	if opts.WhatIf != "" {
		res, err = recovery.WhatIf(ctx, cp, po, opts.WhatIf, recovery.NextBatch{})
	} else {
		// The state the first batch loads: listed, and its files read unless --state list.
		res, _, err = state.Restart(ctx, cp, po, opts.State != stateList)
	}
	if err != nil {
		var oe *recovery.OptionsError
		if errors.As(err, &oe) {
			return exitcode.UsageError(err)
		}
		return err
	}
	var doc any = res
	if opts.Detected != nil {
		doc = resultDetected{res, opts.Detected}
	}
	var withB *output
	if broker != nil {
		if withB, err = withBroker(ctx, opts, broker, res); err != nil {
			return err
		}
		withB.Detected = opts.Detected
		doc = withB
	}
	if opts.Output == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, doc); err != nil {
			return err
		}
	} else {
		printTable(render.New(opts.IO), opts, res, withB)
	}
	if res.Failed() {
		return exitcode.Silent(exitcode.Findings)
	}
	return nil
}

// sinkLatest reads the latest batch of the sink's _spark_metadata log; -1
// for an empty log.
func sinkLatest(ctx context.Context, opts *Options) (int64, error) {
	st, err := opts.OpenStore(ctx, opts.Sink)
	if err != nil {
		return 0, err
	}
	if dir := sinklog.Locate(st.URI()); dir != "" {
		es, err := st.List(ctx, dir)
		if err != nil {
			return 0, err
		}
		if len(es) == 0 {
			return 0, fmt.Errorf("--sink %s: no %s/ log there (is it a file sink's output directory?)", opts.Sink, dir)
		}
	}
	latest, ok, err := sinklog.LatestAt(ctx, st)
	if err != nil {
		return 0, err
	}
	if !ok {
		return -1, nil
	}
	return latest, nil
}

// resultDetected is the -o json prediction with what was detected ("detected").
type resultDetected struct {
	*recovery.Result
	Detected *recovery.Detection `json:"detected,omitempty"`
}
