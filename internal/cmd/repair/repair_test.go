package repair

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/repair"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

var now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// memEnv builds a scenario into a named in-memory store and returns an Env whose streams are
// buffers.
func memEnv(t *testing.T, name string) (*cli.Env, *iostreams.IOStreams, string) {
	t.Helper()
	uri := "mem://" + strings.ReplaceAll(t.Name(), "/", "-")
	storage.ForgetMem(uri[len("mem://"):])
	t.Cleanup(func() { storage.ForgetMem(uri[len("mem://"):]) })
	sc, ok := scenario.Get(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	if err := sc.WriteTo(context.Background(), storage.MemNamed(uri[len("mem://"):])); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	env := &cli.Env{IO: ios, Version: "test", Now: func() time.Time { return now }, Getenv: func(string) string { return "" }}
	return env, ios, uri
}

func run(t *testing.T, env *cli.Env, args ...string) error {
	t.Helper()
	cmd := NewCmd(env, nil)
	cmd.SetArgs(args)
	cmd.SetOut(env.IO.Out)
	cmd.SetErr(env.IO.ErrOut)
	return cmd.ExecuteContext(context.Background())
}

// The confirmation on a (fake) terminal: only "y"/"yes" apply the plan.
func TestConfirmOnTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		applied bool
	}{{"n\n", false}, {"\n", false}, {"yes\n", true}, {"y\n", true}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			env, ios, uri := memEnv(t, "commits-ahead")
			ios.SetStdinTTY(true)
			ios.SetStdoutTTY(true)
			ios.In.(interface{ WriteString(string) (int, error) }).WriteString(tc.answer)
			if err := run(t, env, uri, "--execute"); err != nil {
				t.Fatal(err)
			}
			out := ios.Out.(interface{ String() string }).String()
			if !strings.Contains(out, "Apply 2 changes to "+uri+"? [y/N]") {
				t.Errorf("no prompt in:\n%s", out)
			}
			s := storage.MemNamed(uri[len("mem://"):])
			_, err := s.Stat(context.Background(), "commits/7")
			if applied := err != nil; applied != tc.applied {
				t.Errorf("answer %q: applied=%v, want %v\n%s", tc.answer, applied, tc.applied, out)
			}
			if tc.applied && !strings.Contains(out, "Applied and verified") {
				t.Errorf("no verification in:\n%s", out)
			}
			if !tc.applied && !strings.Contains(out, "Nothing changed.") {
				t.Errorf("no 'Nothing changed.' in:\n%s", out)
			}
		})
	}
}

func TestExecuteNeedsYesWithoutTerminal(t *testing.T) {
	env, _, uri := memEnv(t, "commits-ahead")
	err := run(t, env, uri, "--execute")
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("want a usage error asking for --yes, got %v", err)
	}
	err = run(t, env, uri, "--execute", "--active-window", "0", "--yes")
	if err != nil {
		t.Fatal(err)
	}
}

func TestFlagWiring(t *testing.T) {
	env, _, uri := memEnv(t, "async-trap-0-3-7")
	var got *Options
	cmd := NewCmd(env, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{uri, "--strategy", "delete", "--sink", "out", "--execute", "--yes", "--backup-dir", "bk",
		"--active-window", "30s", "--force", "--mode", "async", "--spark-version", "4.0", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Checkpoint != uri || got.Strategy != repair.StrategyDelete || got.Sink != "out" || !got.Execute || !got.Yes ||
		got.BackupDir != "bk" || got.ActiveWindow != 30*time.Second || !got.Force || got.Mode != "async" ||
		got.SparkVersion != "4.0" || got.Output != "json" {
		t.Errorf("options: %+v", got)
	}
	for _, bad := range [][]string{
		{uri, "--strategy", "nope"}, {uri, "--mode", "nope"}, {uri, "--spark-version", "9.9"},
		{uri, "--yes"}, {uri, "--active-window", "-1s"}, {uri, "-o", "yaml"}, {},
	} {
		cmd := NewCmd(env, func(context.Context, *Options) error { return nil })
		cmd.SetArgs(bad)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: want a usage error, got %v", bad, err)
		}
	}
}

func TestRefusedExitsOne(t *testing.T) {
	env, _, uri := memEnv(t, "async-trap-0-3-7")
	// Every strategy is fine here, but a lock held by another repair refuses --execute.
	s := storage.MemNamed(uri[len("mem://"):])
	if err := s.WriteFile(context.Background(), journal.LockPath, []byte(`{"id":"other","journal":"j","op":"repair","host":"h","pid":1}`)); err != nil {
		t.Fatal(err)
	}
	err := run(t, env, uri, "--execute", "--yes", "--active-window", "0")
	var locked *journal.LockedError
	if !errors.As(err, &locked) || exitcode.Code(err) != exitcode.Failure {
		t.Fatalf("want a LockedError with exit 1, got %v", err)
	}
}

// A restart that still fails after the repair is exit 3, with "Nothing to repair." as with a
// plan (it once exited 0 after printing "warning: after this repair the restart still fails").
func TestStillFailingRestartExitsNonZero(t *testing.T) {
	for _, args := range [][]string{{}, {"-o", "json"}, {"--execute", "--yes"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			env, ios, uri := memEnv(t, "previous-offsets-blank-source")
			err := run(t, env, append([]string{uri}, args...)...)
			if exitcode.Code(err) != exitcode.Findings {
				t.Fatalf("exit %d (%v), want %d", exitcode.Code(err), err, exitcode.Findings)
			}
			out := ios.Out.(interface{ String() string }).String()
			if len(args) == 0 && !strings.Contains(out, "Nothing to repair.") {
				t.Errorf("output:\n%s", out)
			}
		})
	}
	env, _, uri := memEnv(t, "commits-ahead")
	if err := run(t, env, uri); err != nil {
		t.Errorf("a repair that fixes the restart: %v", err)
	}
}
