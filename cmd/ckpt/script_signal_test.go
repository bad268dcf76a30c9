//go:build unix

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// sigterm ARGS... starts ckpt ARGS (in $WORK), sends it SIGTERM after half a second and fails
// unless it has exited 10 seconds later: whatever it waits on, a signal stops it. mkfifo PATH
// makes a named pipe.
func init() {
	scriptCmds["mkfifo"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: mkfifo PATH")
		}
		ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
	}
	scriptCmds["sigterm"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: sigterm ARGS...")
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
		cmd.Env = append(cmd.Environ(), "PATH="+ts.Getenv("PATH"))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		ts.Check(cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			ts.Logf("ckpt exited (%v): %s", err, out.String())
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			ts.Fatalf("ckpt %s still running 10 s after SIGTERM", strings.Join(args, " "))
		}
	}
}
