package statefmt

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// EncodeRow lays o out as an UnsafeRow of schema t (a struct), byte for byte as Spark's
// generated UnsafeProjection writes it: a null bit set, one 8-byte slot per field (narrow
// values zero-extended, nulls zeroed), then each variable-length value in field order,
// padded with zeros to a word. It is DecodeRow's inverse: EncodeRow(DecodeRow(b)) == b for
// every row Spark wrote (TestEncodeRowRealFiles).
func EncodeRow(o *Object, t *Type) ([]byte, error) {
	if t == nil || t.Name != "struct" {
		return nil, &RowError{Reason: "the schema is not a struct"}
	}
	return appendStruct(nil, o, t)
}

// appendStruct appends the struct o of type t to dst; offsets inside it are relative to its
// own start, as UnsafeRowWriter's are.
func appendStruct(dst []byte, o *Object, t *Type) ([]byte, error) {
	n := len(t.Fields)
	if o == nil || len(o.Values) != n {
		got := 0
		if o != nil {
			got = len(o.Values)
		}
		return nil, &RowError{Reason: fmt.Sprintf("a value of %d fields for a struct of %d", got, n)}
	}
	base := len(dst)
	words := bitsetWords(n)
	dst = append(dst, make([]byte, (words+n)*8)...)
	for i, f := range t.Fields {
		slot := base + (words+i)*8
		v := o.Values[i]
		if v == nil {
			dst[base+i/8] |= 1 << (uint(i) % 8)
			if isBigDecimal(f.Type) {
				// Spark reserves the 16 bytes of a wide decimal even when it is null, and
				// keeps its offset in the slot (size 0) for a later update.
				off := len(dst) - base
				dst = append(dst, make([]byte, 16)...)
				binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32)
			}
			continue
		}
		if fixed, err := putFixed(dst[slot:slot+8], v, f.Type); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		} else if fixed {
			continue
		}
		off := len(dst) - base
		var err error
		var size int
		dst, size, err = appendVariable(dst, v, f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		binary.LittleEndian.PutUint64(dst[slot:], uint64(off)<<32|uint64(size))
	}
	return dst, nil
}

func isBigDecimal(t *Type) bool { return t.Name == "decimal" && t.Precision > 18 }

// putFixed writes a value that lives in its slot; it reports false for the types whose
// slot holds an offset and a size.
func putFixed(w []byte, v any, t *Type) (bool, error) {
	bad := func() (bool, error) {
		return false, &RowError{Reason: fmt.Sprintf("a %T for a %s", v, t)}
	}
	switch t.Name {
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		if b {
			w[0] = 1
		}
	case "byte":
		x, ok := v.(int8)
		if !ok {
			return bad()
		}
		w[0] = byte(x)
	case "short":
		x, ok := v.(int16)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint16(w, uint16(x))
	case "integer":
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint32(w, uint32(x))
	case "date":
		x, ok := v.(Date)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint32(w, uint32(x))
	case "long":
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint64(w, uint64(x))
	case "timestamp":
		x, ok := v.(Timestamp)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint64(w, uint64(x))
	case "timestamp_ntz":
		x, ok := v.(TimestampNTZ)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint64(w, uint64(x))
	case "float":
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint32(w, math.Float32bits(x))
	case "double":
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		binary.LittleEndian.PutUint64(w, math.Float64bits(x))
	case "null":
		return bad() // a non-nil value for the null type
	case "decimal":
		if t.Precision > 18 {
			return false, nil
		}
		d, ok := v.(Decimal)
		if !ok || d.Unscaled == nil {
			return bad()
		}
		u, err := rescale(d, t)
		if err != nil {
			return false, err
		}
		if !u.IsInt64() {
			return false, &RowError{Reason: fmt.Sprintf("%s does not fit %s", d, t)}
		}
		binary.LittleEndian.PutUint64(w, uint64(u.Int64()))
	default:
		return false, nil
	}
	return true, nil
}

