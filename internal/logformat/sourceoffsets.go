package logformat

// ParseFileSourceOffset parses a FileStreamSource offset: {"logOffset":N},
// or the legacy plain number FileStreamSourceOffset still accepts.
func ParseFileSourceOffset(file, json string) (int64, error) {
	if n, ok := javaParseLong(json); ok {
		return n, nil
	}
	d := []byte(json)
	fail := func(expected string) error {
		return &Error{File: file, Kind: KindBadOffset, Expected: expected, Got: excerpt(json)}
	}
	kind, s, e, je := scanDocument(d)
	if je != nil {
		return 0, fail(`a file source offset like {"logOffset":3} (` + je.Error() + ")")
	}
	if kind != jObject {
		return 0, fail(`a file source offset like {"logOffset":3}`)
	}
	var n int64
	found, bad := false, false
	scanObject(d[s:e], 0, 1, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		if string(key) == "logOffset" {
			v, ok := int64Value(d[s:e], vs, ve)
			if kind != jNumber || !ok {
				bad = true
				return errStop
			}
			n, found = v, true
		}
		return nil
	})
	if bad || !found {
		return 0, fail(`an integer "logOffset"`)
	}
	return n, nil
}

// FileSourceOffsetJSON is FileStreamSourceOffset.json.
func FileSourceOffsetJSON(n int64) string {
	return string(appendInt([]byte(`{"logOffset":`), n)) + "}"
}

// ParseLongOffset parses a LongOffset (memory and rate sources): Spark calls
// String.toLong on the whole offset text.
func ParseLongOffset(file, json string) (int64, error) {
	n, ok := javaParseLong(json)
	if !ok {
		return 0, &Error{File: file, Kind: KindBadOffset, Expected: "a long offset (a decimal integer)",
			Got: excerpt(json), Spark: `java.lang.NumberFormatException: For input string: "` + json + `"`}
	}
	return n, nil
}
