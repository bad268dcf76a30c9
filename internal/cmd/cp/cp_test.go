package cp

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transfer"
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
	o, err := parse(t, "a", "s3://b/c", "--rewrite-prefix", "file:/x=s3a://b/x", "--rewrite-prefix", "file:/y=file:/z=w",
		"--sink", "out", "--sink-dst", "s3://b/out", "--resume", "--parallelism", "8", "-o", "json")
	if err != nil || o.Src != "a" || o.Dst != "s3://b/c" || !o.Resume || o.Parallelism != 8 || o.Sink != "out" || o.SinkDst != "s3://b/out" {
		t.Fatalf("%v %+v", err, o)
	}
	want := []transfer.Rewrite{{Old: "file:/x", New: "s3a://b/x"}, {Old: "file:/y", New: "file:/z=w"}}
	if len(o.Rewrites) != 2 || o.Rewrites[0] != want[0] || o.Rewrites[1] != want[1] {
		t.Fatalf("rewrites %+v", o.Rewrites)
	}
	for _, bad := range [][]string{
		{"a"},
		{"a", "b", "--rewrite-prefix", "=x"},
		{"a", "b", "--sink-dst", "x"},
		{"a", "b", "--parallelism", "0"},
	} {
		if _, err := parse(t, bad...); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}

func TestExists(t *testing.T) {
	dir := t.TempDir()
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(context.Background(), "in/a b.json", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ex := existsFunc(func(ctx context.Context, uri string) (storage.Store, error) {
		return storage.Open(ctx, uri, storage.Options{})
	})
	for p, want := range map[string]bool{
		"file://" + dir + "/in/a%20b.json": true,
		"file:" + dir + "/in/a%20b.json":   true,
		dir + "/in/a b.json":               true,
		"file:" + dir + "/in/nope.json":    false,
		"file:" + dir + "/nodir/x.json":    false,
	} {
		got, err := ex(context.Background(), p)
		if err != nil || got != want {
			t.Errorf("exists(%s) = %v, %v; want %v", p, got, err, want)
		}
	}
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	p := newProgress(ios)
	p.update(transfer.Progress{Files: 1, TotalFiles: 1, Bytes: 2048, TotalBytes: 2048})
	p.finish()
	if errOut.Len() != 0 {
		t.Fatalf("progress when piped: %q", errOut)
	}
	ios.SetStderrTTY(true)
	p = newProgress(ios)
	p.update(transfer.Progress{Files: 1, TotalFiles: 1, Bytes: 2048, TotalBytes: 2048})
	p.finish()
	if !strings.Contains(errOut.String(), "copying: 1/1 files, 2.0 KiB/2.0 KiB (100%)") || !bytes.HasSuffix(errOut.Bytes(), []byte("\n")) {
		t.Fatalf("progress %q", errOut)
	}
}

// `--sink-dst` inside the source checkpoint is a usage error and writes nothing (before, 92
// files went into the source's offsets/ and cp exited 0).
func TestSinkDestinationInsideSourceRefused(t *testing.T) {
	root := t.TempDir()
	ck, err := storage.NewLocal(root + "/ck")
	if err != nil {
		t.Fatal(err)
	}
	out, err := storage.NewLocal(root + "/out")
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{
		"metadata":  `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`,
		"offsets/0": "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1700000000000,\"conf\":{}}\n{\"logOffset\":0}",
		"commits/0": "v1\n{\"nextBatchWatermarkMs\":0}",
	} {
		if err := ck.WriteFile(context.Background(), p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.WriteFile(context.Background(), "_spark_metadata/0", []byte("v1\n")); err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	err = run(context.Background(), &Options{
		IO: ios, Now: time.Now, Version: "test", Parallelism: 4,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Src: root + "/ck", Dst: root + "/d", Sink: root + "/out", SinkDst: root + "/ck/offsets/sinkcopy",
	})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("err = %v, want a usage error about the overlap", err)
	}
	es, err := ck.Walk(context.Background(), "")
	if err != nil || len(es) != 3 {
		t.Fatalf("the source holds %v (%v), want its 3 files", es, err)
	}
}
