package main

import (
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

// copydir SRC DST copies a directory tree (a Spark-written fixture with binary state files,
// which a txtar cannot hold) into the script's work directory.
func init() {
	scriptCmds["copydir"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: copydir SRC DST")
		}
		ts.Check(os.CopyFS(ts.MkAbs(args[1]), os.DirFS(ts.MkAbs(args[0]))))
	}
}
