package render

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

var wideTable = Table{
	Title:   "Findings",
	Headers: []string{"severity", "code", "path", "message"},
	Rows: [][]string{
		{"error", "offsets-missing", "s3://bucket/very/long/prefix/of/checkpoints/orders-eu-west-1/offsets/1234567", "batch 1234567 has a commit but no offsets file, so the restart fails with IllegalStateException before it reads anything"},
		{"warning", "tmp-leftover", "/data/checkpoints/orders/commits/.1234567.d1b1c2f0-6c1e-4a5b-9a7d-3f0e8f3b2a11.tmp", "a temporary file a crashed writer left behind"},
		{"info", "x", "short", "ok"},
	},
}

func renderAt(t *testing.T, width int, tb Table) string {
	t.Helper()
	io, _, out, _ := iostreams.Test()
	io.SetStdoutTTY(true)
	io.SetTerminalWidth(width)
	New(io).Table(tb)
	return out.String()
}

// TestTableFitsTheTerminal draws a table of long paths and messages at 80 and 40 columns: no
// line is wider than the screen, no word is broken (a word is whole or cut with an ellipsis),
// and the headers are upper case as in a pipe.
func TestTableFitsTheTerminal(t *testing.T) {
	words := map[string]bool{}
	for _, r := range wideTable.Rows {
		for _, c := range r {
			for _, w := range strings.Fields(c) {
				words[w] = true
			}
		}
	}
	words[wideTable.Title] = true
	for _, h := range wideTable.Headers {
		words[strings.ToUpper(h)] = true
	}
	for _, width := range []int{80, 40} {
		got := renderAt(t, width, wideTable)
		for _, line := range strings.Split(strings.TrimRight(got, "\n"), "\n") {
			if w := lipgloss.Width(line); w > width {
				t.Errorf("width %d: line of %d cells:\n%s", width, w, line)
			}
			for _, f := range strings.Fields(strings.Trim(line, "│╭╮╰╯─┬┴┼├┤")) {
				f = strings.Trim(f, "│")
				if f == "" || words[f] || strings.Contains(f, Ellipsis) {
					continue
				}
				t.Errorf("width %d: %q is a broken word in\n%s", width, f, got)
			}
		}
		if !strings.Contains(got, "CODE") || strings.Contains(got, "code") || strings.Contains(got, "sever") {
			t.Errorf("width %d: headers not upper case:\n%s", width, got)
		}
	}
}

func TestTableKeepsNaturalWidthWhenItFits(t *testing.T) {
	tb := Table{Headers: []string{"batch", "committed"}, Rows: [][]string{{"7", "yes"}}}
	if a, b := renderAt(t, 200, tb), renderAt(t, 0, tb); a != b {
		t.Errorf("a table that fits changed:\n%s\n%s", a, b)
	}
}

func TestWrap(t *testing.T) {
	cases := []struct {
		in    string
		width int
		want  string
	}{
		{"the restart fails", 10, "the\nrestart\nfails"},
		{"the restart fails", 20, "the restart fails"},
		{"supercalifragilistic word", 8, "superca…\nword"},
		{"/data/checkpoints/orders/offsets/17", 12, "/data/…ts/17"},
		{"a b\nc", 5, "a b\nc"},
	}
	for _, c := range cases {
		if got := Wrap(c.in, c.width); got != c.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

func TestFitWidths(t *testing.T) {
	got := fitWidths([]int{5, 60, 100}, []int{5, 10, 10}, 45)
	if got[0] != 5 || got[1] != 20 || got[2] != 20 {
		t.Errorf("fitWidths = %v", got)
	}
	if got := fitWidths([]int{5, 60}, []int{5, 10}, 100); got[0] != 5 || got[1] != 60 {
		t.Errorf("fitWidths of a table that fits = %v", got)
	}
	if got := fitWidths([]int{8, 60}, []int{8, 10}, 6); got[0]+got[1] != 6 {
		t.Errorf("fitWidths below the floors = %v", got)
	}
}

// A header is never cut, in any table: a column is at least as wide as its longest header word
// (PARTITION was drawn as PARTI…).
func TestHeadersNeverCut(t *testing.T) {
	tb := Table{Headers: []string{"partition", "committed", "message"}, Rows: [][]string{{"0", "12", strings.Repeat("word ", 30)}}}
	got := renderAt(t, 40, tb)
	if !strings.Contains(got, "PARTITION") || !strings.Contains(got, "COMMITTED") {
		t.Errorf("header cut:\n%s", got)
	}
}

// Columns with a Drop order give way in that order, the hidden ones are named, and wide keeps
// them all.
func TestTableDropsColumnsByPriority(t *testing.T) {
	tb := Table{Headers: []string{"id", "first-to-go", "second-to-go", "status"}, Drop: []int{0, 1, 2, 0},
		Rows: [][]string{{"1", "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "partitions-removed"}}}
	got := renderAt(t, 50, tb)
	if strings.Contains(got, "FIRST-TO-GO") && !strings.Contains(got, "SECOND-TO-GO") || strings.Contains(got, Ellipsis) {
		t.Errorf("dropped out of order or cut:\n%s", got)
	}
	if !strings.Contains(got, "partitions-removed") || !strings.Contains(got, "FIRST-TO-GO hidden to fit 50 columns") {
		t.Errorf("at 50 columns:\n%s", got)
	}
	io, _, out, _ := iostreams.Test()
	io.SetStdoutTTY(true)
	io.SetTerminalWidth(50)
	io.SetWide(true)
	New(io).Table(tb)
	if !strings.Contains(out.String(), "FIRST-TO-GO") || strings.Contains(out.String(), "hidden") {
		t.Errorf("wide:\n%s", out.String())
	}
}