// rescale returns d's unscaled value at t's scale; Spark's changePrecision would round, ckpt
// never writes a value it did not read at the same scale, so a different scale is an error.
func rescale(d Decimal, t *Type) (*big.Int, error) {
	if d.Scale != t.Scale {
		return nil, &RowError{Reason: fmt.Sprintf("a decimal of scale %d for a %s", d.Scale, t)}
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
	if new(big.Int).Abs(d.Unscaled).Cmp(limit) >= 0 {
		return nil, &RowError{Reason: fmt.Sprintf("%s does not fit %s", d, t)}
	}
	return d.Unscaled, nil
}

// appendVariable appends a variable-length value, padded to a word, and returns its unpadded
// size (what the slot records).
func appendVariable(dst []byte, v any, t *Type) ([]byte, int, error) {
	bad := func() ([]byte, int, error) {
		return nil, 0, &RowError{Reason: fmt.Sprintf("a %T for a %s", v, t)}
	}
	start := len(dst)
	switch t.Name {
	case "string":
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		dst = append(dst, s...)
	case "binary":
		b, ok := v.([]byte)
		if !ok {
			return bad()
		}
		dst = append(dst, b...)
	case "decimal": // wide: the big-endian two's complement bytes in a 16-byte region
		d, ok := v.(Decimal)
		if !ok || d.Unscaled == nil {
			return bad()
		}
		u, err := rescale(d, t)
		if err != nil {
			return nil, 0, err
		}
		b := twosComplement(u)
		dst = append(dst, b...)
		dst = append(dst, make([]byte, 16-len(b))...)
		return dst, len(b), nil
	case "struct":
		o, ok := v.(*Object)
		if !ok {
			return bad()
		}
		var err error
		if dst, err = appendStruct(dst, o, t); err != nil {
			return nil, 0, err
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		var err error
		if dst, err = appendArray(dst, a, t.Elem); err != nil {
			return nil, 0, err
		}
	case "map":
		m, ok := v.(*Map)
		if !ok || len(m.Keys) != len(m.Values) {
			return bad()
		}
		at := len(dst)
		dst = append(dst, make([]byte, 8)...)
		var err error
		if dst, err = appendArray(dst, m.Keys, t.Key); err != nil {
			return nil, 0, err
		}
		binary.LittleEndian.PutUint64(dst[at:], uint64(len(dst)-at-8))
		if dst, err = appendArray(dst, m.Values, t.Value); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, &RowError{Reason: "unsupported type " + t.String()}
	}
	size := len(dst) - start
	return pad(dst), size, nil
}

// twosComplement is Java's BigInteger.toByteArray: the shortest big-endian two's complement.
func twosComplement(u *big.Int) []byte {
	if u.Sign() >= 0 {
		b := u.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -u-1 in one's complement, then invert.
	m := new(big.Int).Not(u).Bytes() // |u|-1
	for i := range m {
		m[i] = ^m[i]
	}
	if len(m) == 0 || m[0]&0x80 == 0 {
		m = append([]byte{0xff}, m...)
	}
	return m
}

func pad(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// appendArray appends an UnsafeArrayData as UnsafeArrayWriter writes it: the count, the null
// bits, the elements (fixed width, the region padded to a word), then variable-length ones.
func appendArray(dst []byte, a []any, elem *Type) ([]byte, error) {
	base := len(dst)
	n := len(a)
	hdr := 8 + bitsetWords(n)*8
	es := elem.fixedSize()
	slot := es
	if es == 0 {
		slot = 8
	}
	dst = append(dst, make([]byte, hdr+(n*slot+7)/8*8)...)
	binary.LittleEndian.PutUint64(dst[base:], uint64(n))
	var tmp [8]byte
	for i, v := range a {
		at := base + hdr + i*slot
		if v == nil {
			dst[base+8+i/8] |= 1 << (uint(i) % 8)
			continue
		}
		if es > 0 {
			tmp = [8]byte{}
			if _, err := putFixed(tmp[:], v, elem); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			copy(dst[at:at+es], tmp[:es])
			continue
		}
		off := len(dst) - base
		var size int
		var err error
		if isBigDecimal(elem) {
			d, ok := v.(Decimal)
			if !ok || d.Unscaled == nil {
				return nil, &RowError{Reason: fmt.Sprintf("element %d: a %T for a %s", i, v, elem)}
			}
			u, err := rescale(d, elem)
			if err != nil {
				return nil, err
			}
			b := twosComplement(u)
			dst = pad(append(dst, b...)) // arrays pad a wide decimal to a word, not to 16
			size = len(b)
		} else if dst, size, err = appendVariable(dst, v, elem); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		binary.LittleEndian.PutUint64(dst[at:], uint64(off)<<32|uint64(size))
	}
	return dst, nil
}
