// Package inspect implements `ckpt inspect`, the first command a user runs on a checkpoint.
package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Options are the inputs of `ckpt inspect`, separate from cobra so tests can call runInspect.
type Options struct {
	IO *iostreams.IOStreams
	// OpenStore opens the location argument (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)

	// Location is the checkpoint, sink output directory or _spark_metadata directory.
	Location string
	// Output is "table" or "json".
	Output render.Format
	// Batches asks for one row per batch.
	Batches bool
	// Batch, when HasBatch, asks for the contents of one batch.
	Batch    int64
	HasBatch bool
	// Parallelism bounds concurrent reads for --batches.
	Parallelism int
	// From, To (when HasFrom, HasTo) and Last (when > 0) narrow --batches to the batch ids
	// From..To, then to the last Last of them. Default: every batch.
	From, To       int64
	HasFrom, HasTo bool
	Last           int
	// AllowEmpty inspects an empty or unrelated directory as a checkpoint that has not started
	// (--allow-empty). Default: refuse it with what the location holds.
	AllowEmpty bool
	// Recursive shows one row per checkpoint below Location (a folder or S3 prefix), worst first.
	// Default: false.
	Recursive bool
	// Broker is --bootstrap-server and the Kafka client options: with a broker the summary of
	// a checkpoint shows each partition's log start and end and the lag (broker.go).
	// Default: none.
	Broker cli.BrokerFlags
}

const long = `Show what a Spark Structured Streaming checkpoint holds.

LOCATION is a checkpoint directory (a path, file:// URI or s3://bucket/prefix), a file sink's output
directory, or its _spark_metadata directory.

For a checkpoint, inspect prints the query id, the batch ranges of offsets/ and commits/ with any
gaps, the latest batch (time, watermark, conf and source offsets), each source (Kafka topics and
partitions and the initial offsets file, file source log offset, or the raw offset), the state
store inventory (operators, partitions, stores, versions, provider) and leftover .tmp and orphan
.crc files. It reads only listings and a few small files.

  --batches   one row per batch: committed or not, time, and for Kafka the end offset and the
              number of records of every partition (reads every offsets file, concurrently)
              --from N, --to M: only batch ids N..M (each bound optional, both included);
              --last K: only the last K batch ids (of those --from/--to keep)
  --batch N   the parsed contents of batch N: offsets metadata, conf, each source offset, and
              the commit

With --bootstrap-server (plus Spark's kafka.* client options: --kafka-option, --kafka-option-file)
the summary also shows, per Kafka partition, the committed and in-flight offsets next to the
broker's log start and latest offset, the lag in records, and the problem the next batch meets
there, if any (ckpt lag follows it over time, ckpt doctor explains the problems). The broker is
only read.

For a file sink log it prints the batch range, the compact interval Spark would use, and the
number and total size of the files the log says are live (Spark's allFiles), streaming the
compact file.

A file that cannot be parsed does not stop inspect: it is shown as a problem (file, line, what was
expected, Spark's message) and the rest is still read. -o json prints the same as one JSON
document (schema: docs/inspect.md).

Exit codes:
  0  inspected, even if some files are corrupt (they are listed under problems)
  1  the location could not be read, holds no checkpoint or sink log, or batch N does not exist
  2  usage error (unknown flag, bad -o value, --batch with --batches, a negative batch id,
     --from/--to/--last without --batches, --from above --to, --last below 1)`

