// Package root assembles the ckpt command tree and runs it.
package root

import (
	"context"
	"errors"
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
  3  doctor found problems at or above --fail-on; replay predicts a failed restart
  130  stopped by SIGINT or SIGTERM before finishing`

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
			if err := g.limits(c.Flags()); err != nil {
				return exitcode.UsageError(err)
			}
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
	var sig *exitcode.Signal
	if err != nil && errors.As(context.Cause(ctx), &sig) {
		// A signal stopped the command: whatever error its last read or write returned, the
		// status says so. A command that still finished (run, lag --watch, broker stop on a
		// signal by design) returned nil and keeps its 0.
		err = exitcode.Stopped(sig, err)
	}
	if msg := exitcode.Message(err); msg != "" {
		// Errors quote files, their contents and flags: escaped, so none can drive the terminal.
		fmt.Fprintf(errOut, "ckpt: %s\n", render.EscapeText(msg))
	}
	return exitcode.Code(err)
}

// Main runs ckpt as a process: real streams, environment and signals. version, commit and date
// are the release build's ldflags ("dev", "", "" otherwise).
func Main(version, commit, date string) int {
	// The first SIGINT or SIGTERM cancels ctx, with the signal as its cause: every command stops
	// at its next read, write or step of a long loop, leaves a journal it can resume, and exits
	// exitcode.Interrupted. The second gets Go's default (the process ends at once), so a user is
	// never left with a ckpt that ignores Ctrl-C.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		signal.Stop(sigs)
		cancel(&exitcode.Signal{Name: signalName(s)})
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

// signalName is how a user knows s: SIGINT, SIGTERM.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
