package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/replay"
	"github.com/ckpt-dev/ckpt/internal/cmd/root"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// ckptMain is the ckpt binary for the scripts: the real root command, with
// replay added when the root does not list it yet.
func ckptMain() int {
	env := &cli.Env{IO: iostreams.System(), Version: "test", Now: time.Now, Getenv: os.Getenv}
	cmd := root.NewCmd(env)
	if c, _, err := cmd.Find([]string{"replay"}); err != nil || c == cmd {
		cmd.AddCommand(replay.NewCmd(env, nil))
	}
	cmd.SetArgs(os.Args[1:])
	err := cmd.ExecuteContext(context.Background())
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(env.IO.ErrOut, "ckpt: %s\n", msg)
	}
	return exitcode.Code(err)
}

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"ckpt": func() { os.Exit(ckptMain()) }})
}

// TestScripts runs testdata/script/replay_*.txtar (also run by cmd/ckpt's
// harness once replay is registered in the root command).
func TestScripts(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "testdata", "script")
	files, err := filepath.Glob(filepath.Join(dir, "replay_*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no replay scripts in %s: %v", dir, err)
	}
	testscript.Run(t, testscript.Params{
		Files:               files,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkscenario": func(ts *testscript.TestScript, neg bool, args []string) {
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
			},
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exitcode N prog [args...]")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("exitcode: %v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
		},
	})
}
