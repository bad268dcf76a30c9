package root

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

// A flag value holding a screen clear reaches stderr escaped (before: raw, in "open ...: no
// such file or directory").
func TestErrorsEscaped(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	env := &cli.Env{IO: ios, Version: "test", Now: time.Now, Getenv: func(string) string { return "" }}
	code := Execute(context.Background(), env, []string{"offsets", "reset", t.TempDir(), "--from-file", "\x1b[2J\x1b]0;t\x07nope"})
	got := errOut.String()
	if code == 0 || strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, `\x1b[2J\x1b]0;t\x07nope`) {
		t.Errorf("exit %d, stderr %q", code, got)
	}
}
