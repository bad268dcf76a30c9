// Package root assembles the ckpt command tree and runs it.
package root

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

const exitCodesHelp = `Exit codes:
  0  success (doctor: nothing at or above --fail-on)
  1  ckpt failed (I/O error, unreadable input, refused operation)
  2  usage error
  3  doctor found problems at or above --fail-on; replay predicts a failed restart`

// NewCmd builds the root command with every subcommand.
func NewCmd(env *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ckpt",
		Short: "Inspect, diagnose, repair and run Spark Structured Streaming checkpoints",
		Long: `ckpt reads Apache Spark Structured Streaming checkpoints (local disk, S3, GCS, Azure or HDFS),
explains what a restart will do, repairs them safely, and runs a Spark-compatible micro-batch engine.

` + exitCodesHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       env.Version,
	}
	cmd.SetVersionTemplate("ckpt {{.Version}}\n")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.UsageError(fmt.Errorf("%w\nusage: %s", err, c.UseLine()))
	})
	pf := cmd.PersistentFlags()
	pf.BoolVar(&env.Storage.S3PathStyle, "s3-path-style", env.Storage.S3PathStyle, "use path-style S3 addressing (for S3-compatible stores; also CKPT_S3_PATH_STYLE=true)")
	pf.StringVar(&env.Storage.S3Endpoint, "s3-endpoint", env.Storage.S3Endpoint, "S3 endpoint URL (default: AWS_ENDPOINT_URL or AWS)")
	pf.StringVar(&env.Storage.S3Region, "s3-region", env.Storage.S3Region, "S3 region (default: the AWS config chain, then us-east-1)")
	pf.DurationVar(&env.Storage.S3Timeout, "s3-timeout", env.Storage.S3Timeout, "how long one S3 request waits for the endpoint to connect and answer (default --store-timeout, or CKPT_S3_TIMEOUT)")
	pf.StringVar(&env.Storage.WebHDFSEndpoint, "webhdfs-endpoint", env.Storage.WebHDFSEndpoint, "WebHDFS endpoint for hdfs:// locations (default: CKPT_WEBHDFS_ENDPOINT, else http://<namenode host>:9870)")
	pf.DurationVar(&env.Storage.Timeout, "store-timeout", env.Storage.Timeout, "how long one request to GCS, Azure, HDFS (and S3) waits for the endpoint to connect and answer (default 30s, or CKPT_STORE_TIMEOUT)")

	for _, sub := range commands(env) {
		cmd.AddCommand(sub)
	}
	return cmd
}

// Execute runs ckpt with args and returns the process exit status. It is the single place where
// errors become exit codes and messages on stderr.
func Execute(ctx context.Context, env *cli.Env, args []string) int {
	cmd := NewCmd(env)
	cmd.SetArgs(args)
	cmd.SetIn(env.IO.In)
	cmd.SetOut(env.IO.Out)
	cmd.SetErr(env.IO.ErrOut)
	err := cmd.ExecuteContext(ctx)
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(env.IO.ErrOut, "ckpt: %s\n", msg)
	}
	return exitcode.Code(err)
}

// Main runs ckpt as a process: real streams, environment and signals.
func Main(version string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cli.Env{
		IO:      iostreams.System(),
		Version: version,
		Now:     time.Now,
		Getenv:  os.Getenv,
	}
	env.Storage.S3PathStyle = os.Getenv("CKPT_S3_PATH_STYLE") == "true"
	return Execute(ctx, env, os.Args[1:])
}
