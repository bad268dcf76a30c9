package iostreams

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// DefaultPager pages long output as git and gh do: less quits when the text fits one screen (-F),
// keeps colours (-R) and leaves the text on the screen when it quits (-X).
const DefaultPager = "less -FRX"

// PagerCommand is the pager for long output on a terminal: CKPT_PAGER, else PAGER, else
// DefaultPager. An empty value (CKPT_PAGER= or PAGER=) or cat means no pager.
func (s *IOStreams) PagerCommand() string {
	cmd := DefaultPager
	for _, k := range []string{"CKPT_PAGER", "PAGER"} {
		if v, ok := s.lookupEnv(k); ok {
			cmd = v
			break
		}
	}
	cmd = strings.TrimSpace(cmd)
	if cmd == "cat" || strings.HasSuffix(cmd, "/cat") {
		return ""
	}
	return cmd
}

func (s *IOStreams) lookupEnv(k string) (string, bool) {
	if s.lookup != nil {
		return s.lookup(k)
	}
	if s.getenv != nil {
		if v := s.getenv(k); v != "" {
			return v, true
		}
	}
	return "", false
}

// StartPager sends stdout through the pager until StopPager, when stdout is a terminal and a
// pager is configured (PagerCommand). A pager that cannot start leaves stdout as it was: paging
// is a comfort, never a reason to fail. The pager runs through the shell, so PAGER may carry
// arguments.
func (s *IOStreams) StartPager() error {
	cmdline := s.PagerCommand()
	if cmdline == "" || !s.stdoutTTY || s.pager != nil {
		return nil
	}
	out := s.outFile
	if f, ok := s.Out.(*os.File); ok {
		out = f
	}
	if out == nil {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Stdout = out
	cmd.Stderr = s.ErrOut
	cmd.Env = os.Environ()
	if _, ok := s.lookupEnv("LESS"); !ok {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	if _, ok := s.lookupEnv("LV"); !ok {
		cmd.Env = append(cmd.Env, "LV=-c")
	}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil
	}
	if err := cmd.Start(); err != nil {
		return nil
	}
	s.pager = &pager{cmd: cmd, in: w, prev: s.Out}
	s.Out = &pagerWriter{w: w}
	return nil
}

// StopPager closes the pager's input and waits for the person to quit it.
func (s *IOStreams) StopPager() {
	p := s.pager
	if p == nil {
		return
	}
	s.pager = nil
	s.Out = p.prev
	_ = p.in.Close()
	_ = p.cmd.Wait()
}

type pager struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	prev io.Writer
}

// pagerWriter turns the broken pipe of a pager the person quit early into a quiet end of output.
type pagerWriter struct{ w io.Writer }

func (p *pagerWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil && (errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)) {
		return len(b), nil
	}
	return n, err
}