// NewCmd builds `ckpt inspect`. runF replaces runInspect in tests of the flag wiring.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore}
	var output string
	cmd := &cobra.Command{
		Use:   "inspect LOCATION",
		Short: "Show what a checkpoint (or a file sink log) holds",
		Long:  long,
		Example: `  ckpt inspect /data/checkpoints/orders
  ckpt inspect s3://bucket/checkpoints/orders --batches
  ckpt inspect ./ckpt --batches --last 20
  ckpt inspect ./ckpt --batches --from 1000 --to 1099 -o json
  ckpt inspect ./ckpt --batch 41 -o json
  ckpt inspect /data/output/orders          # a file sink: reads _spark_metadata/
  ckpt inspect ./ckpt --bootstrap-server kafka:9092
  ckpt inspect --recursive /data/checkpoints           # one row per checkpoint below`,
		Args: cli.ExactArgs(1, "a checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Location = args[0]
			f, err := cli.ParseWideOutput(output, opts.IO)
			if err != nil {
				return err
			}
			opts.Output = f
			opts.HasBatch = cmd.Flags().Changed("batch")
			if opts.HasBatch && opts.Batches {
				return exitcode.UsageError(fmt.Errorf("--batch and --batches cannot be used together"))
			}
			if opts.HasBatch && opts.Batch < 0 {
				return exitcode.UsageError(fmt.Errorf("--batch %d: batch ids are not negative", opts.Batch))
			}
			if cli.BrokerGiven(cmd.Flags()) && (opts.Batches || opts.HasBatch) {
				return exitcode.UsageError(fmt.Errorf("--bootstrap-server applies to the summary of a checkpoint, not to --batches or --batch"))
			}
			opts.HasFrom, opts.HasTo = cmd.Flags().Changed("from"), cmd.Flags().Changed("to")
			if err := checkRange(opts, cmd.Flags().Changed("last")); err != nil {
				return err
			}
			if opts.Recursive && (opts.Batches || opts.HasBatch || opts.Broker.Enabled()) {
				return exitcode.UsageError(fmt.Errorf("--recursive shows one row per checkpoint: --batches, --batch and --bootstrap-server apply to one checkpoint"))
			}
			if opts.Parallelism < 0 {
				return exitcode.UsageError(fmt.Errorf("--parallelism %d: want 1 or more (0 for the default)", opts.Parallelism))
			}
			if runF != nil {
				return runF(opts)
			}
			return runInspect(cmd.Context(), opts)
		},
	}
	cli.AddWideOutputFlag(cmd, &output)
	cmd.Flags().BoolVarP(&opts.Recursive, "recursive", "r", false, "one row per checkpoint below the folder or S3 prefix, worst first")
	cmd.Flags().BoolVar(&opts.Batches, "batches", false, "list every batch (reads every offsets file)")
	cmd.Flags().Int64Var(&opts.Batch, "batch", 0, "show the parsed contents of batch `N`")
	cmd.Flags().Int64Var(&opts.From, "from", 0, "with --batches: only batch ids from `N` (default: the first)")
	cmd.Flags().Int64Var(&opts.To, "to", 0, "with --batches: only batch ids up to `M`, included (default: the last)")
	cmd.Flags().IntVar(&opts.Last, "last", 0, "with --batches: only the last `K` batch ids (default: all)")
	cmd.Flags().IntVar(&opts.Parallelism, "parallelism", 0, fmt.Sprintf("concurrent reads for --batches (default %d)", storage.DefaultReadParallelism))
	cli.AddAllowEmptyFlag(cmd.Flags(), &opts.AllowEmpty)
	opts.Broker.AddFlags(cmd.Flags())
	return cmd
}

// checkRange validates --from, --to and --last.
func checkRange(opts *Options, hasLast bool) error {
	if (opts.HasFrom || opts.HasTo || hasLast) && !opts.Batches {
		return exitcode.UsageError(fmt.Errorf("--from, --to and --last apply to --batches"))
	}
	switch {
	case opts.HasFrom && opts.From < 0:
		return exitcode.UsageError(fmt.Errorf("--from %d: batch ids are not negative", opts.From))
	case opts.HasTo && opts.To < 0:
		return exitcode.UsageError(fmt.Errorf("--to %d: batch ids are not negative", opts.To))
	case opts.HasFrom && opts.HasTo && opts.From > opts.To:
		return exitcode.UsageError(fmt.Errorf("--from %d is above --to %d", opts.From, opts.To))
	case hasLast && opts.Last < 1:
		return exitcode.UsageError(fmt.Errorf("--last %d: want 1 or more", opts.Last))
	}
	return nil
}

