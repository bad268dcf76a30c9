package statefmt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEncodeSchemaV2RealFiles re-encodes the schema files Spark wrote for the aggregation
// and deduplication fixtures of every release (a dedup value is a void field) and expects
// Spark's bytes.
func TestEncodeSchemaV2RealFiles(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/spark-state/*/*-*hdfs*/checkpoint/state/0/0/_metadata/schema")
	if len(files) == 0 {
		t.Fatal("no fixture schema files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSchema(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if s.Version != 2 {
			continue
		}
		got, err := EncodeSchemaV2(s.Families[0].Key, s.Families[0].Value)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: encoded\n%q\nSpark wrote\n%q", f, got, data)
		}
	}
}

func TestEncodeSchemaV2NonASCII(t *testing.T) {
	k := Struct(Field{Name: "ключ\x00😀", Type: &Type{Name: "string"}, Nullable: true})
	v := Struct(Field{Name: "count", Type: &Type{Name: "long"}})
	b, err := EncodeSchemaV2(k, v)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSchema("x", b)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Families[0].Key.Fields[0].Name; got != k.Fields[0].Name {
		t.Errorf("round trip: %q, want %q", got, k.Fields[0].Name)
	}
	if _, err := EncodeSchemaV2(Struct(Field{Name: "a", Type: &Type{Name: "map", Key: &Type{Name: "string"}, Value: &Type{Name: "string"}}}), v); err == nil {
		t.Error("a map type was rendered; want an error")
	}
}
