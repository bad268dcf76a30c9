// Package root assembles the ckpt command tree and runs it.
package root

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/version"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/render"
)

const exitCodesHelp = `Exit codes:
  0  success (doctor: nothing at or above --fail-on)
  1  ckpt failed (I/O error, unreadable input, refused operation)
  2  usage error
  3  doctor found problems at or above --fail-on; replay predicts a failed restart`

// NewCmd builds the root command with every subcommand.
func NewCmd(env *cli.Env) *cobra.Command {
	var g globals
	errOut := env.IO.ErrOut
	cmd := &cobra.Command{
		Use:   "ckpt",
		Short: "Inspect, diagnose, repair and run Spark Structured Streaming checkpoints",
		Long: `ckpt reads Apache Spark Structured Streaming checkpoints (local disk, S3, GCS, Azure or HDFS),
explains what a restart will do, repairs them safely, and runs a Spark-compatible micro-batch engine.

` + exitCodesHelp + `

Help topics: ckpt help environment, exit-codes, config, locations.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.String(env.Version),
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			g.apply(env, errOut)
			// Defaults from the environment and the config file's context, below the flags.
			// ckpt config reads the file itself (and must work when its context is wrong).
			if c.Name() == "help" || c.Name() == "version" || c.Parent() != nil && c.Parent().Name() == "config" || c.Name() == "config" {
				return nil
			}
			getenv := env.Getenv
			if getenv == nil {
				getenv = func(string) string { return "" }
			}
			st, err := cli.LoadConfig(getenv, g.context)
			if err != nil {
				return err
			}
			return cli.ApplyConfig(c, st)
		},
	}
	cmd.SetVersionTemplate("ckpt {{.Version}}\n")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.UsageError(fmt.Errorf("%w\nusage: %s", err, c.UseLine()))
	})
	// --version has no shorthand: -v is --verbose (cobra would take -v for --version).
	cmd.Flags().Bool("version", false, "print the ckpt version and exit (ckpt version says more)")
	g.add(cmd.PersistentFlags())
	setHelp(cmd, env.IO)

	cmd.AddCommand(topicCommands()...)
	for _, sub := range commands(env) {
		if storageCommands[sub.Name()] {
			addStorageFlags(sub, env)
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// Execute runs ckpt with args and returns the process exit status. It is the single place where
// errors become exit codes and messages on stderr.
func Execute(ctx context.Context, env *cli.Env, args []string) int {
	// The real stderr: --quiet silences the commands' stderr, never the error.
	errOut := env.IO.ErrOut
	cmd := NewCmd(env)
	cmd.SetArgs(args)
	cmd.SetIn(env.IO.In)
	cmd.SetOut(env.IO.Out)
	cmd.SetErr(errOut)
	err := cmd.ExecuteContext(ctx)
	if msg := exitcode.Message(err); msg != "" {
		// Errors quote files, their contents and flags: escaped, so none can drive the terminal.
		fmt.Fprintf(errOut, "ckpt: %s\n", render.EscapeText(msg))
	}
	return exitcode.Code(err)
}

// Main runs ckpt as a process: real streams, environment and signals. version, commit and date
// are the release build's ldflags ("dev", "", "" otherwise).
func Main(version, commit, date string) int {
	// The first SIGINT or SIGTERM cancels ctx: every command stops at its next read or write
	// and leaves a journal it can resume. The second gets Go's default (the process ends at
	// once), so a user is never left with a ckpt that ignores Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	env := &cli.Env{
		IO:        iostreams.System(),
		Version:   version,
		Commit:    commit,
		BuildDate: date,
		Now:       time.Now,
		Getenv:    os.Getenv,
	}
	env.Storage.S3PathStyle = env.Getenv("CKPT_S3_PATH_STYLE") == "true"
	if v := env.Getenv("CKPT_MAX_FILE_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			fmt.Fprintf(env.IO.ErrOut, "ckpt: CKPT_MAX_FILE_BYTES=%s: want a positive number of bytes (default %d)\n", render.EscapeText(v), logformat.DefaultMaxFileBytes)
			return exitcode.Usage
		}
		logformat.MaxFileBytes = n
	}
	if v := env.Getenv("CKPT_MAX_SOURCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			fmt.Fprintf(env.IO.ErrOut, "ckpt: CKPT_MAX_SOURCES=%s: want a positive number of source lines (default %d)\n", render.EscapeText(v), logformat.DefaultMaxSources)
			return exitcode.Usage
		}
		logformat.MaxSources = n
	}
	return Execute(ctx, env, os.Args[1:])
}
