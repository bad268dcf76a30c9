package logformat

import (
	"errors"
	"io"
	"unicode/utf8"
)

// SinkFileStatus is one entry of a file sink's _spark_metadata log
// (FileStreamSinkLog), JSON fields in this order.
type SinkFileStatus struct {
	Path             string // URI-encoded path as Spark wrote it
	Size             int64
	IsDir            bool
	ModificationTime int64
	BlockReplication int
	BlockSize        int64
	Action           string // "add" or "delete"
}

// FileEntry is one entry of a file source's sources/<i> log
// (FileStreamSourceLog): a file and the source log offset that saw it.
type FileEntry struct {
	Path      string
	Timestamp int64
	BatchID   int64
}

// SinkLog is one _spark_metadata/N[.compact] file read whole.
type SinkLog struct {
	Version         int
	Entries         []SinkFileStatus
	TrailingNewline bool
	CRBreaks        int // line breaks that were "\r\n" or "\r"
}

// FileSourceLog is one sources/<i>/N[.compact] file read whole.
type FileSourceLog struct {
	Version         int
	Entries         []FileEntry
	TrailingNewline bool
	CRBreaks        int
}

// compactReader is the shared streaming core of both compactible logs.
type compactReader struct {
	file    string
	lr      *lineReader
	version int
}

func newCompactReader(file string, r io.Reader, maxVersion int) (*compactReader, error) {
	c := &compactReader{file: file, lr: newLineReader(r)}
	line, ok, err := c.lr.next()
	if err != nil {
		return nil, c.readErr(err)
	}
	if !ok {
		return nil, &Error{File: file, Line: 1, Kind: KindEmpty,
			Expected: `a version header like "v1"`, Got: `""`, Spark: sparkIncomplete}
	}
	if e := lineUTF8(file, 1, line); e != nil {
		return nil, e
	}
	v, verr := parseVersionHeader(file, 1, line, maxVersion)
	if verr != nil {
		return nil, verr
	}
	c.version = v
	return c, nil
}

func (c *compactReader) readErr(err error) *Error {
	if errors.Is(err, errLineTooLong) {
		return lineTooLong(c.file, c.lr.line+1, -1)
	}
	return &Error{File: c.file, Line: c.lr.line + 1, Kind: KindMalformed,
		Expected: "a readable line", Got: excerpt(err.Error())}
}

// nextLine returns the next entry line, io.EOF at the end.
func (c *compactReader) nextLine(what string) ([]byte, error) {
	line, ok, err := c.lr.next()
	if err != nil {
		return nil, c.readErr(err)
	}
	if !ok {
		return nil, io.EOF
	}
	if e := lineUTF8(c.file, c.lr.line, line); e != nil {
		return nil, e
	}
	if len(line) == 0 {
		return nil, &Error{File: c.file, Line: c.lr.line, Kind: KindBlankLine, Expected: what, Got: `""`}
	}
	return line, nil
}

func lineUTF8(file string, line int, b []byte) *Error {
	if utf8.Valid(b) {
		return nil
	}
	return &Error{File: file, Line: line, Kind: KindMalformed, Expected: "UTF-8 text",
		Got: excerpt(string(b)), Spark: "java.nio.charset.MalformedInputException"}
}

// entryReader streams the entries of one compactible log; the two log
// kinds differ only in how an entry line parses.
type entryReader[T any] struct {
	c     *compactReader
	what  string
	parse func(file string, line int, b []byte) (T, *Error)
}

// Version is the log's version (1).
func (r *entryReader[T]) Version() int { return r.c.version }

// Line is the 1-based number of the last line read.
func (r *entryReader[T]) Line() int { return r.c.lr.line }

// TrailingNewline reports, after Next returned io.EOF, whether the file
// ended with a line break.
func (r *entryReader[T]) TrailingNewline() bool { return r.c.lr.trailingNewline }

// CRBreaks counts "\r\n" and "\r" line breaks seen so far.
func (r *entryReader[T]) CRBreaks() int { return r.c.lr.crBreaks }

