package deltastate

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
func TestRead(t *testing.T) {
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
	specs := []string{filepath.Join(fx, "source", "table")}
	tables, err := ReadTables(ctx, openLocal, cp, specs)
	if err != nil || len(tables) != 1 || tables[0].Source != 0 || tables[0].Table.Latest != 3 {
		t.Fatalf("tables %+v, %v", tables, err)
	}
	txn, err := ReadSink(ctx, openLocal, cp, filepath.Join(fx, "source", "sink"))
	if err != nil || txn.Version != 2 {
		t.Fatalf("sink txn %+v, %v", txn, err)
	}
	if _, err := ReadTables(ctx, openLocal, cp, append(specs, specs[0])); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("two tables for one Delta source: %v", err)
	}
	if _, err := ReadTables(ctx, openLocal, cp, []string{"0=" + specs[0], "0=" + specs[0]}); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("source 0 twice: %v", err)
	}
	if _, err := ReadTables(ctx, openLocal, cp, []string{filepath.Join(fx, "source", "checkpoint")}); err == nil || exitcode.Code(err) == exitcode.Usage {
		t.Errorf("a directory without _delta_log read as a table, or called a usage mistake: %v", err)
	}
}
