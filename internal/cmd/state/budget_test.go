package state

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

// TestReadMemoryBudget: --memory-budget, else CKPT_STATE_MEMORY_BUDGET, sets the budget of the
// read (0: the reader's default); a size that is not one is a usage error naming its source.
func TestReadMemoryBudget(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want int64
		err  string
	}{
		{want: 0},
		{args: []string{"--memory-budget", "512KiB"}, want: 512 << 10},
		{args: []string{"--memory-budget", "3M"}, want: 3 << 20},
		{args: []string{"--memory-budget", "1GB"}, want: 1_000_000_000},
		{args: []string{"--memory-budget", "4096"}, want: 4096},
		{env: "2MiB", want: 2 << 20},
		{env: "2MiB", args: []string{"--memory-budget", "1MiB"}, want: 1 << 20},
		{args: []string{"--memory-budget", "0"}, err: "--memory-budget 0: want a positive size"},
		{args: []string{"--memory-budget", "12 parsecs"}, err: "--memory-budget 12 parsecs: want"},
		{args: []string{"--memory-budget", "9999999999G"}, err: "want a positive size"},
		{env: "lots", err: "CKPT_STATE_MEMORY_BUDGET=lots: want a positive size"},
	} {
		ios, _, _, _ := iostreams.Test()
		env := &cli.Env{IO: ios, Version: "test", Getenv: func(k string) string {
			if k == "CKPT_STATE_MEMORY_BUDGET" {
				return c.env
			}
			return ""
		}}
		var got *Options
		cmd := NewCmd(env, func(o *Options) error { got = o; return nil })
		cmd.SetArgs(append([]string{"read", "ckpt", "--operator", "0"}, c.args...))
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || exitcode.Code(err) != exitcode.Usage {
				t.Errorf("env %q %v: got %v (exit %d), want a usage error with %q", c.env, c.args, err, exitcode.Code(err), c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("env %q %v: %v", c.env, c.args, err)
		}
		if got.ReadOptions.MemoryBudget != c.want {
			t.Errorf("env %q %v: budget %d, want %d", c.env, c.args, got.ReadOptions.MemoryBudget, c.want)
		}
	}
}
