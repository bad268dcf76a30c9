package main

import (
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// mkkafkainit PATH JSON writes a Kafka initial offsets file (sources/<i>/0) as Spark writes it:
// a NUL byte, "v1\n", then JSON with no trailing newline. txtar cannot hold the NUL byte.
func init() {
	scriptCmds["mkkafkainit"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: mkkafkainit PATH JSON")
		}
		p := ts.MkAbs(args[0])
		ts.Check(os.MkdirAll(filepath.Dir(p), 0o755))
		ts.Check(os.WriteFile(p, append([]byte("\x00v1\n"), args[1]...), 0o644))
	}
}
