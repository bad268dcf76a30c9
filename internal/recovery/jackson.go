package recovery

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"strings"
	"unicode/utf8"
)

// Jackson's texts. Spark reads the JSON of a checkpoint (the metadata file, an offsets file's
// metadata line, a commit) with json4s over Jackson's ReaderBasedJsonParser, and a file cut
// short fails with Jackson's own exception, unwrapped. This file is the one home of those texts:
// the messages of a document that ends early, as Spark 3.5.7 (Jackson 2.15.2), 4.0.0 (2.18.2)
// and 4.1.1 (2.20.0) print them (testdata/spark-oracle/*/jackson-*.json, corrupt-metadata,
// corrupt-latest-offsets-truncated).
const (
	excJSONEOF   = "com.fasterxml.jackson.core.io.JsonEOFException"
	excJSONParse = "com.fasterxml.jackson.core.JsonParseException"
	// jacksonSnippet is how much of a String source Jackson 2.15 quotes in a location
	// (ContentReference's 500 chars), followed by "[truncated N chars]".
	jacksonSnippet = 500
)

// jacksonLocation renders a JsonLocation: 3.5's Jackson quotes a String source and names a
// Reader's class; from 4.0 (Jackson 2.16+, INCLUDE_SOURCE_IN_LOCATION off by default) the source
// is REDACTED.
func jacksonLocation(r release, doc []uint16, fromReader bool, line, col int) string {
	var src string
	switch {
	case r.atLeast(4, 0):
		src = "REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled)"
	case fromReader:
		src = "(InputStreamReader)"
	default:
		cut := doc
		if len(cut) > jacksonSnippet {
			cut = cut[:jacksonSnippet]
		}
		src = `(String)"` + string(utf16Runes(cut)) + `"`
		if len(doc) > jacksonSnippet {
			src += fmt.Sprintf("[truncated %d chars]", len(doc)-jacksonSnippet)
		}
	}
	return fmt.Sprintf("[Source: %s; line: %d, column: %d]", src, line, col)
}

// jacksonChecked says whether Jackson's texts for r were confirmed by running Spark: the
// releases of the oracle (3.5, 4.0, 4.1); elsewhere they are ckpt's best guess, marked inexact.
func jacksonChecked(r release) bool {
	return r.atLeast(3, 5) && !r.atLeast(4, 2)
}

