package logformat

import (
	"bytes"
	"unicode/utf8"
)

// Version limits: the newest version each parser understands, i.e. the
// newest some Spark release or master writes. Deciding whether a given
// Spark release can read a version is internal/recovery's job.
const (
	OffsetsMaxVersion             = 2 // v2 "OffsetMap" exists only in Spark master
	CommitsMaxVersion             = 3 // v2: checkpoint format v2 (4.0); v3: master sinkMetadataMap
	SinkLogMaxVersion             = 1
	FileSourceLogMaxVersion       = 1
	KafkaInitialOffsetsMaxVersion = 1
	OperatorMetadataMaxVersion    = 2
)

// SerializedVoidOffset is what Spark writes for a source with no offset yet.
const SerializedVoidOffset = "-"

// OffsetSeq is one offsets/N file: the write-ahead log entry Spark writes
// before running batch N.
type OffsetSeq struct {
	Version  int             // 1 or 2 ("OffsetMap", master only)
	Metadata *OffsetMetadata // nil when the metadata line is empty
	Sources  []SourceOffset
	// BlankLines lists the 1-based line numbers of empty source lines. Spark
	// reads each as an extra source SerializedOffset(""), which later trips
	// the source-count assertion; doctor reports them.
	BlankLines []int
	// TrailingNewline records a final "\n" (harmless to Spark) so Marshal
	// reproduces hand-made files byte for byte.
	TrailingNewline bool
	// CRBreaks counts line breaks that were "\r\n" or "\r" (Spark accepts
	// them; Marshal writes "\n").
	CRBreaks int
}

// OffsetMetadata is OffsetSeqMetadata (and the master-only V2 fields, kept
// raw in Extra).
type OffsetMetadata struct {
	BatchWatermarkMs int64
	BatchTimestampMs int64
	Conf             []KV // file order; nil when the key is absent (Spark 2.1 files have no "conf")
	Extra            []KV // any other top-level keys, raw JSON values, file order
}

// SourceOffset is one source line of an offsets file.
type SourceOffset struct {
	SourceID string // v2 only ("0" in "0:{...}")
	JSON     string // the offset JSON exactly as in the file; "" when Void
	Void     bool   // "-": the source had no offset yet
}

// ParseOffsets parses an offsets/N file the way OffsetSeqLog.deserialize
// reads it.
func ParseOffsets(file string, data []byte) (*OffsetSeq, error) {
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	ls := splitLines(data)
	if len(ls.text) == 0 {
		return nil, &Error{File: file, Line: 1, Kind: KindEmpty,
			Expected: `a version header like "v1"`, Got: `""`, Spark: sparkIncomplete}
	}
	version, verr := parseVersionHeader(file, 1, ls.text[0], OffsetsMaxVersion)
	if verr != nil {
		return nil, verr
	}
	if len(ls.text) < 2 {
		return nil, &Error{File: file, Line: 2, Kind: KindMissingMetadata,
			Expected: "a metadata line (offset metadata JSON or an empty line)", Got: "end of file",
			Spark: sparkNoSuchElement}
	}
	o := &OffsetSeq{Version: version, TrailingNewline: ls.trailingNewline, CRBreaks: ls.crBreaks}
	if md := javaTrim(ls.text[1]); len(md) > 0 {
		m, err := parseOffsetMetadata(file, 2, md)
		if err != nil {
			return nil, err
		}
		o.Metadata = m
	}
	for i, raw := range ls.text[2:] {
		lineNo := i + 3
		line := string(raw)
		var so SourceOffset
		if version >= 2 {
			colon := bytes.IndexByte(raw, ':')
			if colon < 0 {
				kind, exp := KindMalformed, `a "sourceId:offset" line`
				if len(raw) == 0 {
					kind = KindBlankLine
				}
				return nil, &Error{File: file, Line: lineNo, Kind: kind, Expected: exp,
					Got: excerpt(line), Spark: "Invalid OffsetMap format: " + line}
			}
			so.SourceID = line[:colon]
			line = line[colon+1:]
		}
		switch line {
		case SerializedVoidOffset:
			so.Void = true
		case "":
			o.BlankLines = append(o.BlankLines, lineNo)
		default:
			so.JSON = line
		}
		o.Sources = append(o.Sources, so)
	}
	return o, nil
}

// BlankLineErrors turns BlankLines into errors for reporting. Spark itself
// accepts the file and fails later (the source-count assertion, or the
// source's own offset parser), so Spark is empty.
func (o *OffsetSeq) BlankLineErrors(file string) []*Error {
	var errs []*Error
	for _, l := range o.BlankLines {
		errs = append(errs, &Error{File: file, Line: l, Kind: KindBlankLine,
			Expected: `a source offset (JSON or "-")`, Got: `""`})
	}
	return errs
}

// Marshal returns the bytes OffsetSeqLog.serialize writes for o: no trailing
// newline unless TrailingNewline.
func (o *OffsetSeq) Marshal() []byte {
	v := o.Version
	if v == 0 {
		v = 1
	}
	b := appendHeader(nil, v)
	b = append(b, '\n')
	if o.Metadata != nil {
		b = o.Metadata.appendJSON(b)
	}
	for _, s := range o.Sources {
		b = append(b, '\n')
		if v >= 2 {
			b = append(b, s.SourceID...)
			b = append(b, ':')
		}
		if s.Void {
			b = append(b, SerializedVoidOffset...)
		} else {
			b = append(b, s.JSON...)
		}
	}
	if o.TrailingNewline {
		b = append(b, '\n')
	}
	return b
}

