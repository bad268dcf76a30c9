// Package lag implements `ckpt lag`: how far Structured Streaming queries are behind their
// Kafka topics, computed from their checkpoints and the broker.
package lag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/deltastate"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Defaults of the flags.
const (
	DefaultInterval = 5 * time.Second
	DefaultCache    = 2 * time.Second
)

// Options are the inputs of `ckpt lag`, separate from cobra so tests can call runLag.
type Options struct {
	// IO is where the output goes (cli.Env.IO).
	IO *iostreams.IOStreams
	// OpenStore opens a location (cli.Env.OpenStore).
	OpenStore func(ctx context.Context, uri string) (storage.Store, error)
	// Now is the clock (cli.Env.Now). Default: time.Now.
	Now func() time.Time

	// Locations are the checkpoints. At least one.
	Locations []string
	// Recursive takes each location as a parent folder or S3 prefix and follows every checkpoint
	// below it (fleet.Find). Default: false.
	Recursive bool
	// Broker is --bootstrap-server and the Kafka client options. Required.
	Broker cli.BrokerFlags
	// Output is "table" or "json".
	Output render.Format
	// Watch refreshes every Interval until interrupted. Default: false (one report).
	Watch bool
	// Interval is --interval. Default: DefaultInterval (5s).
	Interval time.Duration
	// Serve is --serve [HOST]:PORT: serve Prometheus metrics there until interrupted.
	// Default: "" (no server).
	Serve string
	// Cache is --cache: how long a refresh serves scrapes. Default: DefaultCache (2s).
	Cache time.Duration
	// CommitGroup is --commit-group: mirror the committed offsets into this consumer group.
	// Default: "" (the broker is only read).
	CommitGroup string
	// NoTimeLag is --no-time-lag: do not fetch record timestamps. Default: false.
	NoTimeLag bool
	// Delta is --delta-table: the tables of the query's Delta sources. With it, lag shows the
	// versions each Delta source is behind (one checkpoint, no broker). Default: none.
	Delta cli.DeltaFlags

	// ready, when set (tests), receives the metrics server's address once it listens.
	ready func(addr string)
}

const long = `Show how far Structured Streaming queries are behind their Kafka topics.

Spark's Kafka source commits nothing to a consumer group, so the usual lag tools see nothing.
ckpt lag reads the lag from the checkpoint itself and asks the broker for the rest. For each
partition of each Kafka source it shows:

  COMMITTED   the next offset the query reads: the end offset of the latest committed batch
              (offsets/C for the latest commits/C)
  IN-FLIGHT   the end offset of the batch planned but not committed (offsets/L, L > C): the
              batch running now, or the one a restart re-runs
  LATEST      the partition's latest offset (high watermark) on the broker
  LAG         LATEST − COMMITTED records (a partition new to the query: from its earliest offset)
  LAG-TIME    record time still to read: the timestamp of the last record minus that of the
              first unread record (fetched from the broker: one small fetch per partition)
  STATUS      ok, or what the next batch will hit: offsets-out-of-range, topic-recreated,
              partitions-removed, partitions-added, topic-missing (details with ckpt doctor)

--watch redraws every --interval on a terminal and appends when piped (-o json: one JSON
document per line). --serve [HOST]:PORT serves Prometheus metrics on /metrics for all the
checkpoints given, local or S3, read again on each scrape (reused for --cache).

--commit-group NAME writes the committed offsets into the Kafka consumer group NAME on every
refresh in which they changed, so that kafka-consumer-groups, Burrow or kafka-lag-exporter see
the query. SPARK NEVER READS THIS GROUP: it is a copy for monitoring. Changing its offsets
does not move the query, and the query restarts from its checkpoint whatever the group says.
This is the only case where ckpt writes to the broker. The group must have no active members.

Broker access: --bootstrap-server plus Spark's kafka.* client options (--kafka-option
kafka.security.protocol=SASL_SSL, kafka.sasl.mechanism, kafka.sasl.jaas.config,
kafka.ssl.ca.location, …) or a properties file (--kafka-option-file). See docs/lag.md.

Exit codes:
  0  success (also when a partition has a problem: STATUS says so; ckpt doctor fails on it)
  1  the broker or a checkpoint could not be read, or the group commit failed
  2  usage error`

