package root

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
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

// A signal's cancellation is exit 130 with a message naming the signal, never exit 1 and
// "context canceled"; a command that finishes anyway (version) keeps its 0.
func TestSignalStops(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "offsets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata"), []byte(`{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect", dir}, exitcode.Interrupted, "ckpt: interrupted by SIGINT: "},
		{[]string{"doctor", dir}, exitcode.Interrupted, "ckpt: interrupted by SIGINT: "},
		{[]string{"version"}, 0, ""},
	} {
		ios, _, _, errOut := iostreams.Test()
		env := &cli.Env{IO: ios, Version: "test", Now: time.Now, Getenv: func(string) string { return "" }}
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&exitcode.Signal{Name: "SIGINT"})
		code := Execute(ctx, env, c.args)
		got := errOut.String()
		if code != c.code || !strings.HasPrefix(got, c.want) || strings.Contains(got, "context canceled") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, got, c.code, c.want)
		}
	}
}
