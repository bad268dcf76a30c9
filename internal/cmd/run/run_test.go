package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// newOptions are the flag defaults with test streams; TMPDIR points at a fresh folder so that
// what --demo creates there can be seen.
func newOptions(t *testing.T) (*Options, *bytes.Buffer, string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	io, _, _, errOut := iostreams.Test()
	var got *Options
	cmd := NewCmd(&cli.Env{IO: io, Storage: storage.Options{}}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs(nil)
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got.OpenStore = func(ctx context.Context, uri string) (storage.Store, error) {
		return storage.Open(ctx, uri, storage.Options{})
	}
	return got, errOut, tmp
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func wantUsage(t *testing.T, err error, text string) {
	t.Helper()
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != exitcode.Usage || !strings.Contains(err.Error(), text) {
		t.Fatalf("err %v, want a usage error containing %q", err, text)
	}
}

// Every flag is validated before --demo starts a broker or creates a folder.
func TestRunValidatesBeforeDemoStarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(o *Options)
		want string
	}{
		{"trigger", func(o *Options) { o.Trigger = "sometimes" }, "trigger"},
		{"switch-off on a file sink", func(o *Options) {
			o.AsyncSwitchOff, o.Sink, o.SinkOpts = true, "file", []string{"path=out"}
		}, "does not support async progress tracking"},
		{"source option", func(o *Options) { o.SourceOpts = []string{"maxOffsetsPerTrigger=many"} }, "maxOffsetsPerTrigger"},
		{"metrics address", func(o *Options) { o.MetricsAddr = "no-port" }, "--metrics-addr"},
		{"demo partitions", func(o *Options) { o.DemoPartition = 0 }, "--demo-partitions"},
		{"aggregation in append mode", func(o *Options) {
			o.GroupBy, o.Agg = []string{"string(key) AS k"}, []string{"count(*) AS n"}
		}, query.SparkAppendAggregation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, errOut, tmp := newOptions(t)
			o.Demo = true
			tc.set(o)
			wantUsage(t, run(context.Background(), o), tc.want)
			if n := entries(t, tmp); len(n) != 0 {
				t.Errorf("a refused run created %v", n)
			}
			if strings.Contains(errOut.String(), "started an embedded Kafka broker") {
				t.Errorf("a refused run started a broker:\n%s", errOut)
			}
		})
	}
	o, _, _ := newOptions(t)
	o.Keep = true
	wantUsage(t, run(context.Background(), o), "--keep")
}

// --demo removes the checkpoint folder it created when the run ends, unless --keep.
func TestRunDemoCleansUp(t *testing.T) {
	for _, keep := range []bool{false, true} {
		o, errOut, tmp := newOptions(t)
		o.Demo, o.Keep, o.Sink, o.Trigger, o.MaxBatches, o.DemoRate = true, keep, "noop", "100ms", 1, 1000
		if err := run(context.Background(), o); err != nil {
			t.Fatalf("keep=%v: %v\n%s", keep, err, errOut)
		}
		var dirs []string
		for _, n := range entries(t, tmp) {
			if strings.HasPrefix(n, "ckpt-demo-") {
				dirs = append(dirs, n)
			}
		}
		if !keep {
			if len(dirs) != 0 || !strings.Contains(errOut.String(), "removed ") {
				t.Errorf("without --keep the demo left %v:\n%s", dirs, errOut)
			}
			continue
		}
		if len(dirs) != 1 {
			t.Fatalf("with --keep: folders %v, want the checkpoint:\n%s", dirs, errOut)
		}
		if _, err := os.Stat(filepath.Join(tmp, dirs[0], "commits", "0")); err != nil {
			t.Errorf("the kept checkpoint has no commit: %v", err)
		}
	}
}

// With async progress tracking only some commits are persisted: the summary names the last
// batch whose commit is on disk, where a restart resumes, not the last batch run.
func TestRunAsyncSummaryNamesDurableCommit(t *testing.T) {
	o, errOut, _ := newOptions(t)
	o.Demo, o.Sink, o.Trigger, o.MaxBatches, o.DemoRate = true, "noop", "50ms", 3, 2000
	o.SinkOpts = []string{"asyncProgressTrackingEnabled=true", "asyncProgressTrackingCheckpointIntervalMs=3600000"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(errOut.String(), "last batch run 2, last commit on disk 0 (") {
		t.Fatalf("summary does not name the durable commit:\n%s", errOut)
	}
}

// The command wires its flags into Options and calls run's replacement without cobra logic.
func TestNewCmdFlags(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *Options
	cmd := NewCmd(&cli.Env{IO: io}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--demo", "--keep", "--max-batches", "2"})
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.Demo || !got.Keep || got.MaxBatches != 2 || got.IO != io || got.OpenStore == nil {
		t.Fatalf("options %+v", got)
	}
	cmd = NewCmd(&cli.Env{IO: io}, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--group-by", "string(key) AS k", "--agg", "count(*) AS n, max(offset) AS o", "--agg", "avg(partition)", "--output-mode", "update", "--watermark", "timestamp=10 seconds"})
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	q, err := buildQuery(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.GroupBy) != 1 || len(q.Agg) != 2 || q.OutputMode != "update" || q.Watermark != "timestamp=10 seconds" {
		t.Fatalf("query %+v", q)
	}
}
