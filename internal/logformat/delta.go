package logformat

import "strconv"

// DeltaSourceOffset is a Delta Lake streaming source's offset (delta-spark's DeltaSourceOffset,
// serialized as {"sourceVersion":1,"reservoirId":"<table id>","reservoirVersion":N,"index":I,
// "isStartingVersion":B}).
type DeltaSourceOffset struct {
	// SourceVersion is the serialization version: 1, or 3 when the index marks a schema change.
	SourceVersion int64 `json:"sourceVersion"`
	// ReservoirID is the table id (metaData.id of the table's _delta_log) the query read.
	ReservoirID string `json:"reservoirId"`
	// ReservoirVersion is the table version being processed: a snapshot version while
	// IsStartingVersion, else the commit whose changes come next.
	ReservoirVersion int64 `json:"reservoirVersion"`
	// Index is the position inside that version; -1 (DeltaBaseIndex) is before all its changes.
	Index int64 `json:"index"`
	// IsStartingVersion is delta-spark's isInitialSnapshot under its old name: the offset
	// points into the full snapshot at ReservoirVersion rather than into its changes.
	IsStartingVersion bool `json:"isStartingVersion"`
}

// Delta source offset constants (DeltaSourceOffset's companion object).
const (
	// DeltaBaseIndex is the serialized index before every change of a version.
	DeltaBaseIndex = -1
	// DeltaSourceVersionMax is the newest serialization version delta-spark 3.x writes and reads.
	DeltaSourceVersionMax = 3
)

// IsDeltaSourceOffset reports whether a source offset line is shaped like a Delta source
// offset (a JSON object with a "reservoirId" key), the cheap test before ParseDeltaSourceOffset.
func IsDeltaSourceOffset(line string) bool {
	d := []byte(line)
	kind, s, e, je := scanDocument(d)
	if je != nil || kind != jObject {
		return false
	}
	found := false
	scanObject(d[s:e], 0, 1, func(key []byte, _ jsonKind, _, _ int) *jsonErr {
		if string(key) == "reservoirId" {
			found = true
			return errStop
		}
		return nil
	})
	return found
}

// ParseDeltaSourceOffset parses a Delta source offset line with delta-spark's rules: the five
// fields by name (unknown keys are ignored, as Jackson in delta-spark is configured), a
// sourceVersion of 1 or 3 (2 is reserved), and the texts delta-spark fails with otherwise.
func ParseDeltaSourceOffset(file, line string) (DeltaSourceOffset, error) {
	var o DeltaSourceOffset
	d := []byte(line)
	const expected = `a Delta source offset like {"sourceVersion":1,"reservoirId":"<id>","reservoirVersion":3,"index":-1,"isStartingVersion":false}`
	fail := func(exp, spark string) error {
		return &Error{File: file, Kind: KindBadOffset, Expected: exp, Got: excerpt(line), Spark: spark}
	}
	kind, s, e, je := scanDocument(d)
	if je != nil || kind != jObject {
		return o, fail(expected, DeltaInvalidSourceOffsetFormat)
	}
	obj := d[s:e]
	seen := map[string]bool{}
	var bad string
	_, je = scanObject(obj, 0, 1, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		k := string(key)
		v := obj[vs:ve]
		switch k {
		case "sourceVersion", "reservoirVersion", "index":
			n, ok := int64Value(obj, vs, ve)
			if kind != jNumber || !ok {
				bad = k
				return errStop
			}
			switch k {
			case "sourceVersion":
				o.SourceVersion = n
			case "reservoirVersion":
				o.ReservoirVersion = n
			default:
				o.Index = n
			}
		case "reservoirId":
			if kind != jString {
				bad = k
				return errStop
			}
			o.ReservoirID = stringValue(v, 0, len(v))
		case "isStartingVersion":
			if kind != jBool {
				bad = k
				return errStop
			}
			o.IsStartingVersion = v[0] == 't'
		default:
			return nil
		}
		seen[k] = true
		return nil
	})
	if je != nil && je != errStop {
		return o, fail(expected, DeltaInvalidSourceOffsetFormat)
	}
	if bad != "" {
		return o, fail(`"`+bad+`" of the right type (numbers are integers, reservoirId a string, isStartingVersion a boolean)`,
			DeltaInvalidSourceOffsetFormat)
	}
	// Jackson leaves a missing field at its default (sourceVersion 0 fails below).
	for _, k := range []string{"reservoirId", "reservoirVersion", "index", "isStartingVersion"} {
		if !seen[k] {
			return o, fail(`a field "`+k+`" in a Delta source offset`, "")
		}
	}
	switch {
	case o.SourceVersion < 1 || o.SourceVersion == 2:
		return o, fail("sourceVersion 1 or 3", DeltaInvalidSourceVersion(o.SourceVersion))
	case o.SourceVersion > DeltaSourceVersionMax:
		return o, fail("sourceVersion at most 3", DeltaInvalidFormatFromSourceVersion(o.SourceVersion))
	}
	return o, nil
}

// Delta-spark's texts for unreadable source offsets (spark/src/main/resources/error/
// delta-error-classes.json in delta-io/delta: DELTA_INVALID_SOURCE_OFFSET_FORMAT,
// DELTA_INVALID_SOURCE_VERSION, DELTA_INVALID_FORMAT_FROM_SOURCE_VERSION).
const DeltaInvalidSourceOffsetFormat = "[DELTA_INVALID_SOURCE_OFFSET_FORMAT] The stored source offset format is invalid"

// DeltaInvalidSourceVersion is delta-spark's text for a sourceVersion below 1 or equal to 2.
func DeltaInvalidSourceVersion(v int64) string {
	return "[DELTA_INVALID_SOURCE_VERSION] sourceVersion(" + strconv.FormatInt(v, 10) + ") is invalid"
}

// DeltaInvalidFormatFromSourceVersion is delta-spark's text for a sourceVersion above 3.
func DeltaInvalidFormatFromSourceVersion(v int64) string {
	return "[DELTA_INVALID_FORMAT_FROM_SOURCE_VERSION] Unsupported format. Expected version should be smaller than or equal to 3 but was " +
		strconv.FormatInt(v, 10) + ". Please upgrade to newer version of Delta."
}

// JSON is the offset as delta-spark serializes it (Jackson, fields in declaration order).
func (o DeltaSourceOffset) JSON() string {
	b := append([]byte(nil), `{"sourceVersion":`...)
	b = appendInt(b, o.SourceVersion)
	b = append(b, `,"reservoirId":`...)
	b = appendJSONString(b, o.ReservoirID)
	b = append(b, `,"reservoirVersion":`...)
	b = appendInt(b, o.ReservoirVersion)
	b = append(b, `,"index":`...)
	b = appendInt(b, o.Index)
	b = append(b, `,"isStartingVersion":`...)
	b = strconv.AppendBool(b, o.IsStartingVersion)
	return string(append(b, '}'))
}
