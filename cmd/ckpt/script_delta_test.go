package main

import (
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// DELTA points scripts at the Delta fixtures real Spark and delta-spark wrote (testdata/delta);
// `deltacopy CASE` copies one into the script's work directory for commands that write.
func init() {
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "delta"))
	scriptSetup = append(scriptSetup, func(env *testscript.Env) error {
		if err != nil {
			return err
		}
		env.Setenv("DELTA", dir)
		return nil
	})
	scriptCmds["deltacopy"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: deltacopy CASE")
		}
		src := filepath.Join(dir, args[0])
		ts.Check(os.CopyFS(ts.MkAbs(args[0]), os.DirFS(src)))
	}
}
