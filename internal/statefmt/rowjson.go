package statefmt

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// AppendRowJSON appends the UnsafeRow b of schema t (a struct) as JSON, exactly as
// AppendJSON(dst, DecodeRow(b, t)) does, and fails where DecodeRow fails; but it renders
// straight from the bytes, without building values (no allocation for the common types),
// which is what lets `ckpt state read -o json` keep up with a large state.
func AppendRowJSON(dst, b []byte, t *Type) ([]byte, error) {
	if t == nil || t.Name != "struct" {
		return dst, &RowError{Reason: "the schema is not a struct"}
	}
	return appendStructJSON(dst, b, 0, len(b), t)
}

// Type kinds, resolved once per struct field (plan) so that rendering a row does not compare
// type names.
const (
	kindOther = iota
	kindBoolean
	kindByte
	kindShort
	kindInteger
	kindDate
	kindLong
	kindTimestamp
	kindTimestampNTZ
	kindFloat
	kindDouble
	kindNull
	kindString
	kindDecimal
	kindStruct
)

var kindByName = map[string]int{"boolean": kindBoolean, "byte": kindByte, "short": kindShort, "integer": kindInteger,
	"date": kindDate, "long": kindLong, "timestamp": kindTimestamp, "timestamp_ntz": kindTimestampNTZ, "float": kindFloat,
	"double": kindDouble, "null": kindNull, "string": kindString, "decimal": kindDecimal, "struct": kindStruct}

// fieldPlan is one field of a struct as AppendRowJSON renders it: its `"name":` prefix
// (',' included after the first) and its kind.
type fieldPlan struct {
	prefix []byte
	kind   int
	t      *Type
}

// plan returns t's field plans, built on first use.
func (t *Type) plan() []fieldPlan {
	if p := t.fields.Load(); p != nil {
		return *p
	}
	p := make([]fieldPlan, len(t.Fields))
	for i, f := range t.Fields {
		var pre []byte
		if i > 0 {
			pre = append(pre, ',')
		}
		pre = append(appendJSONString(pre, f.Name), ':')
		p[i] = fieldPlan{prefix: pre, kind: kindByName[f.Type.Name], t: f.Type}
	}
	t.fields.Store(&p)
	return p
}

func appendStructJSON(dst, b []byte, base, size int, t *Type) ([]byte, error) {
	n := len(t.Fields)
	words := bitsetWords(n)
	if size < 0 || base < 0 || base+size > len(b) || (words+n)*8 > size {
		return dst, &RowError{At: base, Reason: fmt.Sprintf("a row of %d fields needs %d bytes, has %d", n, (words+n)*8, size)}
	}
	dst = append(dst, '{')
	// By index, not by value: a fieldPlan is 40 bytes, copied per field otherwise.
	fs := t.plan()
	for i := range fs {
		f := &fs[i]
		dst = append(dst, f.prefix...)
		if b[base+i>>6<<3+(i&63)>>3]&(1<<(uint(i)&7)) != 0 {
			dst = append(dst, "null"...)
			continue
		}
		at := base + (words+i)*8
		// The fixed-width kinds most state rows hold are rendered here, without a call.
		switch f.kind {
		case kindLong:
			dst = appendInt(dst, int64(binary.LittleEndian.Uint64(b[at:at+8])))
			continue
		case kindInteger:
			dst = appendInt(dst, int64(int32(binary.LittleEndian.Uint32(b[at:at+4]))))
			continue
		case kindBoolean:
			if b[at] != 0 {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
			continue
		}
		var err error
		if dst, err = appendSlotJSON(dst, b, base, size, at, f.t, f.kind); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendSlotJSON is decodeSlot followed by AppendJSON, for the kinds appendStructJSON does not
// render itself (long, integer, boolean); kind is t's.
func appendSlotJSON(dst, b []byte, base, size, at int, t *Type, kind int) ([]byte, error) {
	w := b[at : at+8]
	switch kind {
	case kindByte:
		return appendInt(dst, int64(int8(w[0]))), nil
	case kindShort:
		return appendInt(dst, int64(int16(binary.LittleEndian.Uint16(w)))), nil
	case kindDate:
		return appendDate(append(dst, '"'), Date(int32(binary.LittleEndian.Uint32(w))), true), nil
	case kindTimestamp:
		return appendTimestamp(append(dst, '"'), Timestamp(int64(binary.LittleEndian.Uint64(w))), true), nil
	case kindTimestampNTZ:
		return appendTimestampNTZ(append(dst, '"'), TimestampNTZ(int64(binary.LittleEndian.Uint64(w))), true), nil
	case kindFloat:
		return appendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(w))), 32), nil
	case kindDouble:
		return appendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(w)), 64), nil
	case kindNull:
		return append(dst, "null"...), nil
	case kindDecimal:
		if t.Precision <= 18 {
			return appendDecimal64(dst, int64(binary.LittleEndian.Uint64(w)), t.Scale), nil
		}
	}
	ref := binary.LittleEndian.Uint64(w)
	off, n := int(ref>>32), int(uint32(ref))
	if off < 0 || n < 0 || off+n > size {
		return dst, &RowError{At: at - base, Reason: fmt.Sprintf("a %s at offset %d size %d outside the row of %d bytes", t, off, n, size)}
	}
	p := base + off
	switch kind {
	case kindString:
		return appendJSONBytes(dst, b[p:p+n]), nil
	case kindDecimal:
		if n <= 8 {
			var u uint64
			for _, c := range b[p : p+n] {
				u = u<<8 | uint64(c)
			}
			if n > 0 && b[p]&0x80 != 0 && n < 8 {
				u |= ^uint64(0) << (8 * n) // sign-extend
			}
			return appendDecimal64(dst, int64(u), t.Scale), nil
		}
		v, err := decodeSlot(b, base, size, at, t)
		if err != nil {
			return dst, err
		}
		return AppendJSON(dst, v), nil
	case kindStruct:
		return appendStructJSON(dst, b, p, n, t)
	}
	// binary, arrays and maps are rare in state keys and values: decode, then render.
	v, err := decodeSlot(b, base, size, at, t)
	if err != nil {
		return dst, err
	}
	return AppendJSON(dst, v), nil
}

