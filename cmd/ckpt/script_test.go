package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ckpt-dev/ckpt/internal/cmd/root"
)

// scriptCmds are extra testscript commands (scenario builders, brokers…). Each feature registers
// its own from an init function in its own file, so that files do not collide.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}

// scriptSetup hooks run for every script; features add environment they need.
var scriptSetup []func(env *testscript.Env) error

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ckpt": func() { os.Exit(root.Main("test", "", "")) },
	})
}

// TestScript runs the end-to-end CLI tests in testdata/script: each .txtar file is a shell-like
// script with golden output. UPDATE_SCRIPTS=1 rewrites the golden sections after a reviewed change.
func TestScript(t *testing.T) {
	// The real Spark files saved in the repository (testdata/spark/README.md).
	conformance, err := filepath.Abs(filepath.Join("..", "..", "testdata", "spark"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
		RequireExplicitExec: true,
		Cmds:                scriptCmds,
		Setup: func(env *testscript.Env) error {
			env.Setenv("CONFORMANCE", conformance)
			env.Setenv("NO_COLOR", "1")
			for _, k := range []string{"CKPT_TEST_S3_ENDPOINT", "CKPT_TEST_S3_ACCESS_KEY", "CKPT_TEST_S3_SECRET_KEY", "CI"} {
				env.Setenv(k, os.Getenv(k))
			}
			for _, f := range scriptSetup {
				if err := f(env); err != nil {
					return err
				}
			}
			return nil
		},
	})
}
