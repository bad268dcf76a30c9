package statefmt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Key encoder types of a v3 schema's column families (Spark's KeyStateEncoderSpec), which
// decide how RocksDB keys are laid out.
const (
	// KeyEncoderNoPrefix: a version byte, then the key's UnsafeRow.
	KeyEncoderNoPrefix = "NoPrefixKeyStateEncoderSpec"
	// KeyEncoderPrefixScan: a little-endian int32 length, the first NumColsPrefixKey fields as
	// a versioned UnsafeRow of that length, then the other fields as another.
	KeyEncoderPrefixScan = "PrefixKeyScanStateEncoderSpec"
	// KeyEncoderRangeScan: as the prefix scan, the ordering fields first, rewritten big-endian
	// with a sign/null byte so that byte order is numeric order.
	KeyEncoderRangeScan = "RangeKeyScanStateEncoderSpec"
)

// KeyEncoder is a column family's key encoder spec.
type KeyEncoder struct {
	Type             string `json:"keyStateEncoderType"`
	NumColsPrefixKey int    `json:"numColsPrefixKey,omitempty"`
	OrderingOrdinals []int  `json:"orderingOrdinals,omitempty"`
}

// parseSchemaV3 reads the body of a v3 schema file (transformWithState), after its "v3":
// an int32 count of column families, then for each its name (writeUTF), its key and value
// schema (each an int16 schema id and chunked JSON: an int32 chunk count and writeUTF
// chunks), its key encoder spec JSON and its user key schema JSON ("{    }" when it has
// none; chunked too).
func parseSchemaV3(p *utfReader, s *Schema) error {
	if p.off+4 > len(p.b) {
		return errf(p.file, int64(p.off), "the number of column families (an int32)", "end of file")
	}
	n := int32(binary.BigEndian.Uint32(p.b[p.off:]))
	if n < 0 || int(n) > len(p.b) {
		return errf(p.file, int64(p.off), "a number of column families", "%d", n)
	}
	p.off += 4
	for range n {
		at := p.off
		name, err := p.utf("a column family name")
		if err != nil {
			return err
		}
		cf := ColumnFamily{Name: name}
		var schemas [2]string
		for i, what := range []string{"key schema", "value schema"} {
			if p.off+2 > len(p.b) {
				return errf(p.file, int64(p.off), fmt.Sprintf("the %s id of column family %q (an int16)", what, name), "end of file")
			}
			id := int16(binary.BigEndian.Uint16(p.b[p.off:]))
			p.off += 2
			if i == 0 {
				cf.KeySchemaID = id
			} else {
				cf.ValueSchemaID = id
			}
			if schemas[i], err = p.chunks(fmt.Sprintf("the %s JSON of column family %q", what, name)); err != nil {
				return err
			}
		}
		if cf.Key, err = parseStructJSON(p.file, schemas[0]); err != nil {
			return err
		}
		if cf.Value, err = parseStructJSON(p.file, schemas[1]); err != nil {
			return err
		}
		spec, err := p.chunks(fmt.Sprintf("the key encoder spec JSON of column family %q", name))
		if err != nil {
			return err
		}
		cf.KeyEncoder = &KeyEncoder{}
		if err := json.Unmarshal([]byte(spec), cf.KeyEncoder); err != nil {
			return &Error{File: p.file, Offset: int64(at), Expected: "a key encoder spec JSON", Got: excerpt(spec), Err: err}
		}
		switch cf.KeyEncoder.Type {
		case KeyEncoderNoPrefix:
		case KeyEncoderPrefixScan:
			if cf.KeyEncoder.NumColsPrefixKey < 1 || cf.KeyEncoder.NumColsPrefixKey > len(cf.Key.Fields) {
				return errf(p.file, int64(at), fmt.Sprintf("numColsPrefixKey between 1 and %d (column family %q)", len(cf.Key.Fields), name), "%d", cf.KeyEncoder.NumColsPrefixKey)
			}
		case KeyEncoderRangeScan:
			if len(cf.KeyEncoder.OrderingOrdinals) == 0 {
				return errf(p.file, int64(at), fmt.Sprintf("orderingOrdinals (column family %q)", name), "none")
			}
			for _, o := range cf.KeyEncoder.OrderingOrdinals {
				if o < 0 || o >= len(cf.Key.Fields) {
					return errf(p.file, int64(at), fmt.Sprintf("ordering ordinals below %d (column family %q)", len(cf.Key.Fields), name), "%d", o)
				}
			}
		default:
			return errf(p.file, int64(at), "a key encoder spec of type NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec or RangeKeyScanStateEncoderSpec", "%q", cf.KeyEncoder.Type)
		}
		uk, err := p.chunks(fmt.Sprintf("the user key schema JSON of column family %q", name))
		if err != nil {
			return err
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(uk), &probe); err != nil {
			return &Error{File: p.file, Offset: int64(at), Expected: "a user key schema JSON", Got: excerpt(uk), Err: err}
		}
		if len(probe) > 0 {
			if cf.UserKey, err = parseStructJSON(p.file, uk); err != nil {
				return err
			}
		}
		s.Families = append(s.Families, cf.withStrings())
	}
	if p.off != len(p.b) {
		return errf(p.file, int64(p.off), fmt.Sprintf("the end of the file after %d column families", n), "%d more bytes", len(p.b)-p.off)
	}
	return nil
}
