package logformat

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Commit is one commits/N file, written after batch N's sink write
// succeeded.
type Commit struct {
	Version               int // 1, 2 (checkpoint format v2) or 3 (master)
	NextBatchWatermarkMs  int64
	HasNextBatchWatermark bool            // false for "{}" (Spark 2.2/2.3) and header-only files
	HeaderOnly            bool            // the file held only the version line (Spark reads {} → watermark 0)
	StateUniqueIDs        json.RawMessage // v2/v3, nil if absent (operatorId -> [partition][store] -> uuid)
	SinkMetadata          json.RawMessage // v3 sinkMetadataMap, nil if absent
	Extra                 []KV            // other top-level keys, raw JSON values, file order
	// IgnoredLines holds lines after the JSON line. Spark never reads them;
	// they are kept so Marshal reproduces the file.
	IgnoredLines    []string
	TrailingNewline bool
	CRBreaks        int // line breaks that were "\r\n" or "\r"
}

// ParseCommit parses a commits/N file the way CommitLog.deserialize reads
// it: the version line is trimmed, a missing JSON line means "{}".
func ParseCommit(file string, data []byte) (*Commit, error) {
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	ls := splitLines(data)
	if e := ls.tooLong(file); e != nil {
		return nil, e
	}
	if len(ls.text) == 0 {
		return nil, &Error{File: file, Line: 1, Kind: KindEmpty,
			Expected: `a version header like "v1"`, Got: `""`, Spark: sparkIncompleteCommit}
	}
	version, verr := parseVersionHeader(file, 1, javaTrim(ls.text[0]), CommitsMaxVersion)
	if verr != nil {
		return nil, verr
	}
	c := &Commit{Version: version, TrailingNewline: ls.trailingNewline, CRBreaks: ls.crBreaks}
	if len(ls.text) == 1 {
		c.HeaderOnly = true
		return c, nil
	}
	d := ls.text[1]
	const expected = "commit metadata JSON"
	if len(javaTrim(d)) == 0 {
		return nil, &Error{File: file, Line: 2, Kind: KindBlankLine, Expected: expected, Got: excerpt(string(d))}
	}
	// One validating pass; as in a validate-then-decode reader, a syntax
	// error anywhere wins over a field of the wrong type.
	var ferr *Error
	notObject, je := scanTopObject(d, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		if ferr != nil {
			return nil // keep validating: a syntax error further on wins
		}
		v := d[vs:ve]
		switch string(key) {
		case "nextBatchWatermarkMs":
			n, ok := int64Value(v, 0, len(v))
			if kind != jNumber || !ok {
				ferr = fieldErr(file, 2, "nextBatchWatermarkMs", "an integer", v)
				return nil
			}
			c.NextBatchWatermarkMs, c.HasNextBatchWatermark = n, true
		case "stateUniqueIds":
			c.StateUniqueIDs = json.RawMessage(bytes.Clone(v))
		case "sinkMetadataMap":
			c.SinkMetadata = json.RawMessage(bytes.Clone(v))
		default:
			c.Extra = append(c.Extra, KV{Key: string(key), Value: string(v)})
		}
		return nil
	})
	if je != nil {
		return nil, badJSON(file, 2, expected, d, je)
	}
	if notObject {
		return nil, badJSONShape(file, 2, expected+" object", d)
	}
	if ferr != nil {
		return nil, ferr
	}
	for _, l := range ls.text[2:] {
		c.IgnoredLines = append(c.IgnoredLines, string(l))
	}
	return c, nil
}

// Marshal returns the bytes CommitLog.serialize writes: "v<N>\n" and the
// JSON (fields in CommitMetadata's declaration order), no trailing newline
// unless TrailingNewline.
func (c *Commit) Marshal() []byte {
	v := c.Version
	if v == 0 {
		v = 1
	}
	b := appendHeader(nil, v)
	if !c.HeaderOnly || c.HasNextBatchWatermark || c.StateUniqueIDs != nil || c.SinkMetadata != nil ||
		len(c.Extra) > 0 || len(c.IgnoredLines) > 0 {
		b = append(b, '\n')
		b = c.appendJSON(b)
		for _, l := range c.IgnoredLines {
			b = append(b, '\n')
			b = append(b, l...)
		}
	}
	if c.TrailingNewline {
		b = append(b, '\n')
	}
	return b
}

// JSON returns the commit metadata JSON as json4s writes it.
func (c *Commit) JSON() string { return string(c.appendJSON(nil)) }

func (c *Commit) appendJSON(b []byte) []byte {
	b = append(b, '{')
	sep := func() {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
	}
	if c.HasNextBatchWatermark {
		b = append(b, `"nextBatchWatermarkMs":`...)
		b = appendInt(b, c.NextBatchWatermarkMs)
	}
	if c.StateUniqueIDs != nil {
		sep()
		b = append(b, `"stateUniqueIds":`...)
		b = append(b, c.StateUniqueIDs...)
	}
	if c.SinkMetadata != nil {
		sep()
		b = append(b, `"sinkMetadataMap":`...)
		b = append(b, c.SinkMetadata...)
	}
	for _, kv := range c.Extra {
		sep()
		b = appendJSONString(b, kv.Key)
		b = append(b, ':')
		b = append(b, kv.Value...)
	}
	return append(b, '}')
}

// StateIDs decodes StateUniqueIDs (operatorId -> [partition][store] ->
// unique id), the ids that name checkpoint-format-v2 state files. It
// returns nil, nil when the field is absent.
func (c *Commit) StateIDs() (map[int64][][]string, error) {
	if c.StateUniqueIDs == nil {
		return nil, nil
	}
	d := []byte(c.StateUniqueIDs)
	bad := func(what string) error {
		return &Error{File: "", Kind: KindBadJSON, Expected: "stateUniqueIds " + what, Got: excerpt(string(d))}
	}
	kind, s, e, je := scanDocument(d)
	if je != nil {
		return nil, bad("JSON (" + je.Error() + ")")
	}
	if kind != jObject {
		return nil, bad("to be an object")
	}
	out := map[int64][][]string{}
	var ferr error
	obj := d[s:e]
	_, je = scanObject(obj, 0, 1, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		op, ok := javaParseLong(string(key))
		if !ok || kind != jArray {
			ferr = bad("to map operator ids to arrays, got key " + strconv.Quote(string(key)))
			return errStop
		}
		parts := [][]string{}
		_, err := scanArrayFn(obj, vs, 1, func(pk jsonKind, ps, pe int) *jsonErr {
			if pk != jArray {
				ferr = bad("partitions to be arrays of strings")
				return errStop
			}
			stores := []string{}
			_, err := scanArrayFn(obj, ps, 1, func(sk jsonKind, ss, se int) *jsonErr {
				if sk != jString {
					ferr = bad("store ids to be strings")
					return errStop
				}
				stores = append(stores, stringValue(obj, ss, se))
				return nil
			})
			parts = append(parts, stores)
			return err
		})
		out[op] = parts
		return err
	})
	if ferr != nil {
		return nil, ferr
	}
	if je != nil {
		return nil, bad("JSON (" + je.Error() + ")")
	}
	return out, nil
}
