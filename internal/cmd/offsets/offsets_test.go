package offsets

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/position"
)

// parse runs the cobra wiring of `ckpt offsets ARGS` and returns the options run would get.
func parse(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	env := &cli.Env{IO: ios, Version: "test", Now: time.Now}
	var got *Options
	cmd := NewCmd(env, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	err := cmd.ExecuteContext(context.Background())
	return got, err
}

func TestResetFlags(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "f.csv")
	if err := os.WriteFile(csv, []byte("orders,2,7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parse(t, "reset", "ck", "--shift-by", "-5", "--topic", "orders:0,2", "--topic", "payments", "--execute", "--yes")
	if err != nil {
		t.Fatal(err)
	}
	if o.Target.Kind != position.ShiftBy || o.Target.Shift != -5 || !o.Reset || !o.Apply.Execute || !o.Apply.Yes {
		t.Fatalf("options %+v", o)
	}
	if len(o.Topics) != 2 || o.Topics[0].Topic != "orders" || len(o.Topics[0].Partitions) != 2 || o.Topics[1].Partitions != nil {
		t.Fatalf("topics %+v", o.Topics)
	}
	o, err = parse(t, "reset", "ck", "--from-file", csv)
	if err != nil || o.Target.File[logformat.TopicPartition{Topic: "orders", Partition: 2}] != 7 {
		t.Fatalf("--from-file: %v %+v", err, o)
	}
	o, err = parse(t, "reset", "ck", "--to-datetime", "2025-01-02T03:04:05.000")
	if err != nil || !o.Target.Time.Equal(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("--to-datetime: %v %+v", err, o)
	}
	for _, bad := range [][]string{
		{"reset", "ck"},
		{"reset", "ck", "--to-latest", "--to-earliest"},
		{"reset", "ck", "--to-offset", "-1"},
		{"reset", "ck", "--by-duration", "0s"},
		{"reset", "ck", "--to-datetime", "yesterday"},
		{"reset", "ck", "--to-latest", "--topic", ":1"},
		{"reset", "ck", "--to-latest", "--yes"},
		{"export", "ck", "-o", "yaml"},
	} {
		if _, err := parse(t, bad...); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

func TestExportFlags(t *testing.T) {
	o, err := parse(t, "export", "ck", "-o", "plain", "--bootstrap-server", "k:9092")
	if err != nil || o.Reset || o.Output != "plain" || !o.Broker.Enabled() {
		t.Fatalf("%v %+v", err, o)
	}
	if _, err := parse(t, "export"); exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("no checkpoint: %v", err)
	}
}
