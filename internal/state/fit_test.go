package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// TestEveryFixtureRowFitsItsSchema: every row Spark wrote in testdata/spark-state, in every
// store of every operator that has a key and value schema (not transformWithState's), fits its
// schema byte for byte (statefmt.FitRow): the check that tells a swapped schema file apart
// has no false positive on Spark's own rows.
func TestEveryFixtureRowFitsItsSchema(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/spark-state/*/*")
	stores := 0
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "checkpoint")); err != nil {
			continue
		}
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			cp, l := openFixture(t, dir)
			for _, op := range l.Operators {
				if len(op.SchemaV3Files) > 0 {
					continue
				}
				for _, st := range op.Stores {
					r, err := NewReader(context.Background(), cp, l, ReadOptions{Operator: op.ID, Store: st.Name, Partition: -1})
					if err != nil {
						t.Fatal(err)
					}
					f := r.Schema().Family(statefmt.DefaultColumnFamily)
					rows := 0
					err = r.Each(context.Background(), func(row *Row) error {
						rows++
						if err := statefmt.FitRow(row.RawKey, f.Key); err != nil {
							t.Errorf("op %d %s: key %x: %v", op.ID, st.Name, row.RawKey, err)
						}
						if err := statefmt.FitRow(row.RawValue, f.Value); err != nil {
							t.Errorf("op %d %s: value %x: %v", op.ID, st.Name, row.RawValue, err)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if rows == 0 {
						t.Errorf("op %d %s: no rows", op.ID, st.Name)
					}
					stores++
				}
			}
		})
	}
	if stores < 30 {
		t.Errorf("%d stores checked", stores)
	}
}

// TestReadSwappedSchemaFails: `state read` of a store whose schema file is another operator's
// (4.1.4/agg-hdfs with agg-ntz-hdfs's schema: every key and value has as many bytes as that
// schema needs, so rendering alone would print garbage timestamps) fails, naming the row's
// file, the schema file and what did not fit.
func TestReadSwappedSchemaFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../testdata/spark-state/4.1.4/agg-hdfs")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"schema", ".schema.crc"} {
		b, err := os.ReadFile("../../testdata/spark-state/4.1.4/agg-ntz-hdfs/checkpoint/state/0/0/_metadata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "checkpoint/state/0/0/_metadata", f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp, l := openFixture(t, dir)
	r, err := NewReader(context.Background(), cp, l, ReadOptions{Partition: -1})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	err = r.Each(context.Background(), func(*Row) error { rows++; return nil })
	if err == nil {
		t.Fatalf("read %d rows with another operator's schema", rows)
	}
	for _, want := range []string{"state/0/0/", ".snapshot: offset ", "the value is not a row of the value schema struct<min:timestamp_ntz,max:timestamp_ntz> of state/0/0/_metadata/schema"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	m, err := CheckSchemaFit(context.Background(), cp, l, 0, DefaultStore, 5)
	if err != nil || m == nil || m.Key || m.SchemaFile != "state/0/0/_metadata/schema" || m.Value == nil || len(m.Keys) == 0 {
		t.Errorf("CheckSchemaFit: %+v, %v", m, err)
	}
}
