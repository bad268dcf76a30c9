package logformat

// StreamMetadata is the checkpoint root "metadata" file: {"id":"<uuid>"},
// written by json4s with no version header and no newline.
type StreamMetadata struct {
	ID    string
	Extra []KV // other keys, raw JSON values, file order
	// TrailingNewline records a final "\n" so Marshal reproduces the file.
	TrailingNewline bool
}

// ParseStreamMetadata parses the root metadata file. Spark reads the whole
// file as one JSON document (white space around it is fine) and requires a
// string "id".
func ParseStreamMetadata(file string, data []byte) (*StreamMetadata, error) {
	const expected = `stream metadata JSON like {"id":"<uuid>"}`
	if e := checkLineLength(file, data); e != nil {
		return nil, e
	}
	m := &StreamMetadata{}
	d := data
	if n := len(d); n > 0 && d[n-1] == '\n' {
		m.TrailingNewline = true
		d = d[:n-1]
	}
	if len(javaTrim(d)) == 0 {
		return nil, &Error{File: file, Kind: KindEmpty, Expected: expected, Got: excerpt(string(data))}
	}
	kind, s, e, je := scanDocument(d)
	if je != nil {
		return nil, badJSON(file, 0, expected, d, je)
	}
	if kind != jObject {
		return nil, badJSONShape(file, 0, expected, d)
	}
	var ferr *Error
	hasID := false
	_, je = scanObject(d[s:e], 0, 1, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		v := d[s+vs : s+ve]
		if string(key) == "id" {
			if kind != jString {
				ferr = fieldErr(file, 0, "id", "a string", v)
				return errStop
			}
			m.ID, hasID = stringValue(v, 0, len(v)), true
			return nil
		}
		m.Extra = append(m.Extra, KV{Key: string(key), Value: string(v)})
		return nil
	})
	if ferr != nil {
		return nil, ferr
	}
	if je != nil {
		return nil, badJSON(file, 0, expected, d, je)
	}
	if !hasID {
		return nil, &Error{File: file, Kind: KindBadJSON, Expected: `a string field "id"`, Got: excerpt(string(d)),
			Spark: json4sNoUsableValue("id", "java.lang.String")}
	}
	return m, nil
}

// Marshal returns the bytes StreamMetadata.write produces.
func (m *StreamMetadata) Marshal() []byte {
	b := append([]byte(nil), `{"id":`...)
	b = appendJSONString(b, m.ID)
	b = appendExtra(b, m.Extra)
	b = append(b, '}')
	if m.TrailingNewline {
		b = append(b, '\n')
	}
	return b
}
