package main

import (
	"errors"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// exitcode N prog args... runs prog and requires exit status N, keeping stdout and stderr for the
// next assertions. testscript's own `! exec` only knows "non-zero", and ckpt's codes are a contract.
func init() {
	scriptCmds["exitcode"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: exitcode N prog [args...]")
		}
		want, err := strconv.Atoi(args[0])
		if err != nil {
			ts.Fatalf("exitcode: %v", err)
		}
		got := 0
		if err := ts.Exec(args[1], args[2:]...); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				ts.Fatalf("exitcode: %v", err)
			}
			got = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				got = 128 + int(ws.Signal()) // as a shell reports it: a --fail-at drill's SIGKILL is 137
			}
		}
		if got != want {
			ts.Fatalf("%s exited %d, want %d", args[1], got, want)
		}
	}
}
