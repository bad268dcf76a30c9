// Package broker implements `ckpt broker`: an embedded Kafka (kfake) on 127.0.0.1 for demos,
// tests and trying `ckpt run` without a cluster.
package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
)

// Options are the flags of `ckpt broker`.
type Options struct {
	Out io.Writer // the "listening" line
	Err io.Writer // generator errors

	Port     int      // --port, default 9092; 0 picks a free port
	Topics   []string // --topic name[:partitions], repeatable
	Generate string   // --generate topic
	Rate     int      // --rate records/s, default 1000; 0 as fast as possible
	Limit    int64    // --limit records, default 0 (no limit)
	Keys     int      // --keys distinct keys, default 100
	DataDir  string   // --data-dir, default in memory

	// ready, when set (tests), receives the broker once it listens.
	ready func(*embedkafka.Broker)
}

// NewCmd builds `ckpt broker`.
func NewCmd(env *cli.Env) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run an embedded Kafka broker on 127.0.0.1 (for demos and tests)",
		Long: `Run a single-node, in-process Kafka broker (franz-go's kfake) on 127.0.0.1 until
interrupted. It speaks the real Kafka protocol, so Spark, kcat or ckpt run can use it.

Topics are created at start; the broker never creates topics on its own. With --generate it
also writes deterministic JSON records: record i is
  {"id":i,"user":"u<i mod keys>","amount":…,"ts":"<RFC 3339>"} with key "u<i mod keys>".

Everything is kept in memory unless --data-dir is set.`,
		Example: `  ckpt broker --topic in:4 --topic out:4
  ckpt broker --port 0 --generate in --rate 500 --limit 10000`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out, opts.Err = env.IO.Out, env.IO.ErrOut
			return run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Port, "port", 9092, "TCP port on 127.0.0.1 (0: any free port)")
	f.StringArrayVar(&opts.Topics, "topic", nil, "create topic `name[:partitions]` (default partitions 10; repeatable)")
	f.StringVar(&opts.Generate, "generate", "", "write generated records to `topic` (created if not listed)")
	f.IntVar(&opts.Rate, "rate", 1000, "generated records per second (0: as fast as possible)")
	f.Int64Var(&opts.Limit, "limit", 0, "stop generating after `n` records (0: no limit)")
	f.IntVar(&opts.Keys, "keys", embedkafka.DefaultKeys, "number of distinct generated keys")
	f.StringVar(&opts.DataDir, "data-dir", "", "keep the log in `dir` and reload it on the next start (default: in memory)")
	return cmd
}

// parseTopic reads "name" or "name:partitions".
func parseTopic(s string) (embedkafka.TopicSpec, error) {
	name, parts, hasParts := strings.Cut(s, ":")
	if name == "" {
		return embedkafka.TopicSpec{}, fmt.Errorf("--topic %q: empty topic name", s)
	}
	spec := embedkafka.TopicSpec{Name: name}
	if hasParts {
		n, err := strconv.ParseInt(parts, 10, 32)
		if err != nil || n < 1 {
			return embedkafka.TopicSpec{}, fmt.Errorf("--topic %q: partitions must be a positive integer", s)
		}
		spec.Partitions = int32(n)
	}
	return spec, nil
}

func run(ctx context.Context, opts *Options) error {
	bo := embedkafka.Options{Port: opts.Port, DataDir: opts.DataDir}
	for _, t := range opts.Topics {
		spec, err := parseTopic(t)
		if err != nil {
			return exitcode.UsageError(err)
		}
		bo.Topics = append(bo.Topics, spec)
	}
	switch {
	case opts.Port < 0 || opts.Port > 65535:
		return exitcode.UsageError(fmt.Errorf("--port %d: out of range 0-65535", opts.Port))
	case opts.Rate < 0:
		return exitcode.UsageError(fmt.Errorf("--rate %d: must not be negative", opts.Rate))
	case opts.Limit < 0:
		return exitcode.UsageError(fmt.Errorf("--limit %d: must not be negative", opts.Limit))
	case opts.Keys < 1:
		return exitcode.UsageError(fmt.Errorf("--keys %d: must be positive", opts.Keys))
	case opts.Generate == "" && opts.Limit != 0:
		return exitcode.UsageError(errors.New("--limit needs --generate"))
	}
	if opts.Generate != "" {
		bo.Generate = &embedkafka.GeneratorSpec{Topic: opts.Generate, Rate: opts.Rate, Limit: opts.Limit, Keys: opts.Keys}
	}
	b, err := embedkafka.Start(ctx, bo)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(opts.Out, "broker listening on %s\n", b.Addr())
	if opts.ready != nil {
		opts.ready(b)
	}
	select {
	case <-ctx.Done():
		// SIGINT/SIGTERM is how this command ends: a clean exit.
		return nil
	case <-b.GeneratorDone():
		// The generator reached its limit (or failed); keep serving until interrupted.
		if err := b.GeneratorErr(); err != nil {
			fmt.Fprintf(opts.Err, "ckpt: generator stopped: %v\n", err)
		}
		<-ctx.Done()
		return nil
	}
}
