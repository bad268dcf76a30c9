// Package iostreams gives commands their input and output streams and answers the questions that
// decide how to print: is stdout a terminal, may we use colour, may we prompt.
//
// Output is styled only on a terminal; piped output is plain so that grep, awk and golden tests see
// stable text. NO_COLOR (https://no-color.org) and TERM=dumb turn colour off; CLICOLOR_FORCE turns
// it on even when piped.
package iostreams

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	colorEnabled                   bool
	// width pins TerminalWidth when > 0; getenv reads COLUMNS (nil: not consulted).
	width  int
	getenv func(string) string
	// outFile is the process's stdout, kept for its size when Out is wrapped (a pager, progress).
	outFile *os.File
	// lookup tells an empty variable from an unset one (PAGER=); pager is the running pager.
	lookup func(string) (string, bool)
	pager  *pager
	// status is the live status line Guard erases before a write (SetStatus).
	status atomic.Pointer[status]
	// wide: tables keep every column (-o wide).
	wide bool
}

// System returns the process's streams with terminal and colour detection from the environment.
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, getenv: os.Getenv, outFile: os.Stdout, lookup: os.LookupEnv}
	s.stdinTTY = isTerminal(os.Stdin)
	s.stdoutTTY = isTerminal(os.Stdout)
	s.stderrTTY = isTerminal(os.Stderr)
	s.colorEnabled = colorFromEnv(s.stdoutTTY, os.Getenv)
	return s
}

// Test returns streams backed by buffers: not a terminal, no colour.
func Test() (s *IOStreams, in *bytes.Buffer, out *bytes.Buffer, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// colorFromEnv applies the conventions in order of strength: NO_COLOR beats everything, then
// CLICOLOR_FORCE, then TERM=dumb, then whether stdout is a terminal.
func colorFromEnv(tty bool, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	if v := getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		return true
	}
	if getenv("TERM") == "dumb" {
		return false
	}
	return tty
}

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal (live status lines go there).
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdoutTTY overrides terminal detection (tests).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// SetStdinTTY overrides terminal detection of stdin (tests of interactive prompts).
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = v }

// SetStderrTTY overrides terminal detection of stderr (tests).
func (s *IOStreams) SetStderrTTY(v bool) { s.stderrTTY = v }

// SetColorEnabled overrides colour detection (tests).
func (s *IOStreams) SetColorEnabled(v bool) { s.colorEnabled = v }

// ColorEnabled reports whether output may carry ANSI colour.
func (s *IOStreams) ColorEnabled() bool { return s.colorEnabled }

// CanPrompt reports whether a person can answer a question: both stdin and stdout are terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stdoutTTY }

// ErrNoPrompt is returned by Confirm when there is nobody to ask.
var ErrNoPrompt = errors.New("cannot ask for confirmation: stdin is not a terminal")

// Confirm asks a yes/no question on stdout and reads the answer from stdin. Only "y" or "yes"
// (any case) count as yes, so a stray newline never confirms a destructive action.
func (s *IOStreams) Confirm(question string) (bool, error) {
	if !s.CanPrompt() {
		return false, ErrNoPrompt
	}
	fmt.Fprintf(s.Out, "%s [y/N] ", question)
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
