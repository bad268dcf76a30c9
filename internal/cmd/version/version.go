// Package version implements `ckpt version`.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
)

// NewCmd builds `ckpt version`.
func NewCmd(env *cli.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the ckpt version",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(env.IO.Out, "ckpt %s (%s, %s/%s)\n", String(env.Version), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

// String returns v, or the module version when the binary was built by `go install` without
// ldflags, so that every build can say what it is.
func String(v string) string {
	if v != "" && v != "dev" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
