package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestSplitIndexed(t *testing.T) {
	for in, want := range map[string]struct {
		i int
		p string
	}{
		"/data/t":          {-1, "/data/t"},
		"0=/data/t":        {0, "/data/t"},
		"12=s3://b/t":      {12, "s3://b/t"},
		"s3://b/k=v/t":     {-1, "s3://b/k=v/t"},
		"01=/x":            {-1, "01=/x"},
		"-1=/x":            {-1, "-1=/x"},
		"=/x":              {-1, "=/x"},
		"3=":               {3, ""},
		"/data/year=2024/": {-1, "/data/year=2024/"},
	} {
		if i, p := splitIndexed(in); i != want.i || p != want.p {
			t.Errorf("splitIndexed(%q) = %d, %q; want %d, %q", in, i, p, want.i, want.p)
		}
	}
}

func openLocal(_ context.Context, uri string) (storage.Store, error) { return storage.NewLocal(uri) }

// Unindexed tables go to the checkpoint's Delta sources in order; too many is a usage error; the
// sink's txn is read for the checkpoint's query id.
func TestDeltaFlagsRead(t *testing.T) {
	ctx := context.Background()
	fx := filepath.Join("..", "..", "testdata", "delta")
	s, err := storage.NewLocal(filepath.Join(fx, "source", "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	f := DeltaFlags{Tables: []string{filepath.Join(fx, "source", "table")}, Sink: filepath.Join(fx, "source", "sink")}
	tables, err := f.ReadTables(ctx, openLocal, cp)
	if err != nil || len(tables) != 1 || tables[0].Source != 0 || tables[0].Table.Latest != 3 {
		t.Fatalf("tables %+v, %v", tables, err)
	}
	txn, err := f.ReadSink(ctx, openLocal, cp)
	if err != nil || txn.Version != 2 {
		t.Fatalf("sink txn %+v, %v", txn, err)
	}
	f.Tables = append(f.Tables, f.Tables[0])
	if _, err := f.ReadTables(ctx, openLocal, cp); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("two tables for one Delta source: %v", err)
	}
	f.Tables = []string{"0=" + f.Tables[0], "0=" + f.Tables[0]}
	if _, err := f.ReadTables(ctx, openLocal, cp); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("source 0 twice: %v", err)
	}
	f.Tables = []string{filepath.Join(fx, "source", "checkpoint")}
	if _, err := f.ReadTables(ctx, openLocal, cp); err == nil {
		t.Error("a directory without _delta_log read as a table")
	}
}
