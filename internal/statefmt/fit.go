package statefmt

import (
	"encoding/binary"
	"fmt"
)

// FitRow checks that b is an UnsafeRow of schema t (a struct) as Spark's UnsafeRowWriter lays
// it out, byte for byte: no null bit above the last field, a null field's slot zero, the
// bytes above a narrow value (int, date, boolean, …) zero, every variable-length value inside
// the row's variable part, and those values (each padded to a word, a decimal wider than 18
// digits always 16 bytes) filling that part exactly. Decoding checks only that what it reads
// is inside the row: a row of another schema with as many fields, or with a short prefix of
// this one's, decodes into garbage. FitRow tells them apart, which is how a state schema file
// that belongs to another operator shows: its rows do not fit it.
func FitRow(b []byte, t *Type) error {
	if t == nil || t.Name != "struct" {
		return &RowError{Reason: "the schema is not a struct"}
	}
	return fitStruct(b, 0, len(b), t)
}

func fitStruct(b []byte, base, size int, t *Type) error {
	n := len(t.Fields)
	words := bitsetWords(n)
	fixed := (words + n) * 8
	if size < 0 || base < 0 || base+size > len(b) || fixed > size {
		return &RowError{At: base, Reason: fmt.Sprintf("a row of %d fields needs %d bytes, has %d", n, fixed, size)}
	}
	if size%8 != 0 {
		return &RowError{At: base, Reason: fmt.Sprintf("a row of %d bytes, not a multiple of 8", size)}
	}
	// The bits above the last field of the last bitset word are never set.
	if n%64 != 0 {
		last := binary.LittleEndian.Uint64(b[base+(words-1)*8:])
		if extra := last >> (uint(n) % 64); extra != 0 {
			return &RowError{At: base, Reason: fmt.Sprintf("null bits set above field %d, and the schema has %d fields", n-1, n)}
		}
	}
	used := 0
	exact := true
	fs := t.plan()
	for i := range fs {
		p := &fs[i]
		at := base + (words+i)*8
		w := binary.LittleEndian.Uint64(b[at:])
		null := b[base+i>>6<<3+(i&63)>>3]&(1<<(uint(i)&7)) != 0
		var width uint
		switch p.kind {
		case kindLong, kindDouble, kindTimestamp, kindTimestampNTZ:
			width = 8
		case kindInteger, kindDate, kindFloat:
			width = 4
		case kindShort:
			width = 2
		case kindBoolean, kindByte, kindNull:
			width = 1
		case kindDecimal:
			if p.t.Precision <= 18 {
				width = 8
			}
		}
		if null && width > 0 {
			if w != 0 {
				return &RowError{At: at - base, Reason: fieldName(t, i) + " is null and its slot is not zero"}
			}
			continue
		}
		if width > 0 {
			if width < 8 && w>>(8*width) != 0 {
				return &RowError{At: at - base, Reason: fmt.Sprintf("%s: the slot's bytes above its %d-byte value are not zero", fieldName(t, i), width)}
			}
			if p.kind == kindBoolean && w > 1 {
				return &RowError{At: at - base, Reason: fmt.Sprintf("%s holds %d, not 0 or 1", fieldName(t, i), w)}
			}
			continue
		}
		if null && w == 0 {
			continue // set to null by setNullAt: no space reserved (a wide decimal may keep its 16 bytes)
		}
		off, sz := int(w>>32), int(uint32(w))
		if off < fixed || off%8 != 0 || off+sz > size {
			return &RowError{At: at - base, Reason: fmt.Sprintf("%s at offset %d size %d is outside the variable part [%d, %d) of the row", fieldName(t, i), off, sz, fixed, size)}
		}
		span := (sz + 7) &^ 7
		switch p.t.Name {
		case "decimal":
			if sz > 16 {
				return &RowError{At: at - base, Reason: fmt.Sprintf("%s of %d bytes, more than 16", fieldName(t, i), sz)}
			}
			span = 16 // Spark reserves 16 bytes for a wide decimal, null or not
		case "calendarinterval":
			if sz != 16 {
				return &RowError{At: at - base, Reason: fmt.Sprintf("%s of %d bytes, not 16", fieldName(t, i), sz)}
			}
		case "struct":
			if err := fitStruct(b, base+off, sz, p.t); err != nil {
				return err
			}
		case "string", "binary", "array", "map":
		default:
			exact = false // a type whose layout is not checked here (variant)
		}
		if off+span > size {
			return &RowError{At: at - base, Reason: fmt.Sprintf("%s at offset %d takes %d bytes, past the row's %d", fieldName(t, i), off, span, size)}
		}
		used += span
	}
	if exact && used != size-fixed {
		return &RowError{At: base, Reason: fmt.Sprintf("the fields' variable-length values take %d bytes, and the row has %d after its %d-byte fixed part", used, size-fixed, fixed)}
	}
	return nil
}

// fieldName names field i of struct t in FitRow's errors.
func fieldName(t *Type, i int) string {
	return fmt.Sprintf("field %d (%s %s)", i, t.Fields[i].Name, t.Fields[i].Type)
}

// NarrowInWide reports whether a non-null top-level timestamp, timestamp_ntz or double field of
// row b (of schema t) holds a non-zero value whose upper 32 bits are zero: an int, a date or a
// float written where t has a wider type. Such a row fits t byte for byte (the slot is 8 bytes
// either way), but no real timestamp lies in the first 72 minutes of 1970 and no double is a
// subnormal that small, so it tells a schema of another type from the row's own.
func NarrowInWide(b []byte, t *Type) bool {
	if t == nil || t.Name != "struct" {
		return false
	}
	n := len(t.Fields)
	words := bitsetWords(n)
	if (words+n)*8 > len(b) {
		return false
	}
	for i, f := range t.Fields {
		switch f.Type.Name {
		case "timestamp", "timestamp_ntz", "double":
		default:
			continue
		}
		if b[i/64*8+(i%64)/8]&(1<<(uint(i)%8)) != 0 {
			continue
		}
		w := binary.LittleEndian.Uint64(b[(words+i)*8:])
		if w != 0 && w>>32 == 0 {
			return true
		}
	}
	return false
}
