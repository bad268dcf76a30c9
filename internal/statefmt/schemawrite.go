package statefmt

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf16"
)

// maxUTFChunk is the number of characters of a schema JSON per writeUTF chunk in a v2 schema
// file (SchemaWriterV2's MAX_UTF_CHUNK_SIZE).
const maxUTFChunk = 65535

// EncodeSchemaV2 is a v2 state schema file (state/<op>/0/_metadata/schema) for a store with
// one key and one value schema: writeUTF("v2"), then for the key and for the value schema
// JSON an int32 chunk count and the chunks, each a writeUTF string, as Spark's SchemaWriterV2
// writes them. ParseSchema reads it back.
func EncodeSchemaV2(key, value *Type) ([]byte, error) {
	b, err := appendUTF(nil, "v2")
	if err != nil {
		return nil, err
	}
	for _, t := range []*Type{key, value} {
		js, err := t.StructJSON()
		if err != nil {
			return nil, err
		}
		units := utf16.Encode([]rune(js))
		var chunks []string
		for len(units) > 0 {
			n := min(len(units), maxUTFChunk)
			chunks = append(chunks, string(utf16.Decode(units[:n])))
			units = units[n:]
		}
		if len(chunks) == 0 {
			chunks = []string{""}
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(chunks)))
		for _, c := range chunks {
			if b, err = appendUTF(b, c); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// appendUTF appends java.io.DataOutput.writeUTF(s): a uint16 length and modified UTF-8.
func appendUTF(dst []byte, s string) ([]byte, error) {
	var enc []byte
	for _, u := range utf16.Encode([]rune(s)) {
		switch {
		case u != 0 && u < 0x80:
			enc = append(enc, byte(u))
		case u < 0x800:
			enc = append(enc, byte(0xC0|u>>6), byte(0x80|u&0x3F))
		default:
			enc = append(enc, byte(0xE0|u>>12), byte(0x80|(u>>6)&0x3F), byte(0x80|u&0x3F))
		}
	}
	if len(enc) > 0xFFFF {
		return nil, fmt.Errorf("a schema string of %d encoded bytes: writeUTF takes at most 65535", len(enc))
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(enc)))
	return append(dst, enc...), nil
}

// StructJSON renders a struct type as Spark's StructType.json does (compact, fields with name,
// type, nullable and metadata: empty unless the field holds some). Only the atomic types and
// structs are rendered.
func (t *Type) StructJSON() (string, error) {
	if t == nil || t.Name != "struct" {
		return "", fmt.Errorf("schema JSON of a %v: want a struct", t)
	}
	b, err := t.appendTypeJSON(nil)
	return string(b), err
}

func (t *Type) appendTypeJSON(b []byte) ([]byte, error) {
	switch t.Name {
	case "struct":
		b = append(b, `{"type":"struct","fields":[`...)
		for i, f := range t.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendJacksonString(b, f.Name)
			b = append(b, `,"type":`...)
			var err error
			if b, err = f.Type.appendTypeJSON(b); err != nil {
				return nil, err
			}
			b = append(b, `,"nullable":`...)
			b = strconv.AppendBool(b, f.Nullable)
			if len(f.Metadata) > 0 {
				// Spark's field metadata (spark.watermarkDelayMs, spark.timeWindow), as held.
				b = append(append(append(b, `,"metadata":`...), f.Metadata...), '}')
			} else {
				b = append(b, `,"metadata":{}}`...)
			}
		}
		return append(b, "]}"...), nil
	case "string", "integer", "long", "double", "float", "short", "byte", "boolean", "binary", "date", "timestamp", "timestamp_ntz":
		return append(append(append(b, '"'), t.Name...), '"'), nil
	case "null":
		// NullType's JSON name (a dropDuplicates store's value field, __dummy__).
		return append(b, `"void"`...), nil
	case "decimal":
		return append(b, fmt.Sprintf(`"decimal(%d,%d)"`, t.Precision, t.Scale)...), nil
	}
	return nil, fmt.Errorf("schema JSON of type %s is not written", t)
}

// appendJacksonString appends s as a JSON string the way Jackson escapes it: quote, backslash
// and control characters, nothing else.
func appendJacksonString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
