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
	"github.com/ckpt-dev/ckpt/internal/logformat"
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

// --max-file-bytes raises (or lowers) the cap on a log file read whole for one run, as
// CKPT_MAX_FILE_BYTES does: a metadata file over it is refused naming the file.
func TestMaxFileBytesFlag(t *testing.T) {
	defer func(n int64, m int) { logformat.MaxFileBytes, logformat.MaxSources = n, m }(logformat.MaxFileBytes, logformat.MaxSources)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "offsets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata"), []byte(`{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		ios, _, out, errOut := iostreams.Test()
		env := &cli.Env{IO: ios, Version: "test", Now: time.Now, Getenv: func(string) string { return "" }}
		code := Execute(context.Background(), env, args)
		return code, out.String() + errOut.String()
	}
	const refused = "metadata: expected a file of at most 10 bytes (--max-file-bytes or CKPT_MAX_FILE_BYTES raises the limit)"
	if _, out := run("inspect", dir, "-o", "json", "--max-file-bytes", "10"); !strings.Contains(out, refused) {
		t.Errorf("--max-file-bytes 10: no %q in\n%s", refused, out)
	}
	if code, out := run("inspect", dir, "-o", "json", "--max-file-bytes", "1000"); code != 0 || strings.Contains(out, "at most") {
		t.Errorf("--max-file-bytes 1000: exit %d\n%s", code, out)
	}
	if code, out := run("inspect", dir, "--max-sources", "0"); code != exitcode.Usage {
		t.Errorf("--max-sources 0: exit %d, want %d\n%s", code, exitcode.Usage, out)
	}
}
