package cli

import (
	"context"
	"io"
	"time"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// Progress starts the status line of a long command on stderr, only when a person watches: stdout
// and stderr are terminals and the output is a table (never in a pipe, never with -o json). The
// work counts through the returned context (progress.Add). While it runs, a write to stdout first
// erases the line, so results never mix with it. stop erases the line and restores stdout; call it
// when the command ends (defer). CKPT_PROGRESS_DELAY (a Go duration, default 250ms) is how long
// the work runs before the line appears; tests set it to 0s.
func Progress(ctx context.Context, ios *iostreams.IOStreams, output render.Format) (context.Context, func()) {
	if ctx == nil {
		ctx = context.Background()
	}
	if ios == nil || output == render.FormatJSON || !ios.IsStdoutTTY() || !ios.IsStderrTTY() || progress.From(ctx) != nil {
		return ctx, func() {}
	}
	o := progress.Options{}
	if d, err := time.ParseDuration(ios.Getenv("CKPT_PROGRESS_DELAY")); err == nil {
		o.Delay = d
		if d == 0 {
			o.Delay = -1 // at once
		}
	}
	m := progress.New(ios.ErrOut, o)
	out := ios.Out
	ios.Out = pausingWriter{m: m, w: out}
	return progress.With(ctx, m), func() {
		m.End()
		ios.Out = out
	}
}

// pausingWriter erases the status line before stdout writes on the same terminal.
type pausingWriter struct {
	m *progress.Meter
	w io.Writer
}

func (p pausingWriter) Write(b []byte) (int, error) {
	p.m.Pause()
	return p.w.Write(b)
}
