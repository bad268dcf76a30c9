package render

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

const page = "# missing-previous-offsets\n\n**The offsets file before the latest one is missing.** Severity: error.\n\n" +
	"On restart Spark reads the latest offsets file `offsets/L` and then `offsets/L-1`, the end of the previous batch and so the start of batch L.\n\n" +
	"## Fix\n\n* **Spark's documented procedure** (for the async shape): restart the query with `asyncProgressTrackingEnabled=true` and let it run.\n" +
	"  Stop it afterwards.\n1. `ckpt repair <checkpoint>` shows a plan.\n\n```\njava.lang.IllegalStateException: batch L-1 doesn't exist, which is a very long line that is never wrapped\n```\n"

func markdownAt(t *testing.T, tty, colour bool, width int) string {
	t.Helper()
	io, _, out, _ := iostreams.Test()
	io.SetStdoutTTY(tty)
	io.SetColorEnabled(colour)
	io.SetTerminalWidth(width)
	New(io).Markdown(page)
	return out.String()
}

func TestMarkdownPipedIsUnchanged(t *testing.T) {
	if got := markdownAt(t, false, false, 0); got != page {
		t.Errorf("piped Markdown changed:\n%s", got)
	}
}

func TestMarkdownOnATerminal(t *testing.T) {
	got := markdownAt(t, true, true, 60)
	for _, bad := range []string{"**", "# ", "`"} {
		if strings.Contains(got, bad) {
			t.Errorf("markup %q left in:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "\x1b[1m") {
		t.Errorf("no bold:\n%q", got)
	}
	if !strings.Contains(got, "  • ") || !strings.Contains(got, "  1. ") {
		t.Errorf("list not indented under bullets:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if w := lipgloss.Width(line); w > 60 && !strings.Contains(line, "IllegalStateException") {
			t.Errorf("line of %d cells over 60:\n%s", w, line)
		}
	}
	if !strings.Contains(got, "\n    \x1b[90mjava.lang.IllegalStateException") {
		t.Errorf("code block not indented:\n%s", got)
	}
	// A list item's continuation lines hang under its text.
	plain := markdownAt(t, true, false, 60)
	if !strings.Contains(plain, "\n    ") || !strings.Contains(plain, "═") {
		t.Errorf("without colour: no hanging indent or heading rule:\n%s", plain)
	}
	if !strings.Contains(plain, "`offsets/L`") {
		t.Errorf("without colour, code spans keep their backticks:\n%s", plain)
	}
}

// FuzzMarkdown renders any text on a terminal: no panic, and every word of the input that is not
// markup comes out (nothing is lost by the renderer).
func FuzzMarkdown(f *testing.F) {
	f.Add(page)
	f.Add("# h\n\n* a **b `c` d** e\n  f\n1. g\n```\nx\n")
	f.Add("**unclosed `code")
	f.Fuzz(func(t *testing.T, src string) {
		io, _, out, _ := iostreams.Test()
		io.SetStdoutTTY(true)
		io.SetTerminalWidth(20)
		New(io).Markdown(src)
		if strings.TrimSpace(src) != "" && out.Len() == 0 {
			t.Fatalf("no output for %q", src)
		}
	})
}

// FuzzWrap: no line of Wrap's output is wider than the width, whatever the text.
func FuzzWrap(f *testing.F) {
	f.Add("the restart fails with /a/very/long/path/to/offsets/17", 12)
	f.Add("é 世界 \x1b[1mbold\x1b[0m", 3)
	f.Fuzz(func(t *testing.T, s string, width int) {
		if width < 1 || width > 200 || strings.ContainsAny(s, "\t\r\x1b") {
			return
		}
		for _, line := range strings.Split(Wrap(s, width), "\n") {
			if w := lipgloss.Width(line); w > width {
				t.Fatalf("Wrap(%q, %d): line %q is %d wide", s, width, line, w)
			}
		}
	})
}
