//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// sigterm [-INT] [-when REGEXP] [-whenfile PATH] [-code N] ARGS... starts ckpt ARGS (in $WORK)
// and sends it SIGTERM (-INT: SIGINT) half a second later, or once its stdout or stderr matches
// REGEXP, or once PATH exists (what says it is inside the long loop under test); with -when,
// -whenfile or -code, ckpt must still be running then. It fails unless ckpt has exited 10
// seconds after the signal (a generous bound for a loaded test machine: the latency itself is
// logged, and docs/benchmarks.md records it), and with -code unless it exited N. What ckpt
// printed is left in stdout and stderr for the next assertions. CKPT_SIGNAL_LOG, when set, is a
// file that gets one line per signal: the command and its latency. mkfifo PATH makes a named pipe.
func init() {
	scriptCmds["mkfifo"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mkfifo PATH")
		}
		ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
	}
	scriptCmds["sigterm"] = func(ts *testscript.TestScript, neg bool, args []string) {
		const usage = "usage: sigterm [-INT] [-when REGEXP] [-whenfile PATH] [-code N] ARGS..."
		sig, sigName := syscall.SIGTERM, "SIGTERM"
		var when *regexp.Regexp
		whenFile := ""
		code := -1
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			switch {
			case args[0] == "-INT":
				sig, sigName = syscall.SIGINT, "SIGINT"
				args = args[1:]
			case args[0] == "-when" && len(args) > 1:
				when = regexp.MustCompile(args[1])
				args = args[2:]
			case args[0] == "-whenfile" && len(args) > 1:
				whenFile = ts.MkAbs(args[1])
				args = args[2:]
			case args[0] == "-code" && len(args) > 1:
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				code = n
				args = args[2:]
			default:
				ts.Fatalf(usage)
			}
		}
		if neg || len(args) == 0 {
			ts.Fatalf(usage)
		}
		bin := ""
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if p, err := exec.LookPath(filepath.Join(dir, "ckpt")); err == nil {
				bin = p
				break
			}
		}
		if bin == "" {
			ts.Fatalf("no ckpt in PATH")
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = ts.Getenv("WORK")
		// The script's environment, as exec gives it (testscript lists it to no custom command).
		cmd.Env = cmd.Environ()
		for _, k := range scriptEnv {
			cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
		}
		var stdout, stderr watched
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		ts.Check(cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		wait := time.After(500 * time.Millisecond)
		if when != nil || whenFile != "" {
			wait = nil
		}
		poll := time.NewTicker(5 * time.Millisecond)
		defer poll.Stop()
		deadline := time.After(2 * time.Minute)
	waiting:
		for {
			select {
			case err := <-done:
				if when == nil && whenFile == "" && code < 0 {
					// A plain `sigterm ARGS` asks only that ckpt ends: a flag file it refuses
					// at once ends it before any signal.
					ts.Logf("ckpt %s exited (%v) before the signal", strings.Join(args, " "), err)
					return
				}
				ts.Fatalf("ckpt %s exited (%v) before the signal:\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
			case <-wait:
				break waiting
			case <-poll.C:
				if when != nil && (when.MatchString(stdout.String()) || when.MatchString(stderr.String())) {
					break waiting
				}
				if _, err := os.Stat(whenFile); whenFile != "" && err == nil {
					break waiting
				}
			case <-deadline:
				_ = cmd.Process.Kill()
				<-done
				ts.Fatalf("ckpt %s never printed %v nor wrote %q", strings.Join(args, " "), when, whenFile)
			}
		}
		sent := time.Now()
		_ = cmd.Process.Signal(sig)
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			ts.Fatalf("ckpt %s still running 10 s after %s", strings.Join(args, " "), sigName)
		}
		latency := time.Since(sent)
		got := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			ts.Fatalf("sigterm: %v", err)
		}
		ts.Logf("ckpt %s: exit %d %s after %s", strings.Join(args, " "), got, latency.Round(time.Millisecond), sigName)
		if log := os.Getenv("CKPT_SIGNAL_LOG"); log != "" {
			f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			ts.Check(err)
			fmt.Fprintf(f, "%s\t%s\t%d\tckpt %s\n", latency.Round(time.Millisecond), sigName, got, strings.Join(args, " "))
			ts.Check(f.Close())
		}
		_, _ = ts.Stdout().Write(stdout.Bytes())
		_, _ = ts.Stderr().Write(stderr.Bytes())
		if code >= 0 && got != code {
			ts.Fatalf("ckpt %s exited %d after %s, want %d:\n%s", strings.Join(args, " "), got, sigName, code, stderr.String())
		}
	}
}

// scriptEnv are the variables a script may set for the ckpt that sigterm starts.
var scriptEnv = []string{"PATH", "HOME", "TMPDIR", "NO_COLOR", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_REGION", "AWS_EC2_METADATA_DISABLED", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	"CKPT_MAX_FILE_BYTES", "CKPT_MAX_SOURCES", "CKPT_STORE_TIMEOUT", "CKPT_S3_TIMEOUT", "CKPT_CONFIG"}

// watched is a buffer the process writes while the test reads it.
type watched struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *watched) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}
