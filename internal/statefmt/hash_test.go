package statefmt

import (
	"math"
	"math/big"
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
	keys, inPlace := 0, 0
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
			if raw, ok, err := PartitionRow(r.Key, kt, cols, 2); err != nil || ok && raw != want {
				t.Fatalf("%s record %d: key %s hashes in place to partition %d (%v)", f, i, AppendJSON(nil, k), raw, err)
			} else if ok {
				inPlace++
			}
			keys++
		}
	}
	if keys < 100 || inPlace < keys/2 {
		t.Fatalf("only %d keys checked, %d hashed in place", keys, inPlace)
	}
	t.Logf("%d keys in the partition Spark put them in (%d hashed in place too)", keys, inPlace)
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

// TestPartitionRowEqualsPartition: for keys of every type PartitionRow hashes in place, with
// nulls, -0.0 and NaN, it gives Partition's answer for 1 to 7 partitions; nested and wide
// decimal keys are left to Partition.
func TestPartitionRowEqualsPartition(t *testing.T) {
	names := []string{"boolean", "byte", "short", "integer", "date", "long", "timestamp", "timestamp_ntz", "float", "double", "string", "binary"}
	var fields []Field
	for _, n := range names {
		fields = append(fields, Field{Name: n, Type: &Type{Name: n}})
	}
	fields = append(fields, Field{Name: "decimal", Type: &Type{Name: "decimal", Precision: 10, Scale: 2}})
	kt := Struct(fields...)
	cols := make([]int, len(fields))
	for i := range cols {
		cols[i] = i
	}
	nan := float32(0)
	for i := range 200 {
		v := []any{i%2 == 0, int8(i - 100), int16(i * 300), int32(i * 7919), Date(int32(i)), int64(i) << 40, Timestamp(int64(i) * 1e6), TimestampNTZ(-int64(i)),
			float32(i) / 3, float64(i) / 7, strings.Repeat("é", i%9), []byte(strings.Repeat("x", i%5)), Decimal{Unscaled: big.NewInt(int64(i) * 101), Scale: 2}}
		switch i % 5 {
		case 1:
			v[8], v[9] = float32(math.Copysign(0, -1)), math.Copysign(0, -1)
		case 2:
			v[8], v[9] = nan/nan, math.NaN()
		case 3:
			v[i%len(v)] = nil
		}
		o := &Object{Names: make([]string, len(v)), Values: v}
		for k := range fields {
			o.Names[k] = fields[k].Name
		}
		key, err := EncodeRow(o, kt)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := DecodeRow(key, kt)
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 7; n++ {
			want, err := Partition(dec, kt, cols, n)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := PartitionRow(key, kt, cols, n)
			if err != nil || !ok || got != want {
				t.Fatalf("key %d, %d partitions: in place %d (ok %v, %v), decoded %d", i, n, got, ok, err, want)
			}
		}
	}
	nested := Struct(Field{Name: "a", Type: &Type{Name: "array", Elem: &Type{Name: "integer"}}})
	key, _ := EncodeRow(&Object{Names: []string{"a"}, Values: []any{[]any{int32(1)}}}, nested)
	if _, ok, _ := PartitionRow(key, nested, []int{0}, 3); ok {
		t.Error("an array key hashed in place")
	}
}
