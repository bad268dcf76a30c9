package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// A log line on stderr, or a trace line from a writer taken before the status line existed, starts
// on a clean line: the status line is erased first (it was not: "⠙ listing commits/: listed
// 36ckpt: journal: …").
func TestProgressErasedBeforeStderrWrites(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetStderrTTY(true)
	ios.SetGetenv(func(k string) string {
		if k == "CKPT_PROGRESS_DELAY" {
			return "0s"
		}
		return ""
	})
	trace := ios.Guard(ios.ErrOut) // as root takes it, before any command runs
	ctx, stop := Progress(context.Background(), ios, render.FormatTable)
	defer stop()
	progress.Stage(ctx, "listing commits/")
	progress.Add(ctx, progress.Listed, 36)
	if !strings.Contains(errOut.String(), "listing commits/") {
		t.Fatalf("no status line drawn: %q", errOut.String())
	}
	for _, w := range []struct {
		name string
		line string
		out  func(string)
	}{
		{"ErrOut", "ckpt: journal: /tmp/j", func(s string) { fmt.Fprintln(ios.ErrOut, s) }},
		{"trace", "ckpt: s3 GET", func(s string) { fmt.Fprintln(trace, s) }},
	} {
		progress.Stage(ctx, "listing offsets/ "+w.name) // draws again
		before := errOut.Len()
		w.out(w.line)
		got := errOut.String()[before:]
		if !strings.HasPrefix(got, "\r") || !strings.Contains(got, "\r"+w.line+"\n") {
			t.Errorf("%s: the status line was not erased before %q: %q", w.name, w.line, got)
		}
	}
}
