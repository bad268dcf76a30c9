// Package cli holds what every command needs from its surroundings: streams, the storage opener,
// the clock, and the shared flag conventions. Commands get an *Env instead of globals so that
// tests can run them without cobra and without a process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Env is the environment a command runs in.
type Env struct {
	IO      *iostreams.IOStreams
	Version string
	// Commit and BuildDate are set by the release build (ldflags); "" otherwise (ckpt version
	// then reads the module's build info).
	Commit, BuildDate string
	// Storage holds the store settings from the global flags (S3, timeouts); OpenStore uses them.
	Storage storage.Options
	// Now is the clock; tests pin it.
	Now func() time.Time
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// Rand is the source of random bits (repair ids); nil: crypto/rand. Tests pin it.
	Rand io.Reader
}

// OpenStore opens a checkpoint location given as a path or a URI storage.Open accepts (file://,
// s3://, gs://, abfss://, wasbs://, hdfs://). A location written wrong (s3:// without a bucket,
// an unknown scheme) is a usage error.
func (e *Env) OpenStore(ctx context.Context, uri string) (storage.Store, error) {
	o := e.Storage
	if o.Getenv == nil {
		o.Getenv = e.Getenv
	}
	s, err := storage.Open(ctx, uri, o)
	if errors.Is(err, storage.ErrLocation) {
		return nil, exitcode.UsageError(err)
	}
	return s, err
}

// AddOutputFlag adds -o/--output (table or json) to cmd.
func AddOutputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "table", "output format: table or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{string(render.FormatTable), string(render.FormatJSON)}, cobra.ShellCompDirectiveNoFileComp))
}

// AddWideOutputFlag adds -o/--output with wide (table, wide or json), for the commands whose
// tables drop columns on a narrow terminal (render.Table.Drop).
func AddWideOutputFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "table", "output format: table, wide (every column, however narrow the terminal) or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{string(render.FormatTable), string(render.FormatWide), string(render.FormatJSON)}, cobra.ShellCompDirectiveNoFileComp))
}

// ParseWideOutput validates the -o value of AddWideOutputFlag: wide is a table (the format
// returned) with every column, which the streams remember for the renderer.
func ParseWideOutput(s string, ios *iostreams.IOStreams) (render.Format, error) {
	if s == string(render.FormatWide) {
		ios.SetWide(true)
		return render.FormatTable, nil
	}
	return ParseOutput(s)
}

// ParseOutput validates the -o value as a usage error.
func ParseOutput(s string) (render.Format, error) {
	f, err := render.ParseFormat(s)
	if err != nil {
		return "", exitcode.UsageError(err)
	}
	return f, nil
}

// ExactArgs is cobra.ExactArgs with a usage error that says what the argument is.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return exitcode.UsageError(fmt.Errorf("%s: expected %s, got %d argument(s)\nusage: %s", cmd.CommandPath(), what, len(args), cmd.UseLine()))
		}
		return nil
	}
}

// MinimumArgs requires at least n arguments.
func MinimumArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return exitcode.UsageError(fmt.Errorf("%s: expected %s\nusage: %s", cmd.CommandPath(), what, cmd.UseLine()))
		}
		return nil
	}
}
