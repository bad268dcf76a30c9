package root

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/scenario"
)

// At 80 columns the plans and hints of purge, rewind, repair and offsets wrap at spaces as
// doctor's findings do, instead of running past the edge where the terminal breaks words.
// Before, purge's plan line was 150 cells wide.
func TestCommandsWrapAt80Columns(t *testing.T) {
	dir := t.TempDir()
	if err := scenario.WriteLinear(dir, scenario.Linear{Name: "wrap", Batches: 150, Committed: 149, Initial: true}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"purge", dir, "--keep", "100"},
		{"rewind", dir, "--to-batch", "140"},
		{"repair", dir},
		{"offsets", "export", dir},
		{"inspect", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			ios.SetStdoutTTY(true)
			ios.SetTerminalWidth(80)
			env := &cli.Env{IO: ios, Version: "test", Now: time.Now, Getenv: os.Getenv}
			if code := Execute(context.Background(), env, args); code != 0 && code != 3 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if out.Len() == 0 {
				t.Fatal("no output")
			}
			for _, line := range strings.Split(out.String(), "\n") {
				if w := lipgloss.Width(line); w > 80 && len(strings.Fields(line)) > 1 {
					t.Errorf("%d cells: %q", w, line)
				}
			}
		})
	}
}
