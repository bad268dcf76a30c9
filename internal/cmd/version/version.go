// Package version implements `ckpt version`.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// Info says which build this is. The release build sets Version, Commit and Date with ldflags
// (goreleaser.yaml); a `go install …@vX` or `go build` in a clone fills them from the module's
// build info instead (Resolve).
type Info struct {
	Version string `json:"version"`
	// Commit is the VCS revision; "" when unknown.
	Commit string `json:"commit"`
	// Date is when the build (release) or the commit (go build from a clone) was made, RFC 3339;
	// "" when unknown.
	Date string `json:"date"`
	// Modified is true when the clone had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go, OS and Arch are the toolchain and platform.
	Go   string `json:"go"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// Resolve fills what ldflags left empty from the build info: the module version (set by
// `go install …@vX`), vcs.revision, vcs.time and vcs.modified (set by `go build` in a clone).
func Resolve(version, commit, date string, bi *debug.BuildInfo, ok bool) Info {
	in := Info{Version: version, Commit: commit, Date: date, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if ok && bi != nil {
		if (in.Version == "" || in.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.time":
				if in.Date == "" {
					in.Date = s.Value
				}
			case "vcs.modified":
				in.Modified = in.Modified || (s.Value == "true" && commit == "")
			}
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	return in
}

// Current is Resolve for the running binary.
func Current(version, commit, date string) Info {
	bi, ok := debug.ReadBuildInfo()
	return Resolve(version, commit, date, bi, ok)
}

// Line is the one-line form: "ckpt v1.2.0 (commit 1a2b3c4d5e6f, built 2026-12-01T20:00:00Z;
// go1.26.0 linux/amd64)".
func (in Info) Line() string {
	commit := "unknown"
	if in.Commit != "" {
		commit = in.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if in.Modified {
			commit += "+modified"
		}
	}
	date := in.Date
	if date == "" {
		date = "unknown"
	}
	return fmt.Sprintf("ckpt %s (commit %s, built %s; %s %s/%s)", in.Version, commit, date, in.Go, in.OS, in.Arch)
}

// NewCmd builds `ckpt version`.
func NewCmd(env *cli.Env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the ckpt version, commit and build date",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			in := Current(env.Version, env.Commit, env.BuildDate)
			if f == render.FormatJSON {
				return render.JSON(env.IO.Out, in)
			}
			fmt.Fprintln(env.IO.Out, in.Line())
			return nil
		},
	}
	cli.AddOutputFlag(cmd, &output)
	return cmd
}

// String returns v, or the module version when the binary was built by `go install` without
// ldflags, so that every build can say what it is.
func String(v string) string {
	return Current(v, "", "").Version
}