// NewCmd builds `ckpt lag`. runF replaces runLag in tests of the flag wiring.
func NewCmd(env *cli.Env, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: env.IO, OpenStore: env.OpenStore, Now: env.Now, Interval: DefaultInterval, Cache: DefaultCache}
	var output string
	cmd := &cobra.Command{
		Use:   "lag CHECKPOINT... --bootstrap-server HOST:PORT",
		Short: "Show how far queries are behind their Kafka topics (records and time)",
		Long:  long,
		Example: `  ckpt lag /data/checkpoints/orders --bootstrap-server kafka:9092
  ckpt lag s3://bucket/ckpt/a s3://bucket/ckpt/b --bootstrap-server kafka:9092 -o json
  ckpt lag ./ckpt --bootstrap-server kafka:9092 --watch --interval 10s
  ckpt lag s3://bucket/ckpt/a s3://bucket/ckpt/b --bootstrap-server kafka:9092 --serve :9108
  ckpt lag ./ckpt --bootstrap-server kafka:9093 --kafka-option-file client.properties --commit-group orders-query
  ckpt lag ./ckpt --delta-table s3://lake/events`,
		Args: cli.MinimumArgs(1, "at least one checkpoint location"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Locations = args
			f, err := cli.ParseWideOutput(output, opts.IO)
			if err != nil {
				return err
			}
			opts.Output = f
			if err := validate(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runLag(cmd.Context(), opts)
		},
	}
	cli.AddWideOutputFlag(cmd, &output)
	fl := cmd.Flags()
	opts.Broker.AddFlags(fl)
	fl.BoolVarP(&opts.Recursive, "recursive", "r", false, "follow every checkpoint below each location (a folder or S3 prefix)")
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "refresh every --interval until interrupted")
	fl.DurationVar(&opts.Interval, "interval", opts.Interval, "time between refreshes with --watch")
	fl.StringVar(&opts.Serve, "serve", "", "serve Prometheus metrics on `[HOST]:PORT` (path /metrics) until interrupted")
	fl.DurationVar(&opts.Cache, "cache", opts.Cache, "with --serve: reuse a refresh for scrapes within this long")
	fl.StringVar(&opts.CommitGroup, "commit-group", "", "mirror the committed offsets into consumer group `NAME` (Spark never reads it; writes to the broker)")
	opts.Delta.AddTableFlag(fl)
	fl.BoolVar(&opts.NoTimeLag, "no-time-lag", false, "do not fetch record timestamps (no LAG-TIME; needs only Describe, not Read, on the topics)")
	return cmd
}

func validate(opts *Options) error {
	if len(opts.Delta.Tables) > 0 {
		switch {
		case opts.Broker.Enabled():
			return exitcode.UsageError(errors.New("--delta-table and --bootstrap-server: run ckpt lag once for the Delta sources and once for the Kafka sources"))
		case len(opts.Locations) != 1:
			return exitcode.UsageError(fmt.Errorf("--delta-table measures one query: give one checkpoint, not %d", len(opts.Locations)))
		case opts.Watch || opts.Serve != "" || opts.CommitGroup != "":
			return exitcode.UsageError(errors.New("--delta-table prints one report: no --watch, --serve or --commit-group"))
		}
		return nil
	}
	switch {
	case !opts.Broker.Enabled():
		return exitcode.UsageError(errors.New("ckpt lag needs the broker: give --bootstrap-server HOST:PORT"))
	case opts.Interval <= 0:
		return exitcode.UsageError(fmt.Errorf("--interval %s: must be positive", opts.Interval))
	case opts.Cache < 0:
		return exitcode.UsageError(fmt.Errorf("--cache %s: must not be negative", opts.Cache))
	case opts.Serve != "" && opts.Watch:
		return exitcode.UsageError(errors.New("--serve and --watch do not go together: --serve refreshes on every scrape"))
	case opts.CommitGroup != "" && len(opts.Locations) > 1:
		return exitcode.UsageError(fmt.Errorf("--commit-group mirrors one query: give one checkpoint, not %d", len(opts.Locations)))
	}
	if opts.Serve != "" {
		if _, _, err := net.SplitHostPort(opts.Serve); err != nil {
			return exitcode.UsageError(fmt.Errorf("--serve %q: want [HOST]:PORT, e.g. :9108", opts.Serve))
		}
	}
	return nil
}

