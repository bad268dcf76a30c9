// Package render turns plain data into what a person or a script reads: aligned tables, styled on
// a terminal and plain when piped, and JSON. It knows nothing about checkpoints.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/lipgloss/table"
	"github.com/muesli/termenv"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

// Format is an output format chosen with -o.
type Format string

// The output formats every command accepts.
const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
	// FormatWide is a table with every column even when the terminal is narrower than the
	// table (kubectl's -o wide): only commands whose tables drop columns (Table.Drop) take it.
	FormatWide Format = "wide"
)

// ParseFormat validates a -o value.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case FormatTable, "":
		return FormatTable, nil
	case FormatJSON:
		return FormatJSON, nil
	}
	return "", fmt.Errorf("invalid output format %q: want table or json", s)
}

// Renderer writes to one stream with the styling that stream allows.
type Renderer struct {
	w      io.Writer
	tty    bool
	lg     *lipgloss.Renderer
	styled bool
	// width is the terminal's width in cells (0: no limit); tables on a terminal fit in it.
	width int
	// wide keeps every column of a table however narrow the terminal (-o wide).
	wide bool
	// midLine is set when Printf ended without a newline: the rest of that line is not wrapped.
	midLine bool
}

// New returns a renderer for io.Out.
func New(io *iostreams.IOStreams) *Renderer {
	lg := lipgloss.NewRenderer(io.Out)
	if io.ColorEnabled() {
		lg.SetColorProfile(termenv.ANSI256)
	} else {
		lg.SetColorProfile(termenv.Ascii)
	}
	r := &Renderer{w: io.Out, tty: io.IsStdoutTTY(), lg: lg, styled: io.ColorEnabled(), wide: io.Wide()}
	if r.tty {
		r.width = io.TerminalWidth()
	}
	return r
}

// Width is the number of cells a line may take on the terminal, 0 when there is no limit
// (piped output is never wrapped).
func (r *Renderer) Width() int {
	return r.width
}

// Writer is the stream the renderer writes to.
func (r *Renderer) Writer() io.Writer { return r.w }

// Printf writes formatted text, wrapped on a terminal as write does.
func (r *Renderer) Printf(format string, a ...any) { r.write(fmt.Sprintf(format, a...)) }

// Println writes a line, wrapped on a terminal as write does.
func (r *Renderer) Println(a ...any) { r.write(fmt.Sprintln(a...)) }

// write writes s. On a terminal, each whole line wider than the terminal is wrapped at spaces,
// its continuation lines under its indentation, a word never cut: hints, findings and plans of
// every command fit at 80 columns as doctor's do (doctor hangs its own under their column with
// Hang, and a line that fits is written as it is). A line begun without its newline (a prompt)
// is written as it is, and so is everything when piped (width 0), for grep and scripts.
func (r *Renderer) write(s string) {
	if r.width <= 0 {
		io.WriteString(r.w, s)
		return
	}
	var b strings.Builder
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(s)
			r.midLine = true
			break
		}
		line := s[:i]
		if !r.midLine {
			line = wrapWords(line, r.width, false)
		}
		b.WriteString(line)
		b.WriteByte('\n')
		r.midLine = false
		s = s[i+1:]
	}
	io.WriteString(r.w, b.String())
}

func (r *Renderer) style(fg string, bold bool, s string) string {
	if !r.styled {
		return s
	}
	st := r.lg.NewStyle().Bold(bold)
	if fg != "" {
		st = st.Foreground(lipgloss.Color(fg))
	}
	return st.Render(s)
}

// Bold emphasises s on a colour terminal.
func (r *Renderer) Bold(s string) string { return r.style("", true, s) }

// Bad marks s as an error.
func (r *Renderer) Bad(s string) string { return r.style("9", true, s) }

// Warn marks s as a warning.
func (r *Renderer) Warn(s string) string { return r.style("11", false, s) }

// Good marks s as healthy.
func (r *Renderer) Good(s string) string { return r.style("10", false, s) }

// Faint de-emphasises s.
func (r *Renderer) Faint(s string) string { return r.style("8", false, s) }

// FaintLines prints each line faint, one after the other: notes under a command's header.
func (r *Renderer) FaintLines(lines []string) {
	for _, l := range lines {
		r.Println(r.Faint(l))
	}
}

