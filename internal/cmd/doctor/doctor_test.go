package doctor

import (
	"bytes"
	"context"
	"fmt"
	"github.com/charmbracelet/lipgloss"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

func testEnv() *cli.Env {
	ios, _, _, _ := iostreams.Test()
	return &cli.Env{IO: ios, Version: "test"}
}

func TestFlags(t *testing.T) {
	base := Options{Checkpoint: "ck", FailOn: doctor.Error, Output: render.FormatTable,
		Broker: cli.BrokerFlags{Timeout: topicstate.DefaultTimeout}, FailOnDataLoss: true}
	with := func(f func(o *Options)) Options { o := base; f(&o); return o }
	for _, tc := range []struct {
		args []string
		code int
		want Options
	}{
		{args: []string{"ck"}, want: base},
		{args: []string{"ck", "--mode", "async", "--spark-version", "4.0", "--commit-format-version", "2"},
			want: with(func(o *Options) { o.Mode, o.SparkVersion, o.CommitFormatVersion = recovery.ModeAsync, "4.0", 2 })},
		{args: []string{"ck", "--sink", "out", "--deep", "--fail-on", "WARNING", "-o", "json"},
			want: with(func(o *Options) { o.Sink, o.Deep, o.FailOn, o.Output = "out", true, doctor.Warning, render.FormatJSON })},
		{args: []string{"--explain", "commit-lag"},
			want: with(func(o *Options) { o.Checkpoint, o.Explain = "", "commit-lag" })},
		{args: []string{"ck", "--bootstrap-server", "k:9092", "--kafka-option", "kafka.security.protocol=SSL", "--broker-timeout", "5s", "--fail-on-data-loss=false"},
			want: with(func(o *Options) {
				o.Broker = cli.BrokerFlags{BootstrapServers: "k:9092", Options: []string{"kafka.security.protocol=SSL"}, Timeout: 5 * time.Second}
				o.FailOnDataLoss = false
			})},
		{args: []string{"ck", "--delta-table", "s3://lake/a", "--delta-table", "2=/data/b", "--delta-sink", "s3://lake/out"},
			want: with(func(o *Options) {
				o.Delta = cli.DeltaFlags{Tables: []string{"s3://lake/a", "2=/data/b"}, Sink: "s3://lake/out"}
			})},
		{args: []string{"ck", "--sink", "out", "--delta-sink", "t"}, code: exitcode.Usage},
		{args: []string{"ck", "--fail-on-data-loss=false"}, code: exitcode.Usage},
		{args: []string{"--explain", "nope"}, code: exitcode.Usage},
		{args: []string{"--explain", "commit-lag", "ck"}, code: exitcode.Usage},
		{args: []string{}, code: exitcode.Usage},
		{args: []string{"a", "b"}, code: exitcode.Usage},
		{args: []string{"ck", "--fail-on", "fatal"}, code: exitcode.Usage},
		{args: []string{"ck", "--mode", "turbo"}, code: exitcode.Usage},
		{args: []string{"ck", "--spark-version", "1.6"}, code: exitcode.Usage},
		{args: []string{"ck", "--commit-format-version", "7"}, code: exitcode.Usage},
		{args: []string{"ck", "-o", "yaml"}, code: exitcode.Usage},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *Options
			cmd := NewCmd(testEnv(), func(o *Options) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if c := exitcode.Code(err); c != tc.code {
				t.Fatalf("exit code %d (%v), want %d", c, err, tc.code)
			}
			if tc.code != 0 {
				return
			}
			got.IO, got.OpenStore = nil, nil
			if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("options = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

// run executes runDoctor on a scenario in memory and returns stdout and the exit code.
func run(t *testing.T, name string, mod func(o *Options)) (string, int) {
	t.Helper()
	ctx := context.Background()
	s, ok := scenario.Get(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	st, cleanup, err := s.Mem(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ios, _, out, _ := iostreams.Test()
	o := &Options{
		IO:         ios,
		OpenStore:  func(context.Context, string) (storage.Store, error) { return st, nil },
		Checkpoint: "/data/ckpt",
		FailOn:     doctor.Error,
		Output:     render.FormatTable,
	}
	if mod != nil {
		mod(o)
	}
	err = runDoctor(ctx, o)
	return out.String(), exitcode.Code(err)
}

func TestRunTable(t *testing.T) {
	out, code := run(t, "missing-previous-offsets", nil)
	if code != exitcode.Findings {
		t.Errorf("exit %d, want 3", code)
	}
	for _, want := range []string{
		"✗ 1 error. Restart will FAIL: java.lang.IllegalStateException: batch 4 doesn't exist\n",
		"checkpoint /data/ckpt · sync engine · Spark 3.5\n",
		"\nerror    missing-previous-offsets  offsets/4\n",
		"  Spark: ERROR MicroBatchExecution: The offset log for batch 4 doesn't exist",
		"\n         java.lang.IllegalStateException: batch 4 doesn't exist\n",
		"  Run:   ckpt repair /data/ckpt --execute\n",
		"Explain a code: ckpt doctor --explain CODE",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		failOn   doctor.Severity
		code     int
	}{
		{"committed", doctor.Error, 0},
		{"committed", doctor.Info, 0},
		{"rerun-last", doctor.Error, 0},
		{"rerun-last", doctor.Info, exitcode.Findings},
		// Batches 5..6 are never run again: an error (issue 15).
		{"commits-behind", doctor.Error, exitcode.Findings},
		{"commits-behind", doctor.Warning, exitcode.Findings},
		{"commits-ahead", doctor.Error, exitcode.Findings},
	} {
		_, code := run(t, tc.scenario, func(o *Options) { o.FailOn = tc.failOn })
		if code != tc.code {
			t.Errorf("%s --fail-on %s: exit %d, want %d", tc.scenario, tc.failOn, code, tc.code)
		}
	}
}

func TestRunVerdicts(t *testing.T) {
	for name, want := range map[string]string{
		// A Kafka checkpoint without --bootstrap-server: the broker's part was not checked.
		"committed":      "✓ no problems found; Kafka offsets not checked: pass --bootstrap-server. Restart resumes at batch 8; nothing re-runs\n",
		"rerun-last":     "✓ no problems found (1 note); Kafka offsets not checked: pass --bootstrap-server. Restart re-runs batch 7, then continues at batch 8\n",
		"commits-behind": "✗ 1 error, 1 note. Restart re-runs batch 7, then continues at batch 8\n",
	} {
		out, _ := run(t, name, nil)
		if first, _, _ := strings.Cut(out, "\n"); first+"\n" != want {
			t.Errorf("%s: verdict %q, want %q", name, first, want)
		}
	}
}

func TestRunEmptyLocation(t *testing.T) {
	_, code := run(t, "fresh-empty", nil)
	if code != exitcode.Failure {
		t.Errorf("an empty location: exit %d, want 1", code)
	}
}

func TestExplain(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if err := runDoctor(context.Background(), &Options{IO: ios, Explain: "commit-lag", Output: render.FormatTable}); err != nil {
		t.Fatal(err)
	}
	page, _ := doctor.Explain("commit-lag")
	if out.String() != page {
		t.Errorf("--explain printed %q", out.String())
	}
}

// On an 80-column terminal the findings, Spark's error and the fix wrap at spaces under their
// column instead of running past the edge, where the terminal broke them mid-word.
func TestRunTableWrapsFindings(t *testing.T) {
	out, _ := run(t, "missing-previous-offsets", func(o *Options) {
		o.IO.SetStdoutTTY(true)
		o.IO.SetTerminalWidth(80)
	})
	for _, line := range strings.Split(out, "\n") {
		if w := lipgloss.Width(line); w > 80 && len(strings.Fields(line)) > 2 {
			t.Errorf("line of %d cells:\n%s", w, line)
		}
	}
}
