package cli

import (
	"context"
	"time"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// Progress starts the status line of a long command on stderr, only when a person watches: stdout
// and stderr are terminals and the output is a table (never in a pipe, never with -o json). The
// work counts through the returned context (progress.Add). While it runs, a write to stdout or
// stderr (a result, a log line, the request trace: every writer from ios.Guard) first erases the
// line, so nothing starts in the middle of it. stop erases the line and restores stdout; call it
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
	out, errOut := ios.Out, ios.ErrOut
	// The line itself is drawn on the unguarded stderr: a guarded one would erase it at each draw.
	m := progress.New(errOut, o)
	ios.SetStatus(m)
	ios.Out, ios.ErrOut = ios.Guard(out), ios.Guard(errOut)
	return progress.With(ctx, m), func() {
		m.End()
		ios.SetStatus(nil)
		ios.Out, ios.ErrOut = out, errOut
	}
}