// Table is a titled grid of cells.
type Table struct {
	Title   string
	Headers []string
	Rows    [][]string
	// Drop is, per column, the order in which columns give way on a terminal too narrow for the
	// table (kubectl's narrow default): 1 goes first, then 2, and so on; 0 (or no entry) never.
	// A table with Drop never cuts a word of its cells (a status, an offset): it drops columns
	// instead, says which under the table, and -o wide (FormatWide) keeps them all.
	Drop []int
}

// Table writes t: with a rounded border on a terminal, its cells wrapped at spaces so that the
// box fits the terminal's width, and as space-aligned columns when piped so that the text is
// stable for scripts and golden tests. Headers are upper case in both, and never cut.
func (r *Renderer) Table(t Table) {
	if t.Title != "" {
		fmt.Fprintln(r.w, r.Bold(t.Title))
	}
	if r.tty {
		var hidden []string
		width := r.width
		switch {
		case len(t.Drop) > 0 && r.wide:
			width = 0 // every column at its width: the terminal folds what is wider, as kubectl's -o wide
		case len(t.Drop) > 0 && width > 0:
			t, hidden = dropColumns(t, width)
		}
		headers, rows := fitTable(upper(t.Headers), t.Rows, width, len(t.Drop) > 0)
		header := r.lg.NewStyle().Bold(true).Padding(0, 1)
		cell := r.lg.NewStyle().Padding(0, 1)
		if r.styled {
			header = header.Foreground(lipgloss.Color("12"))
		}
		tb := table.New().Border(lipgloss.RoundedBorder()).
			BorderStyle(r.lg.NewStyle().Foreground(lipgloss.Color("8"))).
			Headers(headers...).Rows(rows...).
			StyleFunc(func(row, _ int) lipgloss.Style {
				if row == table.HeaderRow {
					return header
				}
				return cell
			})
		fmt.Fprintln(r.w, tb.Render())
		if len(hidden) > 0 {
			fmt.Fprintln(r.w, r.Faint(Wrap(fmt.Sprintf("%s hidden to fit %d columns; -o wide shows them", strings.Join(hidden, ", "), r.width), r.width)))
		}
		return
	}
	writePlain(r.w, t.Headers, t.Rows)
}

// writePlain aligns columns with two spaces, like kubectl: readable, and trivial to cut or awk.
func writePlain(w io.Writer, headers []string, rows [][]string) {
	n := len(headers)
	for _, row := range rows {
		n = max(n, len(row))
	}
	width := make([]int, n)
	measure := func(row []string) {
		for i, c := range row {
			width[i] = max(width[i], lipgloss.Width(c))
		}
	}
	up := upper(headers)
	measure(up)
	for _, row := range rows {
		measure(row)
	}
	line := func(row []string) {
		var b strings.Builder
		for i, c := range row {
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-lipgloss.Width(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if len(headers) > 0 {
		line(up)
	}
	for _, row := range rows {
		line(row)
	}
}

func upper(headers []string) []string {
	out := make([]string, len(headers))
	for i, h := range headers {
		out[i] = strings.ToUpper(h)
	}
	return out
}

// KV writes aligned "key: value" lines, for summaries.
func (r *Renderer) KV(pairs [][2]string) {
	w := 0
	for _, p := range pairs {
		w = max(w, len(p[0]))
	}
	for _, p := range pairs {
		v := p[1]
		if r.width > 0 {
			// Continuation lines hang under the value; a word is never cut here, the terminal
			// folds one that is wider than the line.
			pad := w + 3
			v = strings.ReplaceAll(wrapWords(v, r.width-pad, false), "\n", "\n"+strings.Repeat(" ", pad))
		}
		fmt.Fprintf(r.w, "%s%s  %s\n", r.Faint(p[0]+":"), strings.Repeat(" ", w-len(p[0])), v)
	}
}

// JSON writes v as indented JSON without HTML escaping, so offsets and paths read as they are.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Hang is text after a lead of leadWidth cells (an indent, a label), wrapped at the terminal's
// width with its continuation lines under the text's first column; words are never cut. Piped
// (width 0) the text is as it is, one line, for grep and scripts.
func (r *Renderer) Hang(leadWidth int, text string) string {
	if r.width <= 0 || r.width-leadWidth < 20 {
		return text
	}
	return strings.ReplaceAll(wrapWords(text, r.width-leadWidth, false), "\n", "\n"+strings.Repeat(" ", leadWidth))
}
