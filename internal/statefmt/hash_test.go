package statefmt

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPartitionMatchesSparkFixtures: every key real Spark stored in partition p of an
// HDFS-backed store (testdata/spark-state, two partitions) hashes to p by Partition. The key
// columns are the key's fields, except the stream-stream join's keyWithIndexToValue stores,
// whose last field (the index) is not a join key.
func TestPartitionMatchesSparkFixtures(t *testing.T) {
	files := append(realFiles(t, "*.delta"), realFiles(t, "*.snapshot")...)
	keys := 0
	for _, f := range files {
		s := schemaOf(t, f)
		if s == nil {
			continue
		}
		dir := filepath.Dir(f)
		part := filepath.Base(dir)
		if !isDigits(part) {
			part = filepath.Base(filepath.Dir(dir))
		}
		want, _ := strconv.Atoi(part)
		kt := s.Families[0].Key
		cols := make([]int, len(kt.Fields))
		for i := range cols {
			cols[i] = i
		}
		if strings.Contains(f, "keyWithIndexToValue") {
			cols = cols[:len(cols)-1]
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(t, f, data)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			k, err := DecodeRow(r.Key, kt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Partition(k, kt, cols, 2)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s record %d: key %s hashes to partition %d", f, i, AppendJSON(nil, k), got)
			}
			keys++
		}
	}
	if keys < 100 {
		t.Fatalf("only %d keys checked", keys)
	}
	t.Logf("%d keys in the partition Spark put them in", keys)
}

// TestHashKnownValues: hash() values Spark's documentation and SQL give
// (SELECT hash('Spark', array(123), 2) is -1321691492 in Spark's ExpressionDescription).
func TestHashKnownValues(t *testing.T) {
	st := Struct(
		Field{Name: "s", Type: &Type{Name: "string"}},
		Field{Name: "a", Type: &Type{Name: "array", Elem: &Type{Name: "integer"}}},
		Field{Name: "i", Type: &Type{Name: "integer"}},
	)
	h := uint32(HashSeed)
	o := &Object{Values: []any{"Spark", []any{int32(123)}, int32(2)}}
	for i, f := range st.Fields {
		var err error
		if h, err = hashValue(o.Values[i], f.Type, h); err != nil {
			t.Fatal(err)
		}
	}
	if int32(h) != -1321691492 {
		t.Fatalf("hash('Spark', array(123), 2) = %d, Spark says -1321691492", int32(h))
	}
}
