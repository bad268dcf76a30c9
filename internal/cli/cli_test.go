package cli

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

func TestRestartFlags(t *testing.T) {
	parse := func(args ...string) (recovery.Options, error) {
		var f RestartFlags
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		f.AddFlags(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return f.Options()
	}
	o, err := parse()
	if err != nil || o.Mode != "" || o.SparkVersion != "" || o.CommitFormatVersion != 0 {
		t.Errorf("defaults: %+v %v", o, err)
	}
	o, err = parse("--mode", "async", "--spark-version", "4.0", "--commit-format-version", "2")
	if err != nil || o.Mode != recovery.ModeAsync || o.SparkVersion != "4.0" || o.CommitFormatVersion != 2 {
		t.Errorf("set: %+v %v", o, err)
	}
	for _, bad := range [][]string{{"--mode", "fast"}, {"--spark-version", "9.9"}, {"--commit-format-version", "4"}} {
		if _, err := parse(bad...); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: got %v (exit %d), want a usage error", bad, err, exitcode.Code(err))
		}
	}
}
