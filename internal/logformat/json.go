package logformat

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small strict JSON reader (RFC 8259, as Jackson accepts it by default)
// that works on byte spans: parsers need object keys in file order and raw
// value text, which encoding/json does not give, and the compact-log reader
// must not allocate per field.

type jsonKind byte

const (
	jNull jsonKind = iota + 1
	jBool
	jNumber
	jString
	jArray
	jObject
)

// maxJSONDepth matches Jackson's default nesting limit and keeps the
// recursive scanner from exhausting the stack on hostile input.
const maxJSONDepth = 1000

type jsonErr struct {
	pos int
	msg string
}

func (e *jsonErr) Error() string { return e.msg + " at byte " + strconv.Itoa(e.pos) }

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(d []byte, i int) int {
	for i < len(d) && isWS(d[i]) {
		i++
	}
	return i
}

// errStop aborts a scan from inside a callback that has recorded its own,
// more specific error.
var errStop = &jsonErr{msg: "stopped"}

func jerr(pos int, msg string) *jsonErr { return &jsonErr{pos: pos, msg: msg} }

func eofOr(d []byte, i int, msg string) *jsonErr {
	if i >= len(d) {
		return jerr(i, "unexpected end of input")
	}
	return jerr(i, msg)
}

// scanValue validates the value starting at d[i] (no leading white space)
// and returns its kind and the index just past it.
func scanValue(d []byte, i, depth int) (jsonKind, int, *jsonErr) {
	if i >= len(d) {
		return 0, i, jerr(i, "unexpected end of input")
	}
	switch c := d[i]; {
	case c == '{':
		end, err := scanObject(d, i, depth+1, nil)
		return jObject, end, err
	case c == '[':
		end, err := scanArray(d, i, depth+1)
		return jArray, end, err
	case c == '"':
		end, _, err := scanString(d, i)
		return jString, end, err
	case c == '-' || (c >= '0' && c <= '9'):
		end, _, err := scanNumber(d, i)
		return jNumber, end, err
	case c == 't':
		return jBool, i + 4, literal(d, i, "true")
	case c == 'f':
		return jBool, i + 5, literal(d, i, "false")
	case c == 'n':
		return jNull, i + 4, literal(d, i, "null")
	default:
		return 0, i, jerr(i, "unexpected character "+strconv.QuoteRune(rune(c)))
	}
}

func literal(d []byte, i int, lit string) *jsonErr {
	if len(d)-i < len(lit) {
		if string(d[i:]) == lit[:len(d)-i] {
			return jerr(len(d), "unexpected end of input")
		}
		return jerr(i, "invalid literal")
	}
	if string(d[i:i+len(lit)]) != lit {
		return jerr(i, "invalid literal")
	}
	return nil
}

// fieldFunc receives one object member: the key (decoded; aliases d or a
// scratch buffer, valid only during the call) and the value span.
type fieldFunc func(key []byte, kind jsonKind, vstart, vend int) *jsonErr

