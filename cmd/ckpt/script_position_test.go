package main

import (
	"regexp"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands of the position tests (testdata/script/offsets*.txtar, rewind*.txtar,
// position*.txtar).
func init() {
	// setfromstderr VAR REGEXP sets $VAR to the first submatch of REGEXP in the last command's
	// stderr: the journal a killed run announced before it died.
	scriptCmds["setfromstderr"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: setfromstderr VAR REGEXP")
		}
		m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stderr"))
		if len(m) < 2 {
			ts.Fatalf("setfromstderr: no match for %s", args[1])
		}
		ts.Setenv(args[0], m[1])
	}
}
