package main

import (
	"context"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// mkscenario NAME DIR materialises a scenario of the shared registry (internal/scenario) into
// DIR, so scripts test the CLI on exactly the checkpoints the package goldens cover.
func init() {
	scriptCmds["mkscenario"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: mkscenario NAME DIR")
		}
		s, ok := scenario.Get(args[0])
		if !ok {
			ts.Fatalf("mkscenario: no scenario %q", args[0])
		}
		st, err := storage.NewLocal(ts.MkAbs(args[1]))
		ts.Check(err)
		ts.Check(s.WriteTo(context.Background(), st))
	}
}