// ConfValue returns the value of a conf key recorded in the metadata (the
// last occurrence, as a Scala Map built from the JSON would keep).
func (o *OffsetSeq) ConfValue(key string) (string, bool) {
	if o == nil || o.Metadata == nil {
		return "", false
	}
	for i := len(o.Metadata.Conf) - 1; i >= 0; i-- {
		if o.Metadata.Conf[i].Key == key {
			return o.Metadata.Conf[i].Value, true
		}
	}
	return "", false
}

// JSON returns the metadata the way json4s writes OffsetSeqMetadata:
// {"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{...}} followed by any
// extra keys, compact, Jackson escaping.
func (m *OffsetMetadata) JSON() string {
	if m == nil {
		return ""
	}
	return string(m.appendJSON(nil))
}

func (m *OffsetMetadata) appendJSON(b []byte) []byte {
	b = append(b, `{"batchWatermarkMs":`...)
	b = appendInt(b, m.BatchWatermarkMs)
	b = append(b, `,"batchTimestampMs":`...)
	b = appendInt(b, m.BatchTimestampMs)
	if m.Conf != nil {
		b = append(b, `,"conf":{`...)
		for i, kv := range m.Conf {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, kv.Key)
			b = append(b, ':')
			b = appendJSONString(b, kv.Value)
		}
		b = append(b, '}')
	}
	b = appendExtra(b, m.Extra)
	return append(b, '}')
}

func appendExtra(b []byte, extra []KV) []byte {
	for _, kv := range extra {
		b = append(b, ',')
		b = appendJSONString(b, kv.Key)
		b = append(b, ':')
		b = append(b, kv.Value...)
	}
	return b
}

// parseOffsetMetadata reads the (trimmed) metadata line.
func parseOffsetMetadata(file string, line int, d []byte) (*OffsetMetadata, *Error) {
	const expected = "offset metadata JSON"
	kind, s, e, je := scanDocument(d)
	if je != nil {
		return nil, badJSON(file, line, expected, d, je)
	}
	if kind != jObject {
		return nil, badJSONShape(file, line, expected+" object", d)
	}
	m := &OffsetMetadata{}
	var ferr *Error
	_, je = scanObject(d[s:e], 0, 1, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		v := d[s+vs : s+ve]
		switch string(key) {
		case "batchWatermarkMs", "batchTimestampMs":
			n, ok := int64Value(v, 0, len(v))
			if kind != jNumber || !ok {
				ferr = fieldErr(file, line, string(key), "an integer", v)
				return errStop
			}
			if key[5] == 'W' {
				m.BatchWatermarkMs = n
			} else {
				m.BatchTimestampMs = n
			}
		case "conf":
			if kind != jObject {
				ferr = fieldErr(file, line, "conf", "an object of strings", v)
				return errStop
			}
			m.Conf = []KV{}
			_, err := scanObject(v, 0, 1, func(k []byte, kk jsonKind, cs, ce int) *jsonErr {
				if kk != jString {
					ferr = fieldErr(file, line, "conf."+string(k), "a string", v[cs:ce])
					return errStop
				}
				m.Conf = append(m.Conf, KV{Key: string(k), Value: stringValue(v, cs, ce)})
				return nil
			})
			return err
		default:
			m.Extra = append(m.Extra, KV{Key: string(key), Value: string(v)})
		}
		return nil
	})
	if ferr != nil {
		return nil, ferr
	}
	if je != nil {
		return nil, badJSON(file, line, expected, d, je)
	}
	return m, nil
}

func badJSON(file string, line int, expected string, d []byte, e *jsonErr) *Error {
	return &Error{File: file, Line: line, Kind: KindBadJSON,
		Expected: expected + " (" + e.Error() + ")", Got: excerpt(string(d))}
}

func badJSONShape(file string, line int, expected string, d []byte) *Error {
	return &Error{File: file, Line: line, Kind: KindBadJSON, Expected: expected, Got: excerpt(string(d))}
}

func fieldErr(file string, line int, field, want string, v []byte) *Error {
	return &Error{File: file, Line: line, Kind: KindBadJSON,
		Expected: `"` + field + `" to be ` + want, Got: excerpt(string(v))}
}

// checkUTF8 mirrors scala.io.Source, which Spark uses for the line-oriented
// logs: its UTF-8 decoder reports malformed input instead of replacing it.
func checkUTF8(file string, data []byte) *Error {
	if utf8.Valid(data) {
		return nil
	}
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			end := i + 1
			for end < len(data) && data[end] != '\n' && data[end] != '\r' {
				end++
			}
			return &Error{File: file, Line: line, Kind: KindMalformed, Expected: "UTF-8 text",
				Got: excerpt(string(data[start:end])), Spark: "java.nio.charset.MalformedInputException"}
		}
		if data[i] == '\n' || (data[i] == '\r' && (i+1 >= len(data) || data[i+1] != '\n')) {
			line++
			start = i + 1
		}
		i += size
	}
	return nil
}
