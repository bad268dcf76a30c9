package render

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// Ellipsis marks a word cut to fit its column.
const Ellipsis = "…"

// tableOverhead is what a bordered table with one space of padding on each side of a cell adds
// to the widths of its n columns: two spaces and one rule per column, and the closing rule.
func tableOverhead(n int) int { return 3*n + 1 }

// fitWidths shrinks the natural widths of columns so that their sum is at most avail. Each column
// first gets its floor (its header or longest word, up to minColumn cells, or less if the screen
// is too narrow even for that), then the space left goes one cell at a time to the columns that
// still want more, so a long message column gives way before a column of batch ids does.
func fitWidths(natural, floor []int, avail int) []int {
	sum := 0
	for _, w := range natural {
		sum += w
	}
	if sum <= avail || len(natural) == 0 {
		return append([]int(nil), natural...)
	}
	out := make([]int, len(natural))
	left := avail
	for i := range natural {
		out[i] = min(floor[i], natural[i])
		left -= out[i]
	}
	if left < 0 {
		// Too narrow for the floors: every column from one cell, growing evenly to its floor.
		left = avail
		for i := range out {
			out[i] = 1
			left--
		}
		grow(out, floor, &left)
	}
	grow(out, natural, &left)
	return out
}

// grow hands out the left cells one at a time, round robin, to the columns below their target.
func grow(out, target []int, left *int) {
	for *left > 0 {
		grew := false
		for i := range out {
			if *left > 0 && out[i] < target[i] {
				out[i]++
				*left--
				grew = true
			}
		}
		if !grew {
			return
		}
	}
}

// minColumn caps the floor of a column: a column never claims more than this before the others
// had their share.
const minColumn = 10

// Wrap breaks s into lines of at most width cells, at spaces: a word is never split, and a word
// wider than the line is cut with an ellipsis (in its middle if it is a path, whose last element
// is what the reader looks for). Existing line breaks are kept. width < 1 returns s unchanged.
func Wrap(s string, width int) string { return wrapWords(s, width, true) }

// WrapWhole is Wrap that never cuts a word: one wider than the line stays whole on its own line
// (help text, where a flag or a conf key must read as it is typed).
func WrapWhole(s string, width int) string { return wrapWords(s, width, false) }

// wrapWords is Wrap; without cut, a word wider than the line stays whole on its own line.
func wrapWords(s string, width int, cut bool) string {
	if width < 1 {
		return s
	}
	var out []string
	for _, para := range strings.Split(printable(s), "\n") {
		out = append(out, wrapLine(para, width, cut)...)
	}
	return strings.Join(out, "\n")
}

func wrapLine(s string, width int, cut bool) []string {
	if lipgloss.Width(s) <= width {
		return []string{s}
	}
	indent := s[:len(s)-len(strings.TrimLeft(s, " "))]
	if len(indent) >= width {
		indent = ""
	}
	var lines []string
	var cur strings.Builder
	curW := 0
	cur.WriteString(indent)
	curW = len(indent)
	for _, word := range strings.Fields(s) {
		ww := lipgloss.Width(word)
		if cut && ww > width-len(indent) {
			word = Truncate(word, width-len(indent))
			ww = lipgloss.Width(word)
		}
		switch {
		case curW == len(indent):
		case curW+1+ww <= width:
			cur.WriteByte(' ')
			curW++
		default:
			lines = append(lines, cur.String())
			cur.Reset()
			cur.WriteString(indent)
			curW = len(indent)
		}
		cur.WriteString(word)
		curW += ww
	}
	return append(lines, cur.String())
}

// Truncate cuts s to at most width cells with an ellipsis: at the end, or in the middle for a
// path (a/b/c), so that its last element stays readable.
func Truncate(s string, width int) string {
	w := lipgloss.Width(s)
	if w <= width {
		return s
	}
	if width < 1 {
		return ""
	}
	if width == 1 {
		return Ellipsis
	}
	if r := []rune(s); strings.Contains(s, "/") && width >= 8 && len(r) == w {
		tail := (width - 1) / 2
		head := width - 1 - tail
		// As many runes as cells is not one cell a rune (a control character and a wide one
		// even out): the cut is measured.
		if cut := string(r[:head]) + Ellipsis + string(r[len(r)-tail:]); lipgloss.Width(cut) <= width {
			return cut
		}
	}
	return ansi.Truncate(s, width, Ellipsis)
}

// fitTable wraps the headers and cells of a table so that, drawn with a border, it is at most
// width cells wide. width < 1 leaves them as they are. A header word is never cut, nor, with
// whole, a word of a cell (unless the screen cannot hold them at all).
func fitTable(headers []string, rows [][]string, width int, whole bool) ([]string, [][]string) {
	n := len(headers)
	for _, r := range rows {
		n = max(n, len(r))
	}
	if width < 1 || n == 0 {
		return headers, rows
	}
	natural, floor := columnWidths(headers, rows, n, whole)
	widths := fitWidths(natural, floor, width-tableOverhead(n))
	wrapRow := func(row []string) []string {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = Wrap(c, widths[i])
		}
		return out
	}
	newRows := make([][]string, len(rows))
	for i, r := range rows {
		newRows[i] = wrapRow(r)
	}
	return wrapRow(headers), newRows
}

// columnWidths measures the n columns: natural is the widest line of each, floor the width it
// needs before anything is cut (its longest header word, and its longest cell word up to
// minColumn, or whole).
func columnWidths(headers []string, rows [][]string, n int, whole bool) (natural, floor []int) {
	natural, floor = make([]int, n), make([]int, n)
	measure := func(row []string, header bool) {
		for i, c := range row {
			for _, l := range strings.Split(c, "\n") {
				natural[i] = max(natural[i], lipgloss.Width(l))
				for _, w := range strings.Fields(l) {
					ww := lipgloss.Width(w)
					if !header && !whole {
						ww = min(ww, minColumn)
					}
					floor[i] = max(floor[i], ww)
				}
			}
		}
	}
	measure(headers, true)
	for _, r := range rows {
		measure(r, false)
	}
	return natural, floor
}

// dropColumns removes columns of t in their Drop order until its words fit in width cells
// (drawn with a border), and returns the table and the headers of the columns it removed.
func dropColumns(t Table, width int) (Table, []string) {
	var hidden []string
	for {
		n := len(t.Headers)
		for _, r := range t.Rows {
			n = max(n, len(r))
		}
		_, floor := columnWidths(upper(t.Headers), t.Rows, n, true)
		sum := tableOverhead(n)
		for _, f := range floor {
			sum += f
		}
		next := -1
		for i, d := range t.Drop {
			if d > 0 && i < len(t.Headers) && (next < 0 || d < t.Drop[next]) {
				next = i
			}
		}
		if sum <= width || next < 0 {
			return t, hidden
		}
		hidden = append(hidden, strings.ToUpper(t.Headers[next]))
		rows := make([][]string, len(t.Rows))
		for j, r := range t.Rows {
			rows[j] = without(r, next)
		}
		t = Table{Title: t.Title, Headers: without(t.Headers, next), Rows: rows, Drop: without(t.Drop, next)}
	}
}

// without is s with its element i removed (s itself when it has none), in a new slice.
func without[T any](s []T, i int) []T {
	if i >= len(s) {
		return append([]T(nil), s...)
	}
	return append(append([]T(nil), s[:i]...), s[i+1:]...)
}

// printable replaces invalid UTF-8 and C1 control characters with U+FFFD: a stray byte such as
// 0x9b in a file name would otherwise read as an escape sequence to the width measure and to the
// terminal, and the line would not fit.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r >= 0x80 && r <= 0x9f {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}