// jacksonEOF is the exception Jackson raises on doc, a JSON document that ends before its
// value does (a truncated file), read from a String (fromReader false) or a Reader. ok is false
// when doc is not such a prefix, or ends where ckpt does not know Jackson's text (inside a
// number's sign, fraction or exponent, or a literal; a control character, a \r or a character
// outside the BMP anywhere): the caller then keeps its own description.
func jacksonEOF(r release, doc string, fromReader bool) (sparkFailure, bool) {
	if !utf8.ValidString(doc) {
		return sparkFailure{}, false
	}
	var u []uint16
	for _, c := range doc {
		if c > 0xFFFF || c == '\r' || (c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f) {
			return sparkFailure{}, false
		}
		if c == '\n' && !fromReader && !r.atLeast(4, 0) {
			return sparkFailure{}, false // 3.5 would quote it escaped: not modelled
		}
		u = append(u, uint16(c))
	}
	type frame struct {
		array     bool
		line, col int // of the opening bracket
	}
	var stack []frame
	line, col, i := 1, 1, 0
	next := func() { // consumes u[i]
		if u[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i++
	}
	skipWS := func() {
		for i < len(u) && (u[i] == ' ' || u[i] == '\t' || u[i] == '\n') {
			next()
		}
	}
	// seen: the text is one Spark printed in the oracle (objects; not arrays or escapes,
	// which no checkpoint document of the oracle cuts): otherwise inexact.
	fail := func(exc, msg string, seen bool) (sparkFailure, bool) {
		return sparkFailure{exception: exc, exact: seen && jacksonChecked(r),
			message: "Unexpected end-of-input" + msg + "\n at " + jacksonLocation(r, u, fromReader, line, col)}, true
	}
	closeMarker := func() (sparkFailure, bool) {
		f := stack[len(stack)-1]
		kind := "Object"
		if f.array {
			kind = "Array"
		}
		return fail(excJSONEOF, fmt.Sprintf(": expected close marker for %s (start marker at %s)", kind, jacksonLocation(r, u, fromReader, f.line, f.col)), !f.array)
	}
	entries := func(exc string) (sparkFailure, bool) {
		kind := "Object"
		if stack[len(stack)-1].array {
			kind = "Array"
		}
		return fail(exc, " within/between "+kind+" entries", kind == "Object")
	}
	// str consumes a string from its opening quote; eof is the message at the end of input.
	str := func(eof string) (done bool, f sparkFailure, ok bool) {
		next()
		for i < len(u) {
			switch c := u[i]; {
			case c == '"':
				next()
				return true, sparkFailure{}, false
			case c == '\\':
				next()
				if i >= len(u) {
					f, ok = fail(excJSONEOF, " in character escape sequence", false)
					return false, f, ok
				}
				if u[i] == 'u' {
					next()
					for k := 0; k < 4; k++ {
						if i >= len(u) {
							f, ok = fail(excJSONEOF, " in character escape sequence", false)
							return false, f, ok
						}
						if !strings.ContainsRune("0123456789abcdefABCDEF", rune(u[i])) {
							return false, sparkFailure{}, false
						}
						next()
					}
					continue
				}
				if !strings.ContainsRune(`"\/bfnrt`, rune(u[i])) {
					return false, sparkFailure{}, false
				}
				next()
			case c < 0x20:
				return false, sparkFailure{}, false
			default:
				next()
			}
		}
		f, ok = fail(excJSONEOF, eof, true)
		return false, f, ok
	}

	// The parser's position: a value is expected (after '[', ',' in an array, ':' in an object,
	// or at the root), a name (after '{' or ',' in an object), or a ',' or closing bracket.
	const (
		wantValue = iota
		wantName
		wantEnd
	)
	state, afterComma := wantValue, false
	for {
		skipWS()
		eof := i >= len(u)
		switch state {
		case wantValue:
			if eof {
				switch {
				case len(stack) == 0:
					return sparkFailure{}, false // no content: databind's error, not the parser's
				case !stack[len(stack)-1].array:
					return entries(excJSONEOF) // after the colon: _skipColon2
				case afterComma:
					return entries(excJSONParse) // _skipAfterComma2
				default:
					return closeMarker()
				}
			}
			switch c := u[i]; {
			case c == '{' || c == '[':
				stack = append(stack, frame{array: c == '[', line: line, col: col})
				next()
				state, afterComma = wantName, false
				if c == '[' {
					state = wantValue
					skipWS()
					if i < len(u) && u[i] == ']' {
						next()
						stack = stack[:len(stack)-1]
						state = wantEnd
					}
				}
				continue
			case c == '"':
				done, f, ok := str(": was expecting closing quote for a string value")
				if !done {
					return f, ok
				}
			case c == '-' || (c >= '0' && c <= '9'):
				// Only plain integers are modelled: a cut inside a sign, fraction or exponent
				// has texts ckpt has not seen Spark print.
				if c == '-' {
					next()
				}
				start := i
				for i < len(u) && u[i] >= '0' && u[i] <= '9' {
					next()
				}
				if i == start || (u[start] == '0' && i-start > 1) || (i < len(u) && (u[i] == '.' || u[i] == 'e' || u[i] == 'E')) {
					return sparkFailure{}, false
				}
			default:
				return sparkFailure{}, false // literals, or not JSON
			}
			state = wantEnd
		case wantName:
			if eof {
				if afterComma {
					return entries(excJSONParse)
				}
				return closeMarker()
			}
			if u[i] == '}' && !afterComma {
				next()
				stack = stack[:len(stack)-1]
				state = wantEnd
				continue
			}
			if u[i] != '"' {
				return sparkFailure{}, false
			}
			done, f, ok := str(" in field name")
			if !done {
				return f, ok
			}
			skipWS()
			if i >= len(u) {
				return entries(excJSONEOF)
			}
			if u[i] != ':' {
				return sparkFailure{}, false
			}
			next()
			state, afterComma = wantValue, false
		case wantEnd:
			if len(stack) == 0 {
				return sparkFailure{}, false // a complete document
			}
			if eof {
				return closeMarker()
			}
			top := stack[len(stack)-1]
			switch c := u[i]; {
			case c == ',':
				next()
				state, afterComma = wantName, true
				if top.array {
					state = wantValue
				}
			case (c == '}' && !top.array) || (c == ']' && top.array):
				next()
				stack = stack[:len(stack)-1]
			default:
				return sparkFailure{}, false
			}
		}
	}
}

func utf16Runes(u []uint16) []rune {
	out := make([]rune, len(u))
	for i, c := range u {
		out[i] = rune(c)
	}
	return out
}

// jacksonFailure is Jackson's exception for a truncated JSON document of the checkpoint file
// rel: its line (1-based; 0: the whole file, read from a Reader). Nil when the file does not
// read or the document is not one whose text ckpt knows.
func (p *planner) jacksonFailure(rel string, line int) *sparkFailure {
	data, err := p.cp.ReadFile(p.ctx, rel)
	if err != nil {
		return nil
	}
	doc := string(data)
	if line > 0 {
		// Spark's getLines: the line without its terminator.
		lines := strings.Split(doc, "\n")
		if line > len(lines) {
			return nil
		}
		doc = lines[line-1]
	}
	f, ok := jacksonEOF(p.rel, doc, line == 0)
	if !ok {
		return nil
	}
	return &f
}

// jsonReadFailure is readFailure for the log file rel, with Jackson's exception where its
// metadata line (line 2: an offsets file's metadata, a commit) is JSON cut short.
func (p *planner) jsonReadFailure(rel, sparkPath string, le *logformat.Error, err error) sparkFailure {
	f := readFailure(p.rel, sparkPath, err)
	if !f.exact && le.Kind == logformat.KindBadJSON && le.Line == 2 {
		if j := p.jacksonFailure(rel, 2); j != nil {
			return *j
		}
	}
	return f
}
