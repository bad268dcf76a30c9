package statefmt

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealSchemasV3Parse parses every transformWithState schema file Spark 4.0.2 and 4.1.4
// wrote: its column families with their key encoders and the map state's user key.
func TestRealSchemasV3Parse(t *testing.T) {
	files := realFiles(t, "default/*")
	if len(files) == 0 {
		t.Fatal("no v3 schema files")
	}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue // Hadoop's .crc files
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSchema(f, data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.Version != 3 {
			t.Errorf("%s: version %d", f, s.Version)
		}
		m := s.Family("mapState")
		if m == nil || m.UserKey == nil || m.UserKey.String() != "struct<value:string>" || m.KeyEncoder.Type != KeyEncoderPrefixScan || m.KeyEncoder.NumColsPrefixKey != 1 {
			t.Errorf("%s: map state family %+v", f, m)
		}
		value := "struct<value:bigint>"
		if strings.Contains(f, "tws-ttl") {
			value = "struct<value:struct<value:bigint>,ttlExpirationMs:bigint>" // with a TTL, the value keeps its expiry
		}
		key := "struct<value:string>" // Scala: the grouping key's encoder
		if strings.Contains(f, "tws-pandas") {
			key = "struct<k:string>" // Python: the grouping columns
		}
		if c := s.Family("countState"); c == nil || c.KeyString != key || c.ValueString != value || c.UserKey != nil || c.KeyEncoder.Type != KeyEncoderNoPrefix {
			t.Errorf("%s: value state family %+v", f, c)
		}
		if r := s.Family("$procTimers_timestampToKey"); r == nil || r.KeyEncoder.Type != KeyEncoderRangeScan || len(r.KeyEncoder.OrderingOrdinals) != 1 {
			t.Errorf("%s: timer family %+v", f, r)
		}
		// A cut file names where it ends.
		if _, err := ParseSchema(f, data[:len(data)-3]); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s cut: %v", f, err)
		}
	}
}

func typedStream(recs ...[]byte) []byte { return bytes.Join(recs, nil) }

func be32(n int32) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

// TestTypedRecords reads put, merge and delete records and the end record, and names the
// offset of a bad type byte and of a stream cut before its end record.
func TestTypedRecords(t *testing.T) {
	put := typedStream([]byte{0x01}, be32(2), []byte("k1"), be32(1), []byte("v"))
	merge := typedStream([]byte{0x11}, be32(2), []byte("k1"), be32(2), []byte("w2"))
	del := typedStream([]byte{0x10}, be32(2), []byte("k2"), be32(-1))
	all := typedStream(put, merge, del, []byte{0x00})
	tr := NewTypedRecordReader("f", bytes.NewReader(all), 4)
	var got []string
	for {
		r, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Type.String()+":"+string(r.Key)+"="+string(r.Value))
	}
	if strings.Join(got, " ") != "put:k1=v merge:k1=w2 delete:k2=" {
		t.Errorf("records %v", got)
	}
	bad := typedStream(put, []byte{0x05})
	tr = NewTypedRecordReader("f", bytes.NewReader(bad), 4)
	_, _ = tr.Next()
	if _, err := tr.Next(); err == nil || !strings.Contains(err.Error(), "f: offset 16: expected a record type") {
		t.Errorf("bad type: %v", err)
	}
	tr = NewTypedRecordReader("f", bufio.NewReader(bytes.NewReader(put)), 0)
	_, _ = tr.Next()
	_, err := tr.Next()
	var se *Error
	if !errors.As(err, &se) || se.Problem != ProblemTruncated || se.Offset != 12 || !errors.Is(err, ErrNoEndRecord) {
		t.Errorf("cut stream: %v", err)
	}
}

func TestTWSKeyParts(t *testing.T) {
	row := []byte{0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0, 's', '2', 0, 0, 0, 0, 0, 0}
	if s := UnsafeRowString(row); s != "[0,1000000002,3273]" {
		t.Errorf("UnsafeRowString %s", s)
	}
	// prefix scan: LE length 5, version byte + 4-byte row, version byte + rest
	key := []byte{5, 0, 0, 0, 0, 'a', 'b', 'c', 'd', 0, 'r'}
	first, rest, err := SplitKey(&KeyEncoder{Type: KeyEncoderPrefixScan, NumColsPrefixKey: 1}, key)
	if err != nil || string(first) != "abcd" || string(rest) != "r" {
		t.Errorf("SplitKey %q %q %v", first, rest, err)
	}
	if _, _, err := SplitKey(&KeyEncoder{Type: KeyEncoderPrefixScan}, []byte{9, 0, 0, 0, 0}); err == nil {
		t.Error("a prefix longer than the key passed")
	}
	var vals []string
	multi := []byte{3, 0, 0, 0, 0, 'x', 'y', ',', 2, 0, 0, 0, 0, 'z'}
	if err := EachValue(multi, true, func(v []byte) error { vals = append(vals, string(v)); return nil }); err != nil || strings.Join(vals, "|") != "xy|z" {
		t.Errorf("EachValue %v %v", vals, err)
	}
	if err := EachValue([]byte{9, 0, 0, 0, 0}, true, func([]byte) error { return nil }); err == nil {
		t.Error("a value past the end passed")
	}
}

func FuzzTypedRecords(f *testing.F) {
	f.Add(typedStream([]byte{0x01}, be32(2), []byte("k1"), be32(1), []byte("v"), []byte{0x11}, be32(1), []byte("k"), be32(0), []byte{0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := NewTypedRecordReader("f", bytes.NewReader(b), 0)
		for range 1000 {
			if _, err := tr.Next(); err != nil {
				return
			}
		}
	})
}

func FuzzSchemaV3(f *testing.F) {
	for _, fl := range []string{"../../testdata/spark-state/4.1.4/tws/checkpoint/state/0/_stateSchema/default"} {
		ents, _ := os.ReadDir(fl)
		for _, e := range ents {
			if b, err := os.ReadFile(fl + "/" + e.Name()); err == nil && !strings.HasPrefix(e.Name(), ".") {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseSchema("f", b) })
}

// TestEachValueMergeOperatorV2: with mergeOperatorVersion 2 (Spark 4.2) the values of one put
// follow each other without a delimiter and RocksDB's merge puts ',' between operands; a size
// whose first byte is ',' (44) must not be taken for a delimiter.
func TestEachValueMergeOperatorV2(t *testing.T) {
	val := func(n int, fill byte) []byte {
		b := []byte{byte(n), 0, 0, 0, 0}
		for range n - 1 {
			b = append(b, fill)
		}
		return b
	}
	a, c := val(9, 'a'), val(44, 'c') // c's size starts with ','
	for name, tc := range map[string]struct {
		b    []byte
		want []string
	}{
		"put":         {append(append([]byte{}, a...), c...), []string{"aaaaaaaa", strings.Repeat("c", 43)}},
		"merged":      {append(append(append([]byte{}, a...), ','), c...), []string{"aaaaaaaa", strings.Repeat("c", 43)}},
		"put, merged": {append(append(append(append([]byte{}, c...), a...), ','), a...), []string{strings.Repeat("c", 43), "aaaaaaaa", "aaaaaaaa"}},
		"one value":   {a, []string{"aaaaaaaa"}},
	} {
		var got []string
		if err := EachValue(tc.b, false, func(v []byte) error { got = append(got, string(v)); return nil }); err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
	if err := EachValue(append(append([]byte{}, a...), 1, 2), false, func([]byte) error { return nil }); err == nil {
		t.Error("trailing bytes: no error")
	}
}