// Next returns the next entry, or io.EOF after the last one. Errors are
// *Error naming the file and line.
func (r *entryReader[T]) Next() (T, error) {
	var zero T
	line, err := r.c.nextLine(r.what)
	if err != nil {
		return zero, err
	}
	v, e := r.parse(r.c.file, r.c.lr.line, line)
	if e != nil {
		return zero, e
	}
	return v, nil
}

// parsedLog is a compactible log read whole.
type parsedLog[T any] struct {
	version  int
	entries  []T
	trailing bool
	crBreaks int
}

// parseWhole parses a whole compactible log file.
func parseWhole[T any](file string, data []byte, maxVersion int, what string,
	parse func(file string, line int, b []byte) (T, *Error)) (parsedLog[T], error) {
	// UTF-8 is checked line by line, in reading order, so the result is the
	// same as the streaming reader's.
	ls := splitLines(data)
	if e := ls.tooLong(file); e != nil {
		return parsedLog[T]{}, e
	}
	if len(ls.text) == 0 {
		return parsedLog[T]{}, &Error{File: file, Line: 1, Kind: KindEmpty,
			Expected: `a version header like "v1"`, Got: `""`, Spark: sparkIncomplete}
	}
	if e := lineUTF8(file, 1, ls.text[0]); e != nil {
		return parsedLog[T]{}, e
	}
	v, verr := parseVersionHeader(file, 1, ls.text[0], maxVersion)
	if verr != nil {
		return parsedLog[T]{}, verr
	}
	l := parsedLog[T]{version: v, trailing: ls.trailingNewline, crBreaks: ls.crBreaks,
		entries: make([]T, 0, len(ls.text)-1)}
	for i, line := range ls.text[1:] {
		if e := lineUTF8(file, i+2, line); e != nil {
			return parsedLog[T]{}, e
		}
		if len(line) == 0 {
			return parsedLog[T]{}, &Error{File: file, Line: i + 2, Kind: KindBlankLine, Expected: what, Got: `""`}
		}
		st, e := parse(file, i+2, line)
		if e != nil {
			return parsedLog[T]{}, e
		}
		l.entries = append(l.entries, st)
	}
	return l, nil
}

// marshalLog writes a compactible log as CompactibleFileStreamLog.serialize does.
func marshalLog[T any](version int, entries []T, trailing bool, perEntry int, app func([]byte, T) []byte) []byte {
	if version == 0 {
		version = 1
	}
	b := appendHeader(make([]byte, 0, 2+len(entries)*perEntry), version)
	for _, e := range entries {
		b = append(b, '\n')
		b = app(b, e)
	}
	if trailing {
		b = append(b, '\n')
	}
	return b
}

// SinkLogReader streams the entries of a file sink log so a compact file
// with millions of entries never has to be held in memory.
type SinkLogReader struct {
	entryReader[SinkFileStatus]
}

const sinkEntryWhat = "a file sink log entry JSON"

// NewSinkLogReader reads and validates the version header.
func NewSinkLogReader(file string, r io.Reader) (*SinkLogReader, error) {
	c, err := newCompactReader(file, r, SinkLogMaxVersion)
	if err != nil {
		return nil, err
	}
	return &SinkLogReader{entryReader[SinkFileStatus]{c, sinkEntryWhat, parseSinkEntry}}, nil
}

// ParseSinkLog parses a whole _spark_metadata file.
func ParseSinkLog(file string, data []byte) (*SinkLog, error) {
	l, err := parseWhole(file, data, SinkLogMaxVersion, sinkEntryWhat, parseSinkEntry)
	if err != nil {
		return nil, err
	}
	return &SinkLog{Version: l.version, Entries: l.entries, TrailingNewline: l.trailing, CRBreaks: l.crBreaks}, nil
}

// Marshal returns the bytes CompactibleFileStreamLog.serialize writes.
func (l *SinkLog) Marshal() []byte {
	return marshalLog(l.Version, l.Entries, l.TrailingNewline, 128, AppendSinkFileStatusJSON)
}