func runLag(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := validate(opts); err != nil {
		return err
	}
	if !opts.Watch && opts.Serve == "" {
		var stop func()
		ctx, stop = cli.Progress(ctx, opts.IO, opts.Output)
		defer stop()
	}
	if opts.Recursive {
		// Every checkpoint below each parent, found once: a --watch or --serve follows those.
		locs, err := expandRecursive(ctx, opts)
		if err != nil {
			return err
		}
		opts.Locations = locs
		if opts.CommitGroup != "" && len(locs) > 1 {
			return exitcode.UsageError(fmt.Errorf("--commit-group mirrors one query: --recursive found %d checkpoints", len(locs)))
		}
	}
	if len(opts.Delta.Tables) > 0 {
		return runDeltaLag(ctx, opts)
	}
	cl, err := opts.Broker.KgoClient(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	c := &lag.Collector{
		Locations:   opts.Locations,
		Open:        opts.OpenStore,
		Client:      cl,
		Now:         opts.Now,
		Timeout:     opts.Broker.Timeout,
		NoTimeLag:   opts.NoTimeLag,
		CommitGroup: opts.CommitGroup,
	}
	switch {
	case opts.Serve != "":
		c.CacheTTL = opts.Cache
		return serve(ctx, opts, c)
	case opts.Watch:
		return watch(ctx, opts, c)
	}
	rep, err := c.Collect(ctx)
	if err != nil {
		return err
	}
	if opts.Recursive {
		worstFirst(rep)
	}
	if opts.Output == render.FormatJSON {
		if err := render.JSON(opts.IO.Out, rep); err != nil {
			return err
		}
	} else {
		printReport(render.New(opts.IO), rep)
	}
	return reportErr(rep)
}

// reportErr is exit 1 when part of the report failed: a checkpoint, a corrupt commit file (the
// restart fails on it) or the group commit.
func reportErr(rep *lag.Report) error {
	for _, c := range rep.Checkpoints {
		if c.Error != "" || len(c.CorruptCommits) > 0 {
			return exitcode.Silent(exitcode.Failure)
		}
	}
	if rep.CommitGroup != nil && rep.CommitGroup.Error != "" {
		return exitcode.Silent(exitcode.Failure)
	}
	// A lag of a query that cannot restart is no all-clear: exit 3, as replay's failed prediction.
	for _, c := range rep.Checkpoints {
		if c.Restart != nil && c.Restart.Fails {
			return exitcode.Silent(exitcode.Findings)
		}
	}
	return nil
}

// watch redraws (terminal) or appends (pipe) a report every interval until ctx ends. Errors
// are shown and the next refresh tries again: a broker restart should not end the watch.
func watch(ctx context.Context, opts *Options, c *lag.Collector) error {
	tty := opts.IO.IsStdoutTTY()
	for first := true; ; first = false {
		rep, err := c.Collect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		if opts.Now != nil {
			now = opts.Now()
		}
		switch {
		case opts.Output == render.FormatJSON:
			if err != nil {
				fmt.Fprintf(opts.IO.ErrOut, "ckpt: %v\n", err)
				break
			}
			// One document per line (JSON Lines), so a consumer can read refresh by refresh.
			b, merr := json.Marshal(rep)
			if merr != nil {
				return merr
			}
			fmt.Fprintf(opts.IO.Out, "%s\n", b)
		default:
			if tty {
				fmt.Fprint(opts.IO.Out, "\x1b[H\x1b[2J")
			} else if !first {
				fmt.Fprintln(opts.IO.Out)
			}
			r := render.New(opts.IO)
			r.Println(r.Faint(fmt.Sprintf("Every %s: %s", opts.Interval, now.Format(time.RFC3339))))
			if err != nil {
				r.Println(r.Bad("error: ") + err.Error())
				break
			}
			printReport(r, rep)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opts.Interval):
		}
	}
}

// serve runs the metrics server until ctx ends (SIGINT, SIGTERM).
func serve(ctx context.Context, opts *Options, c *lag.Collector) error {
	ln, err := net.Listen("tcp", opts.Serve)
	if err != nil {
		return fmt.Errorf("--serve %s: %w", opts.Serve, err)
	}
	srv := &http.Server{Handler: lag.Handler(c), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	fmt.Fprintf(opts.IO.Out, "serving metrics on http://%s/metrics\n", addr)
	if opts.ready != nil {
		opts.ready(addr)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// runDeltaLag is `ckpt lag CHECKPOINT --delta-table PATH...`: versions behind per Delta source.
func runDeltaLag(ctx context.Context, opts *Options) error {
	loc := opts.Locations[0]
	store, err := opts.OpenStore(ctx, loc)
	if err != nil {
		return err
	}
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return err
	}
	if len(cp.Root) == 0 {
		return fmt.Errorf("%s holds no checkpoint (the directory is missing or empty)", loc)
	}
	tables, err := deltastate.ReadTables(ctx, opts.OpenStore, cp, opts.Delta.Tables)
	if err != nil {
		return err
	}
	rep, err := lag.ComputeDelta(ctx, cp, loc, tables, recovery.Options{})
	if err != nil {
		return err
	}
	if opts.Output == render.FormatJSON {
		return render.JSON(opts.IO.Out, rep)
	}
	printDeltaReport(render.New(opts.IO), rep)
	return nil
}
