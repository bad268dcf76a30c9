package statefmt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf16"
)

// Schema is a state schema file: the key and value schema of each column family (a store that
// is not transformWithState's has one, "default").
type Schema struct {
	// Version is the schema file version: 1 and 2 (state/<op>/<partition 0>/[<store>/]_metadata/schema),
	// 3 (transformWithState, state/<op>/_stateSchema/<store>/<batch>_<uuid>).
	Version  int            `json:"version"`
	Families []ColumnFamily `json:"columnFamilies"`
}

// ColumnFamily is the key and value schema of one column family.
type ColumnFamily struct {
	Name  string `json:"name"`
	Key   *Type  `json:"-"`
	Value *Type  `json:"-"`
	// KeyString and ValueString are the simple strings of Key and Value, for output.
	KeyString   string `json:"keySchema"`
	ValueString string `json:"valueSchema"`
	// v3 only: the schema ids, the key encoder spec and a map state's user key schema.
	KeySchemaID   int16       `json:"keySchemaId,omitempty"`
	ValueSchemaID int16       `json:"valueSchemaId,omitempty"`
	KeyEncoder    *KeyEncoder `json:"keyEncoder,omitempty"`
	UserKey       *Type       `json:"-"`
}

// DefaultColumnFamily is the name of the one column family of stores that have one.
const DefaultColumnFamily = "default"

// ParseSchema parses a state schema file. Spark writes it with java.io.DataOutputStream: a
// writeUTF version ("v1", "v2", "v3"), then v1: the key and the value schema JSON as two
// writeUTF strings; v2: for each, an int32 chunk count and that many writeUTF chunks; v3: a
// count of column families, each with its name, schemas and key encoder (parseSchemaV3).
func ParseSchema(file string, data []byte) (*Schema, error) {
	p := &utfReader{file: file, b: data}
	v, err := p.utf("a version string like \"v2\"")
	if err != nil {
		return nil, err
	}
	s := &Schema{}
	if _, err := fmt.Sscanf(v, "v%d", &s.Version); err != nil || fmt.Sprintf("v%d", s.Version) != v {
		return nil, errf(file, 0, `a version string like "v2"`, "%q", v)
	}
	switch s.Version {
	case 1, 2:
		var jsons [2]string
		for i, what := range []string{"key schema", "value schema"} {
			if s.Version == 1 {
				jsons[i], err = p.utf("the " + what + " JSON")
			} else {
				jsons[i], err = p.chunks("the " + what + " JSON")
			}
			if err != nil {
				return nil, err
			}
		}
		cf := ColumnFamily{Name: DefaultColumnFamily}
		if cf.Key, err = parseStructJSON(file, jsons[0]); err != nil {
			return nil, err
		}
		if cf.Value, err = parseStructJSON(file, jsons[1]); err != nil {
			return nil, err
		}
		s.Families = []ColumnFamily{cf.withStrings()}
	case 3:
		if err := parseSchemaV3(p, s); err != nil {
			return nil, err
		}
	default:
		return nil, errf(file, 0, "schema version v1, v2 or v3", "%q", v)
	}
	return s, nil
}

func (c ColumnFamily) withStrings() ColumnFamily {
	c.KeyString, c.ValueString = c.Key.String(), c.Value.String()
	return c
}

// Family returns the column family named name, or nil.
func (s *Schema) Family(name string) *ColumnFamily {
	for i := range s.Families {
		if s.Families[i].Name == name {
			return &s.Families[i]
		}
	}
	return nil
}

func parseStructJSON(file, s string) (*Type, error) {
	t := new(Type)
	if err := json.Unmarshal([]byte(s), t); err != nil {
		return nil, &Error{File: file, Offset: -1, Expected: "a Spark StructType JSON", Got: excerpt(s), Err: err}
	}
	if t.Name != "struct" {
		return nil, &Error{File: file, Offset: -1, Expected: "a Spark StructType JSON", Got: excerpt(s)}
	}
	return t, nil
}

func excerpt(s string) string {
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// utfReader reads java.io.DataInput's writeUTF strings: a big-endian uint16 byte length and
// "modified UTF-8" (NUL as C0 80, supplementary characters as surrogate pairs).
type utfReader struct {
	file string
	b    []byte
	off  int
}

func (p *utfReader) utf(what string) (string, error) {
	if p.off+2 > len(p.b) {
		return "", errf(p.file, int64(p.off), what+" (a 2-byte length)", "end of file")
	}
	n := int(binary.BigEndian.Uint16(p.b[p.off:]))
	if p.off+2+n > len(p.b) {
		return "", errf(p.file, int64(p.off), fmt.Sprintf("%s of %d bytes", what, n), "%d bytes", len(p.b)-p.off-2)
	}
	raw := p.b[p.off+2 : p.off+2+n]
	s, ok := decodeModifiedUTF8(raw)
	if !ok {
		return "", errf(p.file, int64(p.off+2), what+" in modified UTF-8", "invalid bytes")
	}
	p.off += 2 + n
	return s, nil
}

func (p *utfReader) chunks(what string) (string, error) {
	if p.off+4 > len(p.b) {
		return "", errf(p.file, int64(p.off), what+" (an int32 chunk count)", "end of file")
	}
	n := int32(binary.BigEndian.Uint32(p.b[p.off:]))
	if n < 1 || int(n) > len(p.b) {
		return "", errf(p.file, int64(p.off), what+" (a positive chunk count)", "%d", n)
	}
	p.off += 4
	var buf bytes.Buffer
	for range n {
		s, err := p.utf(what)
		if err != nil {
			return "", err
		}
		buf.WriteString(s)
	}
	return buf.String(), nil
}

func decodeModifiedUTF8(b []byte) (string, bool) {
	ascii := true
	for _, c := range b {
		if c >= 0x80 || c == 0 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), true
	}
	u := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80 && c != 0:
			u = append(u, uint16(c))
			i++
		case c&0xE0 == 0xC0 && i+1 < len(b) && b[i+1]&0xC0 == 0x80:
			u = append(u, uint16(c&0x1F)<<6|uint16(b[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0 && i+2 < len(b) && b[i+1]&0xC0 == 0x80 && b[i+2]&0xC0 == 0x80:
			u = append(u, uint16(c&0x0F)<<12|uint16(b[i+1]&0x3F)<<6|uint16(b[i+2]&0x3F))
			i += 3
		default:
			return "", false
		}
	}
	return string(utf16.Decode(u)), true
}
