package rewind

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
	o, err := parse(t, "ck", "--to-batch", "4", "--kafka-sink", "--allow-duplicates", "--mode", "async")
	if err != nil || o.ToBatch == nil || *o.ToBatch != 4 || o.ToTime != nil || !o.KafkaSink || !o.AllowDuplicates || o.Mode != "async" {
		t.Fatalf("%v %+v", err, o)
	}
	o, err = parse(t, "ck", "--to-time", "1700000000000")
	if err != nil || o.ToTime == nil || o.ToTime.UnixMilli() != 1700000000000 {
		t.Fatalf("%v %+v", err, o)
	}
	for _, bad := range [][]string{
		{"ck"},
		{"ck", "--to-batch", "1", "--to-time", "1"},
		{"ck", "--to-batch", "-1"},
		{"ck", "--to-time", "soon"},
		{"ck", "--to-batch", "1", "--yes"},
		{"ck", "--to-batch", "1", "--active-window", "-1s"},
	} {
		if _, err := parse(t, bad...); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}
