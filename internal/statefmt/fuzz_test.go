package statefmt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"testing"
)

func addRealSeeds(f *testing.F, pattern string) {
	for _, file := range realFiles(f, pattern) {
		if data, err := os.ReadFile(file); err == nil && len(data) < 1<<16 {
			f.Add(data)
		}
	}
}

// FuzzStateFile: decompressing and reading the records of any bytes never panics, and each
// error is a *Error.
func FuzzStateFile(f *testing.F) {
	addRealSeeds(f, "*.delta")
	addRealSeeds(f, "*.snapshot")
	addRealSeeds(f, "*.changelog")
	f.Add([]byte("LZ4Block"))
	f.Add(append([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}, make([]byte, 12)...))
	f.Add([]byte("ZV\x00\x00\x04\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, codec := range []string{CodecLZ4, CodecSnappy, CodecLZF, CodecZstd} {
			dr, err := Decompress("f", codec, bytes.NewReader(data))
			if err != nil {
				continue
			}
			rr := NewRecordReader("f", Delta, dr)
			for range 10000 {
				if _, err := rr.Next(); err != nil {
					if err != io.EOF {
						if _, ok := err.(*Error); !ok {
							t.Fatalf("%s: error of type %T: %v", codec, err, err)
						}
					}
					break
				}
			}
			dr.Close()
		}
	})
}

// FuzzRecords: the zero-copy path (a *bufio.Reader, small buffer so that records straddle it)
// reads exactly the records, offsets and errors of the copying path.
func FuzzRecords(f *testing.F) {
	var buf bytes.Buffer
	w := NewRecordWriter(&buf)
	_ = w.Put([]byte("key1"), []byte("value---"))
	_ = w.Delete([]byte("k2"))
	_ = w.Put(bytes.Repeat([]byte("k"), 40), bytes.Repeat([]byte("v"), 30))
	_ = w.Close()
	f.Add(buf.Bytes(), uint8(0))
	f.Add(buf.Bytes()[:20], uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		kind := []Kind{Delta, Snapshot, Changelog}[int(k)%3]
		slow := NewRecordReader("f", kind, bytes.NewReader(data))
		fast := NewRecordReader("f", kind, bufio.NewReaderSize(bytes.NewReader(data), 16))
		for range 1000 {
			a, aerr := slow.Next()
			b, berr := fast.Next()
			if (aerr == nil) != (berr == nil) || (aerr != nil && aerr.Error() != berr.Error()) {
				t.Fatalf("errors differ: copying %v, zero-copy %v", aerr, berr)
			}
			if aerr != nil {
				return
			}
			if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || a.Delete != b.Delete || a.Offset != b.Offset {
				t.Fatalf("records differ: %+v vs %+v", a, b)
			}
		}
	})
}

// FuzzDecodeRow: decoding any bytes against a schema of every kind of field never panics.
func FuzzDecodeRow(f *testing.F) {
	schema := Struct(
		Field{Name: "s", Type: &Type{Name: "string"}},
		Field{Name: "l", Type: &Type{Name: "long"}},
		Field{Name: "big", Type: &Type{Name: "decimal", Precision: 30, Scale: 2}},
		Field{Name: "arr", Type: &Type{Name: "array", Elem: &Type{Name: "string"}}},
		Field{Name: "ai", Type: &Type{Name: "array", Elem: &Type{Name: "integer"}}},
		Field{Name: "st", Type: Struct(Field{Name: "x", Type: &Type{Name: "binary"}})},
		Field{Name: "m", Type: &Type{Name: "map", Key: &Type{Name: "string"}, Value: &Type{Name: "double"}}},
	)
	f.Add(make([]byte, 64))
	w := newRow(7)
	w.varlen(0, []byte("abc"))
	w.varlen(3, longArray(1, 2))
	f.Add(w.bytes())
	flat := Struct(
		Field{Name: "b", Type: &Type{Name: "boolean"}}, Field{Name: "y", Type: &Type{Name: "byte"}},
		Field{Name: "h", Type: &Type{Name: "short"}}, Field{Name: "i", Type: &Type{Name: "integer"}},
		Field{Name: "d", Type: &Type{Name: "date"}}, Field{Name: "ts", Type: &Type{Name: "timestamp"}},
		Field{Name: "f", Type: &Type{Name: "float"}}, Field{Name: "x", Type: &Type{Name: "double"}},
		Field{Name: "dec", Type: &Type{Name: "decimal", Precision: 10, Scale: 3}},
		Field{Name: "dec20", Type: &Type{Name: "decimal", Precision: 20, Scale: 2}},
		Field{Name: "s", Type: &Type{Name: "string"}}, Field{Name: "n", Type: &Type{Name: "null"}},
	)
	for _, seed := range []uint64{0, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x00000F0000000003, 1700000000123456} {
		row := make([]byte, 8+12*8+16)
		for i := range 12 {
			binary.LittleEndian.PutUint64(row[8+i*8:], seed+uint64(i))
		}
		binary.LittleEndian.PutUint64(row[8+9*8:], uint64(8+12*8)<<32|uint64(seed%9))   // dec20
		binary.LittleEndian.PutUint64(row[8+10*8:], uint64(8+12*8)<<32|uint64(seed%17)) // s
		copy(row[8+12*8:], "a\"\x01\xff\u00e9z")
		f.Add(row)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// AppendRowJSON renders exactly what AppendJSON of DecodeRow renders, and fails where
		// it fails.
		for _, sc := range []*Type{schema, flat} {
			o, err := DecodeRow(data, sc)
			got, gerr := AppendRowJSON([]byte("x"), data, sc)
			if (err == nil) != (gerr == nil) {
				t.Fatalf("DecodeRow error %v, AppendRowJSON error %v", err, gerr)
			}
			if err == nil {
				if want := AppendJSON([]byte("x"), o); !bytes.Equal(got, want) {
					t.Fatalf("AppendRowJSON %s\nAppendJSON    %s", got, want)
				}
			}
		}
	})
}

// FuzzSchema: parsing any bytes as a schema file never panics.
func FuzzSchema(f *testing.F) {
	for _, file := range realFiles(f, "_metadata/schema") {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("\x00\x02v1\x00\x02{}\x00\x02{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema("schema", data)
		if err == nil {
			for _, c := range s.Families {
				_ = c.Key.String() + c.Value.String()
			}
		}
	})
}

// FuzzRocksDBZip: parsing any bytes as a RocksDB checkpoint zip never panics.
func FuzzRocksDBZip(f *testing.F) {
	addRealSeeds(f, "*.zip")
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseRocksDBZip("1.zip", data)
	})
}
