package statefmt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// realFiles are state files real Spark wrote (testdata/spark-state, see its README).
func realFiles(t testing.TB, pattern string) []string {
	t.Helper()
	var out []string
	for _, p := range []string{"*/*/checkpoint/state/*/*/" + pattern, "*/*/checkpoint/state/*/*/*/" + pattern} {
		m, err := filepath.Glob(filepath.Join("../../testdata/spark-state", p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

func readAll(t testing.TB, file string, data []byte) ([]Record, error) {
	t.Helper()
	kind := Delta
	switch {
	case strings.HasSuffix(file, ".snapshot"):
		kind = Snapshot
	case strings.HasSuffix(file, ".changelog"):
		kind = Changelog
	}
	codec := DetectCodec(data)
	if codec == "" {
		return nil, errors.New("no codec detected")
	}
	dr, err := Decompress(file, codec, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer dr.Close()
	var src io.Reader = dr
	if kind == Changelog {
		br := bufio.NewReader(dr)
		h, err := ReadTypedChangelogHeader(file, br)
		if err != nil {
			return nil, err
		}
		if h.Typed() {
			return readTyped(file, br)
		}
		src = br
	}
	rr := NewRecordReader(file, kind, src)
	var recs []Record
	for {
		r, err := rr.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		recs = append(recs, r)
	}
}

// readTyped reads the records of a v2/v4 changelog (transformWithState's), merges as puts.
func readTyped(file string, r io.Reader) ([]Record, error) {
	tr := NewTypedRecordReader(file, r, 0)
	var recs []Record
	for {
		rec, err := tr.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, Record{Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value), Delete: rec.Type == RecordDelete, Offset: rec.Offset})
	}
}

func TestRealStateFilesDecode(t *testing.T) {
	files := append(realFiles(t, "*.delta"), realFiles(t, "*.snapshot")...)
	files = append(files, realFiles(t, "*.changelog")...)
	if len(files) == 0 {
		t.Fatal("no state files under testdata/spark-state")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A batch that changed nothing writes a delta with no records: only errors count.
		if _, err := readAll(t, f, data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestRealSchemasParse(t *testing.T) {
	files := append(realFiles(t, "_metadata/schema"), realFiles(t, "*/_metadata/schema")...)
	if len(files) == 0 {
		t.Fatal("no schema files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSchema(f, data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.Version < 1 || len(s.Families) != 1 || len(s.Families[0].Key.Fields) == 0 {
			t.Errorf("%s: unexpected schema %+v", f, s)
		}
	}
}

func firstDelta(t *testing.T) (string, []byte) {
	t.Helper()
	for _, f := range realFiles(t, "*.delta") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if DetectCodec(data) == CodecLZ4 {
			return f, data
		}
	}
	t.Fatal("no lz4 delta file")
	return "", nil
}

func TestTruncatedDeltaNamesFileAndOffset(t *testing.T) {
	f, data := firstDelta(t)
	// The end block after the -1 marker is never read (as in Spark), so cuts are inside the data.
	for _, cut := range []int{len(data) - 22, 30, 8} {
		_, err := readAll(t, f, data[:cut])
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("cut at %d: want *Error, got %v", cut, err)
		}
		if se.File != f || !strings.Contains(err.Error(), f) {
			t.Errorf("cut at %d: error does not name the file: %v", cut, err)
		}
	}
}

func TestCorruptLZ4BlockFailsChecksum(t *testing.T) {
	f, data := firstDelta(t)
	bad := bytes.Clone(data)
	bad[lz4HeaderLen+3] ^= 0x55
	_, err := readAll(t, f, bad)
	if err == nil {
		t.Fatal("a flipped byte went unnoticed")
	}
}

// rowWriter builds UnsafeRows the way Spark's UnsafeRowWriter lays them out.
type rowWriter struct {
	n     int
	fixed []byte
	vars  []byte
}

func newRow(n int) *rowWriter {
	return &rowWriter{n: n, fixed: make([]byte, (bitsetWords(n)+n)*8)}
}

func (w *rowWriter) slot(i int) []byte { return w.fixed[(bitsetWords(w.n)+i)*8:] }
func (w *rowWriter) null(i int)        { w.fixed[i/8] |= 1 << (uint(i) % 8) }
func (w *rowWriter) long(i int, v int64) {
	binary.LittleEndian.PutUint64(w.slot(i), uint64(v))
}
func (w *rowWriter) varlen(i int, b []byte) {
	off := len(w.fixed) + len(w.vars)
	binary.LittleEndian.PutUint64(w.slot(i), uint64(off)<<32|uint64(len(b)))
	w.vars = append(w.vars, b...)
	for len(w.vars)%8 != 0 {
		w.vars = append(w.vars, 0)
	}
}
func (w *rowWriter) bytes() []byte { return append(bytes.Clone(w.fixed), w.vars...) }

func longArray(vals ...int64) []byte {
	n := len(vals)
	b := make([]byte, 8+bitsetWords(n)*8+8*n)
	binary.LittleEndian.PutUint64(b, uint64(n))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8+bitsetWords(n)*8+8*i:], uint64(v))
	}
	return b
}

func TestDecodeRowAllTypes(t *testing.T) {
	schema := Struct(
		Field{Name: "s", Type: &Type{Name: "string"}},
		Field{Name: "i", Type: &Type{Name: "integer"}},
		Field{Name: "l", Type: &Type{Name: "long"}},
		Field{Name: "d", Type: &Type{Name: "double"}},
		Field{Name: "b", Type: &Type{Name: "boolean"}},
		Field{Name: "ts", Type: &Type{Name: "timestamp"}},
		Field{Name: "day", Type: &Type{Name: "date"}},
		Field{Name: "dec", Type: &Type{Name: "decimal", Precision: 10, Scale: 2}},
		Field{Name: "big", Type: &Type{Name: "decimal", Precision: 38, Scale: 3}},
		Field{Name: "arr", Type: &Type{Name: "array", Elem: &Type{Name: "long"}}},
		Field{Name: "st", Type: Struct(Field{Name: "x", Type: &Type{Name: "long"}})},
		Field{Name: "n", Type: &Type{Name: "string"}},
		Field{Name: "m", Type: &Type{Name: "map", Key: &Type{Name: "long"}, Value: &Type{Name: "long"}}},
	)
	w := newRow(13)
	w.varlen(0, []byte("héllo"))
	w.long(1, 7)
	w.long(2, -5)
	binary.LittleEndian.PutUint64(w.slot(3), math.Float64bits(2.5))
	w.slot(4)[0] = 1
	w.long(5, 1704067200123000)
	w.long(6, 19758)
	w.long(7, -1234)
	bn := new(big.Int).Neg(new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil))
	bb := bn.Bytes()
	// two's complement of a negative number, as BigInteger.toByteArray writes it
	tc := new(big.Int).Add(new(big.Int).Lsh(bigOne(), uint(8*(len(bb)+1))), bn).Bytes()
	w.varlen(8, tc)
	w.varlen(9, longArray(1, 2, 3))
	inner := newRow(1)
	inner.long(0, 42)
	w.varlen(10, inner.bytes())
	w.null(11)
	keys, vals := longArray(1, 2), longArray(10, 20)
	m := make([]byte, 8)
	binary.LittleEndian.PutUint64(m, uint64(len(keys)))
	w.varlen(12, append(append(m, keys...), vals...))
	o, err := DecodeRow(w.bytes(), schema)
	if err != nil {
		t.Fatal(err)
	}
	got := string(AppendJSON(nil, o))
	want := `{"s":"héllo","i":7,"l":-5,"d":2.5,"b":true,"ts":"2024-01-01T00:00:00.123Z","day":"2024-02-05","dec":-12.34,"big":-100000000000000000.000,"arr":[1,2,3],"st":{"x":42},"n":null,"m":{"1":10,"2":20}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func bigOne() *big.Int { return big.NewInt(1) }

func TestDecodeRowRejectsShortRows(t *testing.T) {
	schema := Struct(Field{Name: "s", Type: &Type{Name: "string"}}, Field{Name: "l", Type: &Type{Name: "long"}})
	w := newRow(2)
	w.varlen(0, []byte("abc"))
	b := w.bytes()
	for _, cut := range []int{0, 8, 16, len(b) - 8} {
		if _, err := DecodeRow(b[:cut], schema); err == nil {
			t.Errorf("cut at %d: no error", cut)
		}
	}
}

func TestRecordsDeleteAndEndMarker(t *testing.T) {
	var buf bytes.Buffer
	put := func(v int32) { _ = binary.Write(&buf, binary.BigEndian, v) }
	put(3)
	buf.WriteString("abc")
	put(2)
	buf.WriteString("xy")
	put(1)
	buf.WriteString("k")
	put(-1)
	put(-1)
	rr := NewRecordReader("f.delta", Delta, bytes.NewReader(buf.Bytes()))
	r1, err := rr.Next()
	if err != nil || string(r1.Key) != "abc" || string(r1.Value) != "xy" || r1.Delete {
		t.Fatalf("first record %+v %v", r1, err)
	}
	r2, err := rr.Next()
	if err != nil || string(r2.Key) != "k" || !r2.Delete || r2.Offset != 13 {
		t.Fatalf("second record %+v %v", r2, err)
	}
	if _, err := rr.Next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
	// The same bytes as a snapshot: a delete is Spark's CANNOT_READ_SNAPSHOT_FILE_VALUE_SIZE.
	rr = NewRecordReader("f.snapshot", Snapshot, bytes.NewReader(buf.Bytes()))
	_, _ = rr.Next()
	_, err = rr.Next()
	var se *Error
	if !errors.As(err, &se) || se.Problem != ProblemValueSize || se.Offset != 18 {
		t.Fatalf("want a value size error at 18, got %v", err)
	}
	// A key size of -7.
	rr = NewRecordReader("f.delta", Delta, bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xf9}))
	_, err = rr.Next()
	if !errors.As(err, &se) || se.Problem != ProblemKeySize || se.Size != -7 {
		t.Fatalf("want a key size error, got %v", err)
	}
	// No end marker.
	rr = NewRecordReader("f.delta", Delta, bytes.NewReader(buf.Bytes()[:22]))
	for err == nil || errors.Is(err, io.EOF) == false && se.Problem != ProblemTruncated {
		_, err = rr.Next()
		if err != nil {
			break
		}
	}
	if !errors.As(err, &se) || se.Problem != ProblemTruncated {
		t.Fatalf("want truncated, got %v", err)
	}
}

func TestXXH32KnownValues(t *testing.T) {
	// Reference values of XXH32 (seed 0) from the xxHash test suite.
	for in, want := range map[string]uint32{"": 0x02CC5D05, "a": 0x550D7456, "abc": 0x32D153FF, "Nobody inspects the spammish repetition": 0xE2293B2F} {
		if got := xxh32([]byte(in), 0); got != want {
			t.Errorf("xxh32(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func TestLZFDecode(t *testing.T) {
	// "abcabcabc": literal run of 3, then a back-reference of length 6 at distance 3.
	in := []byte{2, 'a', 'b', 'c', 4 << 5, 2}
	out, err := lzfDecode(in, nil, 9)
	if err != nil || string(out) != "abcabcabc" {
		t.Fatalf("got %q %v", out, err)
	}
	if _, err := lzfDecode(in[:5], nil, 9); err == nil {
		t.Fatal("truncated block accepted")
	}
}

// TestAppendFloatIntegral: integral values below 1e7 render as strconv's 'f' with one decimal
// (Java's 3.0), through the integer fast path.
func TestAppendFloatIntegral(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 9999999, -9999999, 1234567, 42, -42}
	for i := 0; i < 100000; i++ {
		vals = append(vals, float64(i*97-4_000_000))
	}
	for _, v := range vals {
		for _, bits := range []int{32, 64} {
			x := v
			if bits == 32 {
				x = float64(float32(v))
			}
			if x != math.Trunc(x) || math.Abs(x) >= 1e7 {
				continue
			}
			got := string(appendFloat(nil, x, bits))
			if want := strconv.FormatFloat(x, 'f', 1, bits); got != want {
				t.Fatalf("%v (%d bits): %s, want %s", x, bits, got, want)
			}
		}
	}
}

// Spark's JSON writer renders timestamp_ntz without a zone (timestampNTZFormatInWrite,
// yyyy-MM-dd'T'HH:mm:ss[.SSS]) and timestamp with the session zone's offset (UTC: "Z").
func TestTimestampNTZHasNoZone(t *testing.T) {
	schema := Struct(
		Field{Name: "ntz", Type: &Type{Name: "timestamp_ntz"}},
		Field{Name: "ltz", Type: &Type{Name: "timestamp"}},
	)
	w := newRow(2)
	w.long(0, 1700000000000000)
	w.long(1, 1700000000000000)
	want := `{"ntz":"2023-11-14T22:13:20.000","ltz":"2023-11-14T22:13:20.000Z"}`
	got, err := AppendRowJSON(nil, w.bytes(), schema)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("AppendRowJSON: got %s, want %s", got, want)
	}
	o, err := DecodeRow(w.bytes(), schema)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(AppendJSON(nil, o)); got != want {
		t.Errorf("AppendJSON: got %s, want %s", got, want)
	}
	if got := Text(o.Values[0]); got != "2023-11-14T22:13:20.000" {
		t.Errorf("Text: %s", got)
	}
}
