package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands of `ckpt repair`'s tests (testdata/script/repair*.txtar).
func init() {
	// backdate DIR sets every file below DIR to an hour ago, so the checkpoint a script just built
	// does not look like a live query to repair's --active-window check.
	scriptCmds["backdate"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: backdate DIR")
		}
		old := time.Now().Add(-time.Hour)
		ts.Check(filepath.WalkDir(ts.MkAbs(args[0]), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return os.Chtimes(p, old, old)
		}))
	}
	// fingerprint DIR FILE writes one line per file below DIR (except ckpt's _ckpt/): its path and
	// the SHA-256 of its bytes, sorted. Comparing two fingerprints with cmp proves byte-identity.
	scriptCmds["fingerprint"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: fingerprint DIR FILE")
		}
		root := ts.MkAbs(args[0])
		var lines []string
		ts.Check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "_ckpt" {
					return filepath.SkipDir
				}
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%x  %s", sha256.Sum256(b), rel))
			return nil
		}))
		sort.Strings(lines)
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	// repairdir CHECKPOINT VAR sets $VAR to the one repair directory under
	// CHECKPOINT/_ckpt/repairs (the journal a repair printed), since scripts have no globs.
	scriptCmds["repairdir"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: repairdir CHECKPOINT VAR")
		}
		des, err := os.ReadDir(ts.MkAbs(filepath.Join(args[0], "_ckpt", "repairs")))
		ts.Check(err)
		if len(des) != 1 {
			ts.Fatalf("repairdir: %d repair directories, want 1", len(des))
		}
		ts.Setenv(args[1], filepath.ToSlash(filepath.Join(args[0], "_ckpt", "repairs", des[0].Name())))
	}
	// ptyrun ANSWER PROG ARGS... runs PROG on a pseudo-terminal (stdin and stdout are a TTY), types
	// ANSWER and a newline once PROG asks "[y/N]", and leaves what PROG printed in stdout. It tests
	// the interactive confirmation the way a person meets it.
	scriptCmds["ptyrun"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: ptyrun ANSWER PROG [ARGS...]")
		}
		out, err := runPTY(ts, args[0], args[1], args[2:]...)
		ts.Logf("pty output:\n%s", out)
		if err != nil && !neg {
			ts.Fatalf("ptyrun: %v", err)
		}
		if err == nil && neg {
			ts.Fatalf("ptyrun: %s succeeded unexpectedly", args[1])
		}
		// Make the output available to stdout assertions: the pty mixes stdout and stderr.
		ts.Check(os.WriteFile(ts.MkAbs("pty.out"), out, 0o644))
	}
}

func runPTY(ts *testscript.TestScript, answer, prog string, args ...string) ([]byte, error) {
	path := ""
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if c := filepath.Join(dir, prog); fileExists(c) {
			path = c
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("%s not found in the script's PATH", prog)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = ts.Getenv("WORK")
	for _, k := range []string{"PATH", "HOME", "NO_COLOR", "WORK", "TMPDIR"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	cmd.Env = append(cmd.Env, "TERM=dumb")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		answered := false
		for {
			n, rerr := f.Read(buf)
			out.Write(buf[:n])
			if !answered && bytes.Contains(out.Bytes(), []byte("[y/N]")) {
				answered = true
				if _, err := io.WriteString(f, answer+"\n"); err != nil {
					done <- err
					return
				}
			}
			if rerr != nil {
				done <- nil // EIO once the child exits and the pty closes
				return
			}
		}
	}()
	werr := cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	return bytes.ReplaceAll(out.Bytes(), []byte("\r\n"), []byte("\n")), werr
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