// batchesOptions are the inspect.BatchesOptions of opts.
func batchesOptions(opts *Options, cp *checkpoint.Checkpoint) inspect.BatchesOptions {
	bo := inspect.BatchesOptions{Parallelism: opts.Parallelism, Last: opts.Last, Checkpoint: cp}
	if opts.HasFrom {
		bo.From = &opts.From
	}
	if opts.HasTo {
		bo.To = &opts.To
	}
	return bo
}

func runInspect(ctx context.Context, opts *Options) error {
	ctx, stop := cli.Progress(ctx, opts.IO, opts.Output)
	defer stop()
	if opts.Recursive {
		return runFleet(ctx, opts)
	}
	store, err := opts.OpenStore(ctx, opts.Location)
	if err != nil {
		return err
	}
	target, err := inspect.Detect(ctx, store, opts.AllowEmpty)
	if err != nil {
		return err
	}
	var doc any
	var cp *checkpoint.Checkpoint
	if target.Kind == inspect.KindCheckpoint {
		// Loaded once, on the root listing Detect made: the summary, the batches and the broker's
		// position share it.
		if cp, err = checkpoint.LoadAt(ctx, store, target.Location); err != nil {
			return err
		}
	}
	switch {
	case target.Kind == inspect.KindFileSinkLog:
		if opts.Batches || opts.HasBatch {
			return exitcode.UsageError(fmt.Errorf("%s is a file sink log: --batches and --batch apply to checkpoints", opts.Location))
		}
		if opts.Broker.Enabled() {
			return exitcode.UsageError(fmt.Errorf("%s is a file sink log: --bootstrap-server applies to checkpoints", opts.Location))
		}
		doc, err = inspect.SinkLogSummary(ctx, store, target.Dir)
	case opts.Batches && opts.Output == render.FormatJSON:
		// Streamed: a million rows never sit in memory together.
		return writeBatchesJSON(ctx, opts.IO.Out, store, batchesOptions(opts, cp))
	case opts.Batches:
		doc, err = inspect.Batches(ctx, store, batchesOptions(opts, cp))
	case opts.HasBatch:
		doc, err = inspect.BatchOf(ctx, cp, opts.Batch)
	default:
		doc, err = inspect.SummarizeCheckpoint(ctx, cp)
	}
	if err != nil {
		var nf *inspect.BatchNotFoundError
		if errors.As(err, &nf) {
			return exitcode.New(exitcode.Failure, err)
		}
		return err
	}
	var bv *brokerView
	if s, ok := doc.(*inspect.Summary); ok && opts.Broker.Enabled() {
		if bv, err = readBroker(ctx, opts, cp); err != nil {
			return err
		}
		doc = summaryWithBroker{Summary: s, Broker: bv}
	}
	if opts.Output == render.FormatJSON {
		return render.JSON(opts.IO.Out, doc)
	}
	if _, ok := doc.(*inspect.BatchList); ok {
		// A row per batch outgrows the screen: page it on a terminal, as git and gh do.
		stop()
		_ = opts.IO.StartPager()
		defer opts.IO.StopPager()
	}
	// Every string of the report came from the checkpoint (names, contents, Spark's messages):
	// escaped once here, whichever renderer prints it. JSON escapes them itself.
	render.EscapeStrings(doc)
	r := render.New(opts.IO)
	switch d := doc.(type) {
	case *inspect.Summary:
		renderSummary(r, d)
	case summaryWithBroker:
		renderSummary(r, d.Summary)
		renderBroker(r, d.Broker)
	case *inspect.BatchList:
		renderBatches(r, d)
	case *inspect.BatchDetail:
		renderBatch(r, d)
	case *inspect.SinkLogReport:
		renderSinkLog(r, d)
	}
	return nil
}