// appendDecimal64 renders an unscaled value with its scale, as Decimal.String.
func appendDecimal64(dst []byte, v int64, scale int) []byte {
	if scale == 0 {
		return appendInt(dst, v)
	}
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = -u
	}
	var buf [40]byte
	digits := appendUint(buf[:0], u)
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for i := len(digits); i < scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}

func append2(dst []byte, v int64) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

// appendYMD appends yyyy-MM-dd for years 0..9999; ok false outside (rendered by time then).
func appendYMD(dst []byte, days int64) ([]byte, bool) {
	if uint64(days) < 1<<16 {
		return append(dst, ymdTable()[days][:]...), true
	}
	if days < minCivilDay {
		return dst, false
	}
	y, m, d := civil(days)
	if y > 9999 {
		return dst, false
	}
	dst = append2(append2(dst, y/100), y%100)
	dst = append2(append(dst, '-'), m)
	return append2(append(dst, '-'), d), true
}

// appendDate appends the date as Date.String does, closing the quote when quoted.
func appendDate(dst []byte, v Date, quoted bool) []byte {
	out, ok := appendYMD(dst, int64(v))
	if !ok {
		out = append(dst, v.String()...)
	}
	if quoted {
		out = append(out, '"')
	}
	return out
}

// appendTimestamp appends the timestamp as Timestamp.String does (UTC, milliseconds).
func appendTimestamp(dst []byte, v Timestamp, quoted bool) []byte {
	return appendMicros(dst, int64(v), true, quoted)
}

// appendTimestampNTZ appends the timestamp as TimestampNTZ.String does (no zone).
func appendTimestampNTZ(dst []byte, v TimestampNTZ, quoted bool) []byte {
	return appendMicros(dst, int64(v), false, quoted)
}

// appendMicros renders microseconds since the epoch as yyyy-MM-dd'T'HH:mm:ss.SSS, then "Z"
// when zoned (the session time zone, UTC).
func appendMicros(dst []byte, us int64, zoned, quoted bool) []byte {
	sec := us / 1e6
	rem := us % 1e6
	if rem < 0 {
		sec--
		rem += 1e6
	}
	days := sec / 86400
	sod := sec % 86400
	if sod < 0 {
		days--
		sod += 86400
	}
	out, ok := appendYMD(dst, days)
	if !ok {
		if zoned {
			out = append(dst, Timestamp(us).String()...)
		} else {
			out = append(dst, TimestampNTZ(us).String()...)
		}
	} else {
		// One append, then the digits in place.
		n := len(out)
		if zoned {
			out = append(out, "T00:00:00.000Z"...)
		} else {
			out = append(out, "T00:00:00.000"...)
		}
		b := out[n : n+13]
		h, mi, s, ms := sod/3600, sod/60%60, sod%60, rem/1000
		b[1], b[2] = byte('0'+h/10), byte('0'+h%10)
		b[4], b[5] = byte('0'+mi/10), byte('0'+mi%10)
		b[7], b[8] = byte('0'+s/10), byte('0'+s%10)
		b[10], b[11], b[12] = byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10)
	}
	if quoted {
		out = append(out, '"')
	}
	return out
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way Spark's JSON writer (Jackson) escapes
// it: quote, backslash and control characters only; invalid UTF-8 becomes U+FFFD.
func appendJSONString(dst []byte, s string) []byte { return appendJSON(dst, s) }

// appendJSONBytes is appendJSONString of a byte slice, without converting it to a string.
func appendJSONBytes(dst, s []byte) []byte { return appendJSON(dst, s) }

// appendJSON is the one escaper behind both: generic so that neither form is copied into the other.
func appendJSON[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := decodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeRune is utf8.DecodeRune for either form of appendJSON's input.
func decodeRune[T string | []byte](s T) (rune, int) {
	if b, ok := any(s).([]byte); ok {
		return utf8.DecodeRune(b)
	}
	return utf8.DecodeRuneInString(string(s))
}