// AppendSinkFileStatusJSON appends the entry as json4s writes it, so
// callers can stream a large log to their own writer.
func AppendSinkFileStatusJSON(b []byte, s SinkFileStatus) []byte {
	b = append(b, `{"path":`...)
	b = appendJSONString(b, s.Path)
	b = append(b, `,"size":`...)
	b = appendInt(b, s.Size)
	if s.IsDir {
		b = append(b, `,"isDir":true`...)
	} else {
		b = append(b, `,"isDir":false`...)
	}
	b = append(b, `,"modificationTime":`...)
	b = appendInt(b, s.ModificationTime)
	b = append(b, `,"blockReplication":`...)
	b = appendInt(b, int64(s.BlockReplication))
	b = append(b, `,"blockSize":`...)
	b = appendInt(b, s.BlockSize)
	b = append(b, `,"action":`...)
	b = appendJSONString(b, s.Action)
	return append(b, '}')
}

const (
	sfPath = 1 << iota
	sfSize
	sfIsDir
	sfModTime
	sfRepl
	sfBlockSize
	sfAction
	sfAll = 1<<iota - 1
)

var sinkFieldNames = []string{"path", "size", "isDir", "modificationTime", "blockReplication", "blockSize", "action"}

// parseSinkEntry decodes one entry line, allocating only the path string
// (and the action when it is neither "add" nor "delete").
func parseSinkEntry(file string, line int, d []byte) (SinkFileStatus, *Error) {
	var st SinkFileStatus
	obj := d
	seen := 0
	var bad string
	notObject, je := scanTopObject(obj, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		switch string(key) {
		case "path":
			if kind != jString {
				bad = "path"
				return errStop
			}
			st.Path = stringValue(obj, vs, ve)
			seen |= sfPath
		case "action":
			if kind != jString {
				bad = "action"
				return errStop
			}
			switch v := obj[vs:ve]; string(v) {
			case `"add"`:
				st.Action = "add"
			case `"delete"`:
				st.Action = "delete"
			default:
				st.Action = stringValue(obj, vs, ve)
			}
			seen |= sfAction
		case "isDir":
			switch string(obj[vs:ve]) {
			case "true":
				st.IsDir = true
			case "false":
				st.IsDir = false
			default:
				bad = "isDir"
				return errStop
			}
			seen |= sfIsDir
		case "size", "modificationTime", "blockReplication", "blockSize":
			n, ok := int64Value(obj, vs, ve)
			if kind != jNumber || !ok {
				bad = string(key)
				return errStop
			}
			switch key[0] {
			case 's':
				st.Size = n
				seen |= sfSize
			case 'm':
				st.ModificationTime = n
				seen |= sfModTime
			default:
				if key[5] == 'R' { // blockReplication: a Scala Int
					if n != int64(int32(n)) {
						bad = string(key)
						return errStop
					}
					st.BlockReplication = int(n)
					seen |= sfRepl
				} else {
					st.BlockSize = n
					seen |= sfBlockSize
				}
			}
		}
		return nil
	})
	if bad != "" {
		return SinkFileStatus{}, fieldErr(file, line, bad, sinkFieldWant(bad), fieldValue(obj, bad))
	}
	if je != nil {
		return SinkFileStatus{}, badJSON(file, line, sinkEntryWhat, d, je)
	}
	if notObject {
		return SinkFileStatus{}, badJSONShape(file, line, sinkEntryWhat+" object", d)
	}
	if seen != sfAll {
		for i, n := range sinkFieldNames {
			if seen&(1<<i) == 0 {
				return SinkFileStatus{}, &Error{File: file, Line: line, Kind: KindBadJSON,
					Expected: `a field "` + n + `"`, Got: excerpt(string(d)),
					Spark: json4sNoUsableValue(n, sinkFieldJavaType(n))}
			}
		}
	}
	return st, nil
}

func sinkFieldWant(f string) string {
	switch f {
	case "path", "action":
		return "a string"
	case "isDir":
		return "a boolean"
	case "blockReplication":
		return "a 32-bit integer"
	}
	return "an integer"
}

// fieldValue finds the raw value of key in a valid object, for messages.
func fieldValue(obj []byte, key string) []byte {
	var v []byte
	scanObject(obj, 0, 1, func(k []byte, _ jsonKind, vs, ve int) *jsonErr {
		if string(k) == key {
			v = obj[vs:ve]
		}
		return nil
	})
	return v
}

