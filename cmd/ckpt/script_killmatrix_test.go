package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// The kill matrix of the journaled commands (issue 26): the command is killed with SIGKILL at
// every point of its run in turn (CKPT_TEST_KILL_AT=N, the N-th point of the engine's hook:
// lock taken, journal written, backups, each change, applied, verified), on a fresh copy each
// time; then `ckpt repair resume` (or, without a journal, the same command again) must end
// with the files of an uninterrupted run, and `ckpt repair undo` with the original files.
func init() {
	// killmatrix [-step N] CK SINK -- ARGS... runs `ckpt ARGS` (where the words CK and SINK
	// stand for copies of those directories; SINK may be -) killed at each point (every N-th
	// point, from the first, with -step: for a change of many files).
	scriptCmds["killmatrix"] = func(ts *testscript.TestScript, neg bool, args []string) {
		step, limit := 1, 80
		if len(args) > 1 && args[0] == "-step" {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 1 {
				ts.Fatalf("killmatrix: -step %q", args[1])
			}
			step, limit, args = n, 80*n, args[2:]
		}
		if neg || len(args) < 4 || args[2] != "--" {
			ts.Fatalf("usage: killmatrix CK SINK -- ARGS...")
		}
		ck, sink, cmdArgs := args[0], args[1], args[3:]
		dirs := []string{ck}
		if sink != "-" {
			dirs = append(dirs, sink)
		}
		run := func(dst string, extra ...string) (string, error) {
			var argv []string
			for _, a := range cmdArgs {
				switch a {
				case "CK":
					a = filepath.Join(dst, ck)
				case "SINK":
					a = filepath.Join(dst, sink)
				}
				argv = append(argv, a)
			}
			return "", ts.Exec("ckpt", append(argv, extra...)...)
		}
		prints := func(dst string) string {
			var out []string
			for _, d := range dirs {
				out = append(out, fingerprintDir(ts, filepath.Join(dst, d)))
			}
			return strings.Join(out, "\n")
		}
		base := ts.MkAbs(".kill")
		ts.Check(os.RemoveAll(base))
		copyAll := func(name string) string {
			dst := filepath.Join(base, name)
			for _, d := range dirs {
				ts.Check(os.CopyFS(filepath.Join(dst, d), os.DirFS(ts.MkAbs(d))))
			}
			return dst
		}
		orig := prints(ts.MkAbs("."))
		ref := copyAll("ref")
		if _, err := run(ref); err != nil {
			ts.Fatalf("the uninterrupted run failed: %v", err)
		}
		want := prints(ref)
		points := 0
		for k := 1; k <= limit; k += step {
			finished := false
			for _, recover := range []string{"resume", "undo"} {
				dst := copyAll(fmt.Sprintf("%d-%s", k, recover))
				ts.Setenv("CKPT_TEST_KILL_AT", strconv.Itoa(k))
				_, err := run(dst)
				ts.Setenv("CKPT_TEST_KILL_AT", "")
				if err == nil {
					finished = true
					if got := prints(dst); got != want {
						ts.Fatalf("kill point %d never reached, but the run differs from the uninterrupted one", k)
					}
					continue
				}
				if !strings.Contains(err.Error(), "killed") {
					ts.Fatalf("kill point %d: the run failed without being killed: %v", k, err)
				}
				journal := journalDir(filepath.Join(dst, ck))
				switch {
				case journal == "" && recover == "resume":
					// Killed before the journal: nothing changed, and the lock it left is stale.
					if _, err := run(dst); err != nil {
						ts.Fatalf("kill point %d: the run again after a kill before the journal: %v", k, err)
					}
				case journal != "":
					if err := ts.Exec("ckpt", "repair", recover, journal, "--yes", "--active-window", "0"); err != nil {
						ts.Fatalf("kill point %d: repair %s: %v", k, recover, err)
					}
				}
				expect := want
				if recover == "undo" {
					expect = orig
				}
				if got := prints(dst); got != expect {
					ts.Fatalf("kill point %d, then %s: the files differ:\n%s\nwant:\n%s", k, recover, got, expect)
				}
				// A journal removes the files staged for it once done or undone.
				if journal != "" {
					_ = filepath.WalkDir(filepath.Join(dst, ck, "_ckpt", "staging"), func(p string, d fs.DirEntry, err error) error {
						if err == nil && !d.IsDir() {
							ts.Fatalf("kill point %d, then %s: staged file %s left", k, recover, p)
						}
						return nil
					})
				}
				// (Killed before the journal and not run again, the stale lock stays until the
				// next command takes it over, as the resume branch shows.)
				if _, err := os.Stat(filepath.Join(dst, ck, "_ckpt", "lock")); err == nil && journal != "" {
					ts.Fatalf("kill point %d, then %s: a lock is left", k, recover)
				}
			}
			if finished {
				break
			}
			points = k
		}
		if points == 0 || points > limit-step {
			ts.Fatalf("killmatrix: %d kill points", points)
		}
		ts.Logf("killmatrix: killed at each of %d points, resumed and undone", points)
	}
}

// journalDir is the one repair directory under ck/_ckpt/repairs with a journal snapshot, "" when
// there is none.
func journalDir(ck string) string {
	des, _ := os.ReadDir(filepath.Join(ck, "_ckpt", "repairs"))
	for _, d := range des {
		if js, _ := os.ReadDir(filepath.Join(ck, "_ckpt", "repairs", d.Name(), "journal")); len(js) > 0 {
			return filepath.Join(ck, "_ckpt", "repairs", d.Name())
		}
	}
	return ""
}

// fingerprintDir is the fingerprint command's text for dir (every file but _ckpt/, with its
// SHA-256).
func fingerprintDir(ts *testscript.TestScript, root string) string {
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
	return strings.Join(lines, "\n")
}
