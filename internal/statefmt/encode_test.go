package statefmt

import (
	"bytes"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"
)

// schemaOf finds the schema file of the store a state file belongs to:
// state/<op>/<part>/[<store>/]N.delta has its schema in state/<op>/0/[<store>/]_metadata/schema.
func schemaOf(t *testing.T, file string) *Schema {
	t.Helper()
	dir := filepath.Dir(file)
	var store string
	if part := filepath.Base(dir); !isDigits(part) {
		store, dir = part, filepath.Dir(dir)
	}
	p := filepath.Join(filepath.Dir(dir), "0", store, "_metadata", "schema")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	s, err := ParseSchema(p, data)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return s
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// TestEncodeRowRealFiles: every key and value row that real Spark wrote into an HDFS-backed
// store (testdata/spark-state) decodes and encodes back to the same bytes.
func TestEncodeRowRealFiles(t *testing.T) {
	files := append(realFiles(t, "*.delta"), realFiles(t, "*.snapshot")...)
	rows := 0
	for _, f := range files {
		s := schemaOf(t, f)
		if s == nil {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readAll(t, f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fam := s.Families[0]
		for i, r := range recs {
			for _, part := range []struct {
				what string
				b    []byte
				t    *Type
			}{{"key", r.Key, fam.Key}, {"value", r.Value, fam.Value}} {
				if part.b == nil || (part.what == "value" && r.Delete) {
					continue // a removal has no value
				}
				o, err := DecodeRow(part.b, part.t)
				if err != nil {
					t.Fatalf("%s record %d %s: %v", f, i, part.what, err)
				}
				got, err := EncodeRow(o, part.t)
				if err != nil {
					t.Fatalf("%s record %d %s: encode: %v", f, i, part.what, err)
				}
				if !bytes.Equal(got, part.b) {
					t.Fatalf("%s record %d %s (%s):\nspark %x\nckpt  %x", f, i, part.what, part.t, part.b, got)
				}
				rows++
			}
		}
	}
	if rows < 100 {
		t.Fatalf("only %d rows compared: the fixtures moved?", rows)
	}
	t.Logf("%d rows byte-equal", rows)
}

// TestEncodeRowEveryType covers the types the fixtures lack (nested containers, wide
// decimals, nulls of each kind) by DecodeRow(EncodeRow(o)) == o.
func TestEncodeRowEveryType(t *testing.T) {
	long := &Type{Name: "long"}
	str := &Type{Name: "string"}
	wide := &Type{Name: "decimal", Precision: 38, Scale: 3}
	schema := Struct(
		Field{Name: "s", Type: str},
		Field{Name: "b", Type: &Type{Name: "boolean"}},
		Field{Name: "y", Type: &Type{Name: "byte"}},
		Field{Name: "h", Type: &Type{Name: "short"}},
		Field{Name: "i", Type: &Type{Name: "integer"}},
		Field{Name: "f", Type: &Type{Name: "float"}},
		Field{Name: "d", Type: &Type{Name: "double"}},
		Field{Name: "day", Type: &Type{Name: "date"}},
		Field{Name: "ts", Type: &Type{Name: "timestamp"}},
		Field{Name: "ntz", Type: &Type{Name: "timestamp_ntz"}},
		Field{Name: "bin", Type: &Type{Name: "binary"}},
		Field{Name: "dec", Type: &Type{Name: "decimal", Precision: 10, Scale: 2}},
		Field{Name: "big", Type: wide},
		Field{Name: "nullbig", Type: wide, Nullable: true},
		Field{Name: "neg", Type: wide},
		Field{Name: "arr", Type: &Type{Name: "array", Elem: long}},
		Field{Name: "sarr", Type: &Type{Name: "array", Elem: str}},
		Field{Name: "barr", Type: &Type{Name: "array", Elem: &Type{Name: "boolean"}}},
		Field{Name: "darr", Type: &Type{Name: "array", Elem: wide}},
		Field{Name: "m", Type: &Type{Name: "map", Key: str, Value: long}},
		Field{Name: "st", Type: Struct(Field{Name: "x", Type: long}, Field{Name: "y", Type: str})},
		Field{Name: "nul", Type: str, Nullable: true},
	)
	big1, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	big2, _ := new(big.Int).SetString("-98765432109876543210", 10)
	o := &Object{Values: []any{
		"héllo, state", true, int8(-3), int16(-300), int32(70000), float32(1.5), 2.25, Date(19000),
		Timestamp(1_700_000_000_123_000), TimestampNTZ(-1), []byte{0, 1, 2, 0xff},
		Decimal{Unscaled: big.NewInt(-12345), Scale: 2}, Decimal{Unscaled: big1, Scale: 3}, nil,
		Decimal{Unscaled: big2, Scale: 3}, []any{int64(1), nil, int64(3)}, []any{"a", nil, "bcdefghij"},
		[]any{true, false, nil}, []any{Decimal{Unscaled: big.NewInt(-128), Scale: 3}, nil},
		&Map{Keys: []any{"k1", "k2"}, Values: []any{int64(7), nil}},
		&Object{Names: []string{"x", "y"}, Values: []any{int64(9), "nested"}}, nil,
	}}
	for _, f := range schema.Fields {
		o.Names = append(o.Names, f.Name)
	}
	b, err := EncodeRow(o, schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%8 != 0 {
		t.Errorf("row of %d bytes is not word-aligned", len(b))
	}
	back, err := DecodeRow(b, schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(AppendJSON(nil, back)), string(AppendJSON(nil, o)); got != want {
		t.Fatalf("round trip:\n got %s\nwant %s", got, want)
	}
	// Twice the same bytes: the layout is a function of the value.
	b2, _ := EncodeRow(back, schema)
	if !bytes.Equal(b, b2) {
		t.Fatal("encoding the decoded row gave other bytes")
	}
}

func TestEncodeRowRefusesWhatDoesNotFit(t *testing.T) {
	schema := Struct(Field{Name: "n", Type: &Type{Name: "long"}}, Field{Name: "d", Type: &Type{Name: "decimal", Precision: 5, Scale: 2}})
	for name, o := range map[string]*Object{
		"wrong Go type":   {Names: []string{"n", "d"}, Values: []any{int32(1), nil}},
		"too few fields":  {Names: []string{"n"}, Values: []any{int64(1)}},
		"decimal too big": {Names: []string{"n", "d"}, Values: []any{int64(1), Decimal{Unscaled: big.NewInt(100000), Scale: 2}}},
		"other scale":     {Names: []string{"n", "d"}, Values: []any{int64(1), Decimal{Unscaled: big.NewInt(1), Scale: 1}}},
	} {
		_, err := EncodeRow(o, schema)
		var re *RowError
		if !errors.As(err, &re) {
			t.Errorf("%s: want a *RowError, got %v", name, err)
		}
	}
}

// TestCompressReadsBack: every codec's writer gives a stream its reader takes back, including
// the empty stream and several blocks.
func TestCompressReadsBack(t *testing.T) {
	payloads := map[string][]byte{"empty": {}, "small": []byte("state"), "blocks": bytes.Repeat([]byte("0123456789abcdef-"), 20000)}
	for _, codec := range []string{CodecLZ4, CodecZstd, CodecSnappy, CodecLZF} {
		for name, p := range payloads {
			var buf bytes.Buffer
			w, err := Compress(codec, &buf)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(p); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if name != "empty" && DetectCodec(buf.Bytes()) != codec {
				t.Errorf("%s %s: detected as %q", codec, name, DetectCodec(buf.Bytes()))
			}
			r, err := Decompress("f", codec, &buf)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("%s %s: %v", codec, name, err)
			}
			if !bytes.Equal(got, p) {
				t.Errorf("%s %s: read back %d bytes, wrote %d", codec, name, len(got), len(p))
			}
		}
	}
	if _, err := Compress("brotli", io.Discard); err == nil {
		t.Error("an unknown codec was accepted")
	}
}

// TestFileWriterRewritesRealFiles: every HDFS-backed state file of the fixtures, read and
// written again in its own codec, reads back as the same records.
func TestFileWriterRewritesRealFiles(t *testing.T) {
	files := append(realFiles(t, "*.delta"), realFiles(t, "*.snapshot")...)
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		codec := DetectCodec(data)
		recs, err := readAll(t, f, data)
		if err != nil || codec == "" {
			t.Fatalf("%s: %v", f, err)
		}
		var buf bytes.Buffer
		fw, err := NewFileWriter(codec, &buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Delete {
				err = fw.Delete(r.Key)
			} else {
				err = fw.Put(r.Key, r.Value)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		back, err := readAll(t, f, buf.Bytes())
		if err != nil {
			t.Fatalf("%s rewritten: %v", f, err)
		}
		if len(back) != len(recs) {
			t.Fatalf("%s: %d records back, %d written", f, len(back), len(recs))
		}
		for i := range recs {
			if !bytes.Equal(back[i].Key, recs[i].Key) || !bytes.Equal(back[i].Value, recs[i].Value) || back[i].Delete != recs[i].Delete {
				t.Fatalf("%s record %d differs", f, i)
			}
		}
		n++
	}
	if n < 50 {
		t.Fatalf("only %d files rewritten", n)
	}
}
