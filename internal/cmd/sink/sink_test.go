package sink

import (
	"context"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	env := &cli.Env{IO: ios, Version: "test", Now: time.Now}
	var got *Options
	cmd := NewCmd(env, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	return got, cmd.ExecuteContext(context.Background())
}

func TestFlags(t *testing.T) {
	o, err := parse(t, "repair", "out", "--drop-missing", "--compact-interval", "8", "--retention", "24h", "--execute", "--yes")
	if err != nil || o.Action != ActionRepair || o.Output != "out" || !o.DropMissing || o.CompactInterval != 8 || o.Retention != 24*time.Hour || !o.Apply.Execute {
		t.Fatalf("%v %+v", err, o)
	}
	o, err = parse(t, "verify", "s3://b/out", "-o", "json")
	if err != nil || o.Action != ActionVerify || o.Format != "json" {
		t.Fatalf("%v %+v", err, o)
	}
	for _, bad := range [][]string{
		{"verify"},
		{"size", "a", "b"},
		{"repair", "out", "--yes"},
		{"repair", "out", "--compact-interval", "0"},
		{"verify", "out", "-o", "yaml"},
	} {
		if _, err := parse(t, bad...); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

func TestOutputDir(t *testing.T) {
	for in, want := range map[string]string{
		"out":                      "out",
		"out/_spark_metadata":      "out",
		"out/_spark_metadata/":     "out",
		"/_spark_metadata":         "/",
		"_spark_metadata":          ".",
		"s3://b/p/_spark_metadata": "s3://b/p",
		"gs://b/p":                 "gs://b/p",
	} {
		if got := OutputDir(in); got != want {
			t.Errorf("OutputDir(%q) = %q, want %q", in, got, want)
		}
	}
}
