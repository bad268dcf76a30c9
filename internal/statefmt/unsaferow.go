package statefmt

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf8"
)

// Values decoded from UnsafeRows. A row is an *Object; the leaves are nil (SQL NULL), bool,
// int8, int16, int32, int64, float32, float64, string, []byte, Date, Timestamp, Decimal, and
// containers []any (array) and *Map.

// Object is a struct value: field names and values in schema order.
type Object struct {
	Names  []string
	Values []any
}

// Map is a map value: keys and values in storage order.
type Map struct {
	Keys   []any
	Values []any
}

// Date is days since 1970-01-01.
type Date int32

// Timestamp is microseconds since the epoch, UTC (timestamp).
type Timestamp int64

// TimestampNTZ is a timestamp without time zone (timestamp_ntz): microseconds since
// 1970-01-01T00:00:00 local time, rendered without a zone.
type TimestampNTZ int64

// Decimal is an unscaled integer and a scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

// String renders the date as yyyy-MM-dd.
func (d Date) String() string {
	return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
}

// String renders the timestamp the way Spark's JSON writer does in UTC:
// yyyy-MM-dd'T'HH:mm:ss.SSS and the zone offset ("Z").
func (t Timestamp) String() string {
	sec := int64(t) / 1e6
	us := int64(t) % 1e6
	if us < 0 {
		sec--
		us += 1e6
	}
	return time.Unix(sec, us*1000).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// String renders the timestamp the way Spark's JSON writer does for timestamp_ntz
// (JSONOptions.timestampNTZFormatInWrite, yyyy-MM-dd'T'HH:mm:ss[.SSS]): no zone.
func (t TimestampNTZ) String() string {
	sec := int64(t) / 1e6
	us := int64(t) % 1e6
	if us < 0 {
		sec--
		us += 1e6
	}
	return time.Unix(sec, us*1000).UTC().Format("2006-01-02T15:04:05.000")
}

// String renders the decimal with its scale ("12.30").
func (d Decimal) String() string {
	s := d.Unscaled.String()
	if d.Scale == 0 {
		return s
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	for len(s) <= d.Scale {
		s = "0" + s
	}
	s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// RowError is an UnsafeRow that does not fit its schema.
type RowError struct {
	// At is the byte offset inside the row.
	At     int
	Reason string
}

func (e *RowError) Error() string { return fmt.Sprintf("row byte %d: %s", e.At, e.Reason) }

// DecodeRow decodes an UnsafeRow of schema t (a struct).
func DecodeRow(b []byte, t *Type) (*Object, error) {
	if t == nil || t.Name != "struct" {
		return nil, &RowError{Reason: "the schema is not a struct"}
	}
	return decodeStruct(b, 0, len(b), t)
}

func bitsetWords(n int) int { return (n + 63) / 64 }

func decodeStruct(b []byte, base, size int, t *Type) (*Object, error) {
	n := len(t.Fields)
	words := bitsetWords(n)
	if size < 0 || base < 0 || base+size > len(b) || (words+n)*8 > size {
		return nil, &RowError{At: base, Reason: fmt.Sprintf("a row of %d fields needs %d bytes, has %d", n, (words+n)*8, size)}
	}
	o := &Object{Names: make([]string, n), Values: make([]any, n)}
	for i, f := range t.Fields {
		o.Names[i] = f.Name
		if b[base+i/64*8+(i%64)/8]&(1<<(uint(i)%8)) != 0 {
			continue // null
		}
		at := base + (words+i)*8
		v, err := decodeSlot(b, base, size, at, f.Type)
		if err != nil {
			return nil, err
		}
		o.Values[i] = v
	}
	return o, nil
}

// decodeSlot reads the value of type t whose 8-byte slot is at b[at:]; variable-length
// values point into the region [base, base+size).
func decodeSlot(b []byte, base, size, at int, t *Type) (any, error) {
	w := b[at : at+8]
	switch t.Name {
	case "boolean":
		return w[0] != 0, nil
	case "byte":
		return int8(w[0]), nil
	case "short":
		return int16(binary.LittleEndian.Uint16(w)), nil
	case "integer":
		return int32(binary.LittleEndian.Uint32(w)), nil
	case "date":
		return Date(int32(binary.LittleEndian.Uint32(w))), nil
	case "long":
		return int64(binary.LittleEndian.Uint64(w)), nil
	case "timestamp":
		return Timestamp(int64(binary.LittleEndian.Uint64(w))), nil
	case "timestamp_ntz":
		return TimestampNTZ(int64(binary.LittleEndian.Uint64(w))), nil
	case "float":
		return math.Float32frombits(binary.LittleEndian.Uint32(w)), nil
	case "double":
		return math.Float64frombits(binary.LittleEndian.Uint64(w)), nil
	case "null":
		return nil, nil
	case "decimal":
		if t.Precision <= 18 {
			return Decimal{Unscaled: big.NewInt(int64(binary.LittleEndian.Uint64(w))), Scale: t.Scale}, nil
		}
	}
	ref := binary.LittleEndian.Uint64(w)
	off, n := int(ref>>32), int(uint32(ref))
	if off < 0 || n < 0 || off+n > size {
		return nil, &RowError{At: at - base, Reason: fmt.Sprintf("a %s at offset %d size %d outside the row of %d bytes", t, off, n, size)}
	}
	p := base + off
	switch t.Name {
	case "string":
		s := b[p : p+n]
		if !utf8.Valid(s) {
			return string([]rune(string(s))), nil // Spark replaces invalid bytes too
		}
		return string(s), nil
	case "binary":
		return append([]byte(nil), b[p:p+n]...), nil
	case "decimal":
		u := new(big.Int).SetBytes(b[p : p+n])
		if n > 0 && b[p]&0x80 != 0 {
			u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
		}
		return Decimal{Unscaled: u, Scale: t.Scale}, nil
	case "struct":
		return decodeStruct(b, p, n, t)
	case "array":
		return decodeArray(b, p, n, t.Elem)
	case "map":
		if n < 8 {
			return nil, &RowError{At: off, Reason: "a map shorter than its 8-byte header"}
		}
		kl := int(int64(binary.LittleEndian.Uint64(b[p:])))
		if kl < 0 || 8+kl > n {
			return nil, &RowError{At: off, Reason: fmt.Sprintf("a map key array of %d bytes in %d", kl, n)}
		}
		keys, err := decodeArray(b, p+8, kl, t.Key)
		if err != nil {
			return nil, err
		}
		vals, err := decodeArray(b, p+8+kl, n-8-kl, t.Value)
		if err != nil {
			return nil, err
		}
		if len(keys) != len(vals) {
			return nil, &RowError{At: off, Reason: fmt.Sprintf("a map of %d keys and %d values", len(keys), len(vals))}
		}
		return &Map{Keys: keys, Values: vals}, nil
	}
	return nil, &RowError{At: at - base, Reason: "unsupported type " + t.String()}
}

// decodeArray reads an UnsafeArrayData: the element count (8 bytes), the null bits, then the
// elements (fixed width, or 8-byte offset-and-size words).
func decodeArray(b []byte, base, size int, elem *Type) ([]any, error) {
	if size < 8 {
		return nil, &RowError{At: base, Reason: "an array shorter than its 8-byte header"}
	}
	cnt := int64(binary.LittleEndian.Uint64(b[base:]))
	if cnt < 0 || cnt > int64(size) {
		return nil, &RowError{At: base, Reason: fmt.Sprintf("an array of %d elements in %d bytes", cnt, size)}
	}
	n := int(cnt)
	hdr := 8 + bitsetWords(n)*8
	es := elem.fixedSize()
	slot := es
	if es == 0 {
		slot = 8
	}
	if hdr+n*slot > size {
		return nil, &RowError{At: base, Reason: fmt.Sprintf("an array of %d elements needs %d bytes, has %d", n, hdr+n*slot, size)}
	}
	out := make([]any, n)
	var tmp [8]byte
	for i := range n {
		if b[base+8+i/8]&(1<<(uint(i)%8)) != 0 {
			continue
		}
		at := base + hdr + i*slot
		if es == 0 {
			v, err := decodeSlot(b, base, size, at, elem)
			if err != nil {
				return nil, err
			}
			out[i] = v
			continue
		}
		// A fixed-width element narrower than 8 bytes: widen it into a slot.
		tmp = [8]byte{}
		copy(tmp[:], b[at:at+es])
		v, err := decodeSlot(tmp[:], 0, 8, 0, elem)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// AppendJSON appends v as JSON the way Spark's JSON writer renders it: timestamps and dates as
// strings, decimals as plain numbers with their scale, binary as base64, non-finite doubles
// as strings, maps as objects. Null fields of objects are kept (as null).
func AppendJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int8:
		return strconv.AppendInt(dst, int64(x), 10)
	case int16:
		return strconv.AppendInt(dst, int64(x), 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float32:
		return appendFloat(dst, float64(x), 32)
	case float64:
		return appendFloat(dst, x, 64)
	case string:
		return appendJSONString(dst, x)
	case []byte:
		return appendJSONString(dst, base64.StdEncoding.EncodeToString(x))
	case Date:
		return appendDate(append(dst, '"'), x, true)
	case Timestamp:
		return appendTimestamp(append(dst, '"'), x, true)
	case TimestampNTZ:
		return appendTimestampNTZ(append(dst, '"'), x, true)
	case Decimal:
		return append(dst, x.String()...)
	case *Object:
		dst = append(dst, '{')
		for i, n := range x.Names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, n)
			dst = append(dst, ':')
			dst = AppendJSON(dst, x.Values[i])
		}
		return append(dst, '}')
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		return append(dst, ']')
	case *Map:
		dst = append(dst, '{')
		for i, k := range x.Keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, Text(k))
			dst = append(dst, ':')
			dst = AppendJSON(dst, x.Values[i])
		}
		return append(dst, '}')
	}
	return appendJSONString(dst, fmt.Sprint(v))
}

func appendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e7 {
		// Java prints 3.0: the integer and ".0" (what AppendFloat 'f' 1 writes, without its
		// float machinery); -0.0 keeps its sign.
		if f == 0 && math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(appendInt(dst, int64(f)), '.', '0')
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}

// Text renders v as a table cell.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case Date:
		return x.String()
	case Timestamp:
		return x.String()
	case TimestampNTZ:
		return x.String()
	case Decimal:
		return x.String()
	case float32, float64, *Object, []any, *Map:
		return string(AppendJSON(nil, v))
	}
	return fmt.Sprint(v)
}
