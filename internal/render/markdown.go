package render

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Markdown writes a page of Markdown (the subset ckpt's own docs use: ATX headings, paragraphs,
// `*`/`-`/`1.` lists, fenced code blocks, **bold** and `code` spans). On a terminal it is rendered:
// headings bold (underlined with rules without colour), code spans coloured, list items indented
// under a bullet, paragraphs wrapped at spaces to the terminal's width (80 when unknown), code
// blocks indented and never wrapped. Piped, the Markdown is written as it is, for files and tools.
func (r *Renderer) Markdown(src string) {
	if !r.tty {
		fmt.Fprint(r.w, src)
		return
	}
	width := r.width
	if width <= 0 {
		width = 80
	}
	md := mdRenderer{r: r, width: min(width, 100)}
	md.render(src)
	fmt.Fprint(r.w, strings.TrimRight(md.out.String(), "\n")+"\n")
}

type mdRenderer struct {
	r     *Renderer
	width int
	out   strings.Builder
	para  []string // lines of the paragraph or list item being gathered
	// indent of the current paragraph's lines, and of its first line (a bullet).
	first, rest string
}

func (m *mdRenderer) render(src string) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			m.flush()
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				m.out.WriteString("    " + m.r.Faint(lines[i]) + "\n")
			}
		case trimmed == "":
			m.flush()
			m.blank()
		case strings.HasPrefix(trimmed, "#"):
			m.flush()
			level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
			m.heading(level, strings.TrimSpace(trimmed[level:]))
		case bullet(line) != "":
			m.flush()
			b := bullet(line)
			lead := len(line) - len(strings.TrimLeft(line, " "))
			pad := strings.Repeat(" ", 2+lead)
			marker := strings.TrimSpace(b)
			if marker == "*" || marker == "-" {
				marker = "•"
			}
			m.first = pad + marker + " "
			m.rest = pad + strings.Repeat(" ", len([]rune(marker))+1)
			m.para = append(m.para, strings.TrimSpace(line[len(b):]))
		default:
			if len(m.para) == 0 {
				m.first, m.rest = "", ""
			}
			m.para = append(m.para, trimmed)
		}
	}
	m.flush()
}

// blank writes one empty line, never two in a row.
func (m *mdRenderer) blank() {
	s := m.out.String()
	if s == "" || strings.HasSuffix(s, "\n\n") {
		return
	}
	m.out.WriteString("\n")
}

// bullet returns the list marker at the start of line with its spaces ("  * ", "1. "), or "".
func bullet(line string) string {
	t := strings.TrimLeft(line, " ")
	lead := line[:len(line)-len(t)]
	if strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "- ") {
		return lead + t[:2]
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && t[i] == '.' && t[i+1] == ' ' {
		return lead + t[:i+2]
	}
	return ""
}

func (m *mdRenderer) heading(level int, text string) {
	words := m.words(text)
	for i, w := range words {
		words[i] = m.r.style("12", true, w)
		if level > 1 {
			words[i] = m.r.Bold(w)
		}
	}
	line := strings.Join(words, " ")
	m.out.WriteString(line + "\n")
	if !m.r.styled && level <= 2 {
		rule := "═"
		if level == 2 {
			rule = "─"
		}
		m.out.WriteString(strings.Repeat(rule, min(len([]rune(text)), m.width)) + "\n")
	}
}

// flush wraps the gathered paragraph or list item.
func (m *mdRenderer) flush() {
	if len(m.para) == 0 {
		return
	}
	words := m.words(strings.Join(m.para, " "))
	m.para = nil
	avail := m.width - len([]rune(m.rest))
	var line []string
	lineW := 0
	prefix := m.first
	emit := func() {
		m.out.WriteString(prefix + strings.Join(line, " ") + "\n")
		prefix = m.rest
		line, lineW = nil, 0
	}
	for _, w := range words {
		ww := visibleWidth(w)
		if len(line) > 0 && lineW+1+ww > avail {
			emit()
		}
		if len(line) > 0 {
			lineW++
		}
		line = append(line, w)
		lineW += ww
	}
	if len(line) > 0 {
		emit()
	}
}

// words splits text at spaces and styles each word on its own (so that a line break never
// leaves a style open): **bold** and `code` spans may run over several words.
func (m *mdRenderer) words(text string) []string {
	var out []string
	bold, code := false, false
	for _, raw := range strings.Fields(text) {
		var b strings.Builder
		seg := func(s string) {
			if s == "" {
				return
			}
			switch {
			case code && m.r.styled:
				b.WriteString(m.r.style("6", false, s))
			case code:
				b.WriteString(s)
			case bold:
				b.WriteString(m.r.Bold(s))
			default:
				b.WriteString(s)
			}
		}
		rest := raw
		for rest != "" {
			i := strings.IndexByte(rest, '`')
			j := -1
			if !code {
				j = strings.Index(rest, "**")
			}
			switch {
			case i < 0 && j < 0:
				seg(rest)
				rest = ""
			case j < 0 || (i >= 0 && i < j):
				seg(rest[:i])
				if !m.r.styled {
					b.WriteByte('`')
				}
				code = !code
				rest = rest[i+1:]
			default:
				seg(rest[:j])
				bold = !bold
				rest = rest[j+2:]
			}
		}
		out = append(out, b.String())
	}
	return out
}

func visibleWidth(s string) int { return lipgloss.Width(s) }
