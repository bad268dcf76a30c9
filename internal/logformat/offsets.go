package logformat

import (
	"bytes"
	"slices"
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
	return parseOffsets(file, data, true)
}

// ParseOffsetsWithoutConf is ParseOffsets for callers that never look at
// the conf: it accepts and rejects exactly the same files with the same
// errors (the conf is still validated), but leaves Metadata.Conf nil, which
// saves copying the bulk of a typical metadata line.
func ParseOffsetsWithoutConf(file string, data []byte) (*OffsetSeq, error) {
	return parseOffsets(file, data, false)
}

func parseOffsets(file string, data []byte, keepConf bool) (*OffsetSeq, error) {
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	// Every "\n" and every "\r" ends a line (a "\r\n" ends one): more of either than the limit
	// allows is refused before the lines are split, which costs 24 bytes a line.
	if breaks := max(bytes.Count(data, []byte{'\n'}), bytes.Count(data, []byte{'\r'})); breaks-2 > MaxSources {
		return nil, tooManySources(file, "at least "+itoa(breaks-2))
	}
	ls := splitLines(data)
	if e := ls.tooLong(file); e != nil {
		return nil, e
	}
	if len(ls.text) == 0 {
		return nil, &Error{File: file, Line: 1, Kind: KindEmpty,
			Expected: `a version header like "v1"`, Got: `""`, Spark: sparkIncomplete}
	}
	version, verr := parseVersionHeader(file, 1, ls.text[0], OffsetsMaxVersion)
	if verr != nil {
		return nil, verr
	}
	if n := len(ls.text) - 2; n > MaxSources {
		return nil, tooManySources(file, itoa(n))
	}
	if len(ls.text) < 2 {
		return nil, &Error{File: file, Line: 2, Kind: KindMissingMetadata,
			Expected: "a metadata line (offset metadata JSON or an empty line)", Got: "end of file",
			Spark: sparkNoSuchElement}
	}
	// The seq and its metadata share one allocation.
	om := &struct {
		seq OffsetSeq
		md  OffsetMetadata
	}{seq: OffsetSeq{Version: version, TrailingNewline: ls.trailingNewline, CRBreaks: ls.crBreaks}}
	o := &om.seq
	if md := javaTrim(ls.text[1]); len(md) > 0 {
		if err := parseOffsetMetadata(file, 2, md, &om.md, keepConf); err != nil {
			return nil, err
		}
		o.Metadata = &om.md
	}
	srcs := ls.text[2:]
	if len(srcs) == 0 {
		return o, nil
	}
	// Every source line is a substring of one string holding the rest of
	// the file: lines alias data, so a line starts at cap(data)-cap(line).
	base := cap(data) - cap(srcs[0])
	rest := string(data[base:])
	o.Sources = make([]SourceOffset, 0, len(srcs))
	for i, raw := range srcs {
		lineNo := i + 3
		from := cap(data) - cap(raw) - base
		line := rest[from : from+len(raw)]
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

// parseOffsetMetadata reads the (trimmed, non-empty) metadata line into m in
// one validating pass. As in a validate-then-decode reader, a syntax error
// anywhere in the line wins over a field of the wrong type, and among field
// errors the first in file order wins. Without keepConf the conf is
// validated but not kept.
func parseOffsetMetadata(file string, line int, d []byte, m *OffsetMetadata, keepConf bool) *Error {
	const expected = "offset metadata JSON"
	if d[0] != '{' {
		if _, _, _, je := scanDocument(d); je != nil {
			return badJSON(file, line, expected, d, je)
		}
		return badJSONShape(file, line, expected+" object", d)
	}
	// The conf keys and values (the bulk of the line) and extra values are
	// substrings of one string, made when first needed.
	var text string
	str := func() string {
		if text == "" {
			text = string(d)
		}
		return text
	}
	var ferr *Error
	_, je := scanTopObject(d, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		if ferr != nil {
			return nil // keep validating: a syntax error further on wins
		}
		v := d[vs:ve]
		switch string(key) {
		case "batchWatermarkMs", "batchTimestampMs":
			n, ok := int64Value(v, 0, len(v))
			if kind != jNumber || !ok {
				ferr = fieldErr(file, line, string(key), "an integer", v)
				return nil
			}
			if key[5] == 'W' {
				m.BatchWatermarkMs = n
			} else {
				m.BatchTimestampMs = n
			}
		case "conf":
			if kind != jObject {
				ferr = fieldErr(file, line, "conf", "an object of strings", v)
				return nil
			}
			if keepConf {
				m.Conf, ferr = parseConf(file, line, d, str(), vs)
			} else {
				_, ferr = parseConf(file, line, d, "", vs)
			}
		default:
			m.Extra = append(m.Extra, KV{Key: string(key), Value: str()[vs:ve]})
		}
		return nil
	})
	if je != nil {
		return badJSON(file, line, expected, d, je)
	}
	return ferr
}

// parseConf reads the conf object at d[i], which the caller has validated:
// every member must have a string value. Keys and values without escapes
// are substrings of text (== string(d)); with text == "" the members are
// only checked and the result is nil.
func parseConf(file string, line int, d []byte, text string, i int) ([]KV, *Error) {
	var buf [32]KV
	kvs := buf[:0]
	i = skipWS(d, i+1)
	if d[i] == '}' {
		if text == "" {
			return nil, nil
		}
		return []KV{}, nil
	}
	for {
		ks := i
		ke, kesc := validStringEnd(d, ks)
		i = skipWS(d, ke)  // ':'
		i = skipWS(d, i+1) // the value
		vs := i
		if d[vs] != '"' {
			_, ve, _ := scanValue(d, vs, 0)
			key := string(d[ks+1 : ke-1])
			if kesc {
				key = string(appendUnquoted(nil, d[ks:ke]))
			}
			return nil, fieldErr(file, line, "conf."+key, "a string", d[vs:ve])
		}
		ve, vesc := validStringEnd(d, vs)
		if text != "" {
			kvs = append(kvs, KV{Key: decodedString(d, text, ks, ke, kesc), Value: decodedString(d, text, vs, ve, vesc)})
		}
		i = skipWS(d, ve)
		if d[i] == '}' {
			if text == "" {
				return nil, nil
			}
			return slices.Clone(kvs), nil
		}
		i = skipWS(d, i+1) // after ','
	}
}

// validStringEnd returns the end of the validated string literal at d[i]
// and whether it has escapes.
func validStringEnd(d []byte, i int) (int, bool) {
	esc := false
	j := i + 1
	for {
		for strPlain[d[j]] {
			j++
		}
		if d[j] == '"' {
			return j + 1, esc
		}
		esc = true // a backslash: skip the escaped byte
		j += 2
	}
}

// decodedString is the value of the validated string literal d[s:e]:
// a substring of text (== string(d)) when it has no escapes.
func decodedString(d []byte, text string, s, e int, escaped bool) string {
	if escaped {
		return string(appendUnquoted(nil, d[s:e]))
	}
	return text[s+1 : e-1]
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

// tooManySources is the error for an offsets file with more than MaxSources source lines.
func tooManySources(file, got string) *Error {
	return &Error{File: file, Line: MaxSources + 3, Kind: KindLineTooLong,
		Expected: "at most " + itoa(MaxSources) + " source lines (--max-sources or CKPT_MAX_SOURCES raises the limit)",
		Got:      got + " source lines"}
}
