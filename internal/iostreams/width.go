package iostreams

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// TerminalWidth is the number of columns output may use: COLUMNS when it is set to a positive
// number (as shells export it, and as tests pin it), else the width of the terminal on stdout,
// else 0, meaning no limit (piped output is never wrapped, so scripts see whole lines).
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if s.getenv != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(s.getenv("COLUMNS"))); err == nil && n > 0 {
			return n
		}
	}
	if !s.stdoutTTY {
		return 0
	}
	f, ok := s.Out.(*os.File)
	if !ok {
		f = s.outFile
	}
	if f != nil {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// SetTerminalWidth pins TerminalWidth (tests); 0 goes back to detection.
func (s *IOStreams) SetTerminalWidth(w int) { s.width = w }

// Getenv reads the process environment of System streams ("" for Test streams and unset keys).
func (s *IOStreams) Getenv(key string) string {
	if s.getenv == nil {
		return ""
	}
	return s.getenv(key)
}

// SetGetenv replaces the environment Getenv and TerminalWidth read (tests).
func (s *IOStreams) SetGetenv(f func(string) string) {
	s.getenv = f
	s.lookup = func(k string) (string, bool) {
		v := f(k)
		return v, v != ""
	}
}

// SetWide asks for tables with every column, however narrow the terminal (-o wide).
func (s *IOStreams) SetWide(v bool) { s.wide = v }

// Wide reports whether tables keep every column (SetWide).
func (s *IOStreams) Wide() bool { return s.wide }