// FileSourceLogReader streams the entries of a file source log.
type FileSourceLogReader struct {
	entryReader[FileEntry]
}

const fileEntryWhat = "a file source log entry JSON"

// NewFileSourceLogReader reads and validates the version header.
func NewFileSourceLogReader(file string, r io.Reader) (*FileSourceLogReader, error) {
	c, err := newCompactReader(file, r, FileSourceLogMaxVersion)
	if err != nil {
		return nil, err
	}
	return &FileSourceLogReader{entryReader[FileEntry]{c, fileEntryWhat, parseFileEntry}}, nil
}

// ParseFileSourceLog parses a whole sources/<i>/N[.compact] file.
func ParseFileSourceLog(file string, data []byte) (*FileSourceLog, error) {
	l, err := parseWhole(file, data, FileSourceLogMaxVersion, fileEntryWhat, parseFileEntry)
	if err != nil {
		return nil, err
	}
	return &FileSourceLog{Version: l.version, Entries: l.entries, TrailingNewline: l.trailing, CRBreaks: l.crBreaks}, nil
}

// Marshal returns the bytes CompactibleFileStreamLog.serialize writes.
func (l *FileSourceLog) Marshal() []byte {
	return marshalLog(l.Version, l.Entries, l.TrailingNewline, 64, AppendFileEntryJSON)
}

// AppendFileEntryJSON appends the entry as json4s writes it.
func AppendFileEntryJSON(b []byte, f FileEntry) []byte {
	b = append(b, `{"path":`...)
	b = appendJSONString(b, f.Path)
	b = append(b, `,"timestamp":`...)
	b = appendInt(b, f.Timestamp)
	b = append(b, `,"batchId":`...)
	b = appendInt(b, f.BatchID)
	return append(b, '}')
}

func parseFileEntry(file string, line int, d []byte) (FileEntry, *Error) {
	var fe FileEntry
	obj := d
	seen := 0
	var bad string
	notObject, je := scanTopObject(obj, func(key []byte, kind jsonKind, vs, ve int) *jsonErr {
		switch string(key) {
		case "path":
			if kind != jString {
				bad = "path"
				return errStop
			}
			fe.Path = stringValue(obj, vs, ve)
			seen |= 1
		case "timestamp", "batchId":
			n, ok := int64Value(obj, vs, ve)
			if kind != jNumber || !ok {
				bad = string(key)
				return errStop
			}
			if key[0] == 't' {
				fe.Timestamp = n
				seen |= 2
			} else {
				fe.BatchID = n
				seen |= 4
			}
		}
		return nil
	})
	if bad != "" {
		want := "an integer"
		if bad == "path" {
			want = "a string"
		}
		return FileEntry{}, fieldErr(file, line, bad, want, fieldValue(obj, bad))
	}
	if je != nil {
		return FileEntry{}, badJSON(file, line, fileEntryWhat, d, je)
	}
	if notObject {
		return FileEntry{}, badJSONShape(file, line, fileEntryWhat+" object", d)
	}
	for i, n := range []string{"path", "timestamp", "batchId"} {
		if seen&(1<<i) == 0 {
			return FileEntry{}, &Error{File: file, Line: line, Kind: KindBadJSON,
				Expected: `a field "` + n + `"`, Got: excerpt(string(d)),
				Spark: json4sNoUsableValue(n, fileEntryJavaType(n))}
		}
	}
	return fe, nil
}

// json4sNoUsableValue is the MappingException text json4s raises when a
// required case class field is missing.
func json4sNoUsableValue(field, javaType string) string {
	return "No usable value for " + field + "\nDid not find value which can be converted into " + javaType
}

func sinkFieldJavaType(f string) string {
	switch f {
	case "path", "action":
		return "java.lang.String"
	case "isDir":
		return "boolean"
	case "blockReplication":
		return "int"
	}
	return "long"
}

func fileEntryJavaType(f string) string {
	if f == "path" {
		return "java.lang.String"
	}
	return "long"
}