// scanObject validates the object at d[i] and, if fn is non-nil, calls it
// for every member in file order.
func scanObject(d []byte, i, depth int, fn fieldFunc) (int, *jsonErr) {
	if depth > maxJSONDepth {
		return i, jerr(i, "nesting too deep")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	var scratch []byte
	for {
		if i >= len(d) || d[i] != '"' {
			return i, eofOr(d, i, "expected a quoted field name")
		}
		kend, escaped, err := scanString(d, i)
		if err != nil {
			return kend, err
		}
		key := d[i+1 : kend-1]
		if escaped && fn != nil {
			scratch = appendUnquoted(scratch[:0], d[i:kend])
			key = scratch
		}
		i = skipWS(d, kend)
		if i >= len(d) || d[i] != ':' {
			return i, eofOr(d, i, "expected ':' after a field name")
		}
		i = skipWS(d, i+1)
		vstart := i
		kind, vend, err := scanValue(d, i, depth)
		if err != nil {
			return vend, err
		}
		if fn != nil {
			if err := fn(key, kind, vstart, vend); err != nil {
				return vstart, err
			}
		}
		i = skipWS(d, vend)
		if i >= len(d) {
			return i, jerr(i, "unexpected end of input")
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, jerr(i, "expected ',' or '}'")
		}
	}
}

// elemFunc receives one array element span.
type elemFunc func(kind jsonKind, vstart, vend int) *jsonErr

func scanArray(d []byte, i, depth int) (int, *jsonErr) {
	return scanArrayFn(d, i, depth, nil)
}

func scanArrayFn(d []byte, i, depth int, fn elemFunc) (int, *jsonErr) {
	if depth > maxJSONDepth {
		return i, jerr(i, "nesting too deep")
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for {
		vstart := i
		kind, vend, err := scanValue(d, i, depth)
		if err != nil {
			return vend, err
		}
		if fn != nil {
			if err := fn(kind, vstart, vend); err != nil {
				return vstart, err
			}
		}
		i = skipWS(d, vend)
		if i >= len(d) {
			return i, jerr(i, "unexpected end of input")
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, jerr(i, "expected ',' or ']'")
		}
	}
}

// strPlain marks the bytes a string literal holds as they are: everything
// but '"', '\\' and control characters.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString validates the string literal at d[i] (d[i] == '"') and reports
// whether it contains escapes.
func scanString(d []byte, i int) (end int, escaped bool, err *jsonErr) {
	j := i + 1
	for {
		for j < len(d) && strPlain[d[j]] {
			j++
		}
		if j >= len(d) {
			return len(d), escaped, jerr(len(d), "unexpected end of input")
		}
		switch c := d[j]; c {
		case '"':
			return j + 1, escaped, nil
		case '\\':
			escaped = true
			if j+1 >= len(d) {
				return len(d), escaped, jerr(len(d), "unexpected end of input")
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(d)-j < 6 {
					return len(d), escaped, jerr(len(d), "unexpected end of input")
				}
				for k := j + 2; k < j+6; k++ {
					if unhex(d[k]) < 0 {
						return k, escaped, jerr(k, "invalid \\u escape")
					}
				}
				j += 6
			default:
				return j, escaped, jerr(j, "invalid escape")
			}
		default: // c < 0x20
			return j, escaped, jerr(j, "control character in string")
		}
	}
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// scanNumber validates the number at d[i]; integer is true when it has no
// fraction or exponent.
func scanNumber(d []byte, i int) (end int, integer bool, err *jsonErr) {
	j := i
	if d[j] == '-' {
		j++
	}
	if j >= len(d) {
		return j, false, jerr(j, "unexpected end of input")
	}
	switch {
	case d[j] == '0':
		j++
	case d[j] >= '1' && d[j] <= '9':
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
	default:
		return j, false, jerr(j, "invalid number")
	}
	integer = true
	if j < len(d) && d[j] == '.' {
		integer = false
		j++
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return j, false, eofOr(d, j, "invalid number")
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		integer = false
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return j, false, eofOr(d, j, "invalid number")
		}
	}
	return j, integer, nil
}

// scanDocument validates d as exactly one JSON value with optional
// surrounding white space (what Jackson's readValue plus our refusal of
// trailing content accepts) and returns its span.
func scanDocument(d []byte) (kind jsonKind, start, end int, err *jsonErr) {
	start = skipWS(d, 0)
	if start >= len(d) {
		return 0, start, start, jerr(start, "no JSON value")
	}
	kind, end, err = scanValue(d, start, 0)
	if err != nil {
		return kind, start, end, err
	}
	if j := skipWS(d, end); j != len(d) {
		return kind, start, end, jerr(j, "unexpected content after the JSON value")
	}
	return kind, start, end, nil
}

// scanTopObject parses d as one JSON object with optional surrounding white
// space in a single pass, calling fn for each member. notObject reports a
// valid document that is not an object.
func scanTopObject(d []byte, fn fieldFunc) (notObject bool, err *jsonErr) {
	i := skipWS(d, 0)
	if i < len(d) && d[i] == '{' {
		end, err := scanObject(d, i, 1, fn)
		if err != nil {
			return false, err
		}
		if j := skipWS(d, end); j != len(d) {
			return false, jerr(j, "unexpected content after the JSON value")
		}
		return false, nil
	}
	_, _, _, err = scanDocument(d)
	return err == nil, err
}

// appendUnquoted decodes the (already validated) string literal q.
func appendUnquoted(dst, q []byte) []byte {
	q = q[1 : len(q)-1]
	for i := 0; i < len(q); {
		c := q[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch q[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hex4(q[i+2:]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(q) && q[i] == '\\' && q[i+1] == 'u' {
					if r2 := rune(hex4(q[i+2:])); utf16.DecodeRune(r, r2) != utf8.RuneError {
						dst = utf8.AppendRune(dst, utf16.DecodeRune(r, r2))
						i += 6
						continue
					}
				}
				r = utf8.RuneError // Java keeps the lone surrogate; UTF-8 cannot.
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, q[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) int {
	return unhex(b[0])<<12 | unhex(b[1])<<8 | unhex(b[2])<<4 | unhex(b[3])
}

// stringValue decodes the string literal d[s:e].
func stringValue(d []byte, s, e int) string {
	q := d[s:e]
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' {
			return string(appendUnquoted(nil, q))
		}
	}
	return string(q[1 : len(q)-1])
}

// int64Value parses the number d[s:e] if it is an integer that fits int64.
func int64Value(d []byte, s, e int) (int64, bool) {
	b := d[s:e]
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var acc uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if acc > (1<<64-1)/10 {
			return 0, false
		}
		acc = acc*10 + uint64(c-'0')
	}
	if neg {
		if acc > 1<<63 {
			return 0, false
		}
		return -int64(acc), true
	}
	if acc > 1<<63-1 {
		return 0, false
	}
	return int64(acc), true
}

// appendJSONString writes s as a JSON string the way Jackson does: '"' and
// '\\' escaped, \b \t \n \f \r short escapes, other control characters as
// \u00XX (upper-case hex), everything else (including '/', DEL, U+2028 and
// all non-ASCII) written as is.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// KV is one key/value pair of a JSON object, kept in file order because
// Spark's own files are in Scala-map order that ckpt must reproduce.
type KV struct{ Key, Value string }
