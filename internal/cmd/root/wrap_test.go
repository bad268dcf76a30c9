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
// Before, purge's plan line was 150 cells wide, and doctor's line under its verdict
// ("checkpoint <path> · sync engine · Spark 3.5") ran past the edge with a long path.
func TestCommandsWrapAt80Columns(t *testing.T) {
	dir := t.TempDir()
	if err := scenario.WriteLinear(dir, scenario.Linear{Name: "wrap", Batches: 150, Committed: 149, Initial: true}); err != nil {
		t.Fatal(err)
	}
	done := t.TempDir() // every batch committed: offsets reset plans
	if err := scenario.WriteLinear(done, scenario.Linear{Name: "wrap", Batches: 150, Committed: 150, Initial: true}); err != nil {
		t.Fatal(err)
	}
	// A checkpoint whose offsets/L-1 is missing: repair weighs every strategy, doctor explains.
	broken := t.TempDir()
	if err := scenario.WriteLinear(broken, scenario.Linear{Name: "wrap", Batches: 150, Committed: 147, Initial: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(broken + "/offsets/148"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"purge", dir, "--keep", "100"},
		{"rewind", dir, "--to-batch", "140"},
		{"repair", dir},
		{"offsets", "export", dir},
		{"offsets", "reset", done, "--shift-by", "-5"},
		{"inspect", dir},
		{"inspect", dir, "--batches"},
		{"doctor", dir},
		{"replay", dir},
		{"state", "ls", dir},
		{"repair", "list", dir},
		{"repair", broken},
		{"doctor", broken},
		{"replay", broken},
	} {
		t.Run(strings.Join(args[:min(2, len(args))], " "), func(t *testing.T) {
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
