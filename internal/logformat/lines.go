package logformat

import (
	"bytes"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxLineBytes bounds one line of any file the parsers read (8 MiB). Spark has no such limit, but
// real lines are far below it (a Kafka offsets line for 100,000 partitions is about 3 MB), while a
// corrupt line of hundreds of megabytes would cost many times its size to parse.
const MaxLineBytes = 8 << 20

// DefaultMaxFileBytes is the default of MaxFileBytes (64 MiB).
const DefaultMaxFileBytes = 64 << 20

// MaxFileBytes bounds what one checkpoint file read whole may cost: offsets, commits, metadata,
// source and sink log files. Spark's are small (a Kafka offsets file for 100,000 partitions is
// about 3 MB), while a corrupt 1 GiB line once cost up to 2 GiB of memory. Readers stop one byte
// past it (TooLarge). It is the one home of the limit: CKPT_MAX_FILE_BYTES or --max-file-bytes
// raises it for a process (root.Main and the root command set it before any read); nothing else
// writes it.
var MaxFileBytes int64 = DefaultMaxFileBytes

// DefaultMaxSources is the default of MaxSources (10,000).
const DefaultMaxSources = 10_000

// MaxSources bounds the source lines of one offsets file: one line per source of the query, so
// real files have a handful, while each line costs about a kilobyte to inspect and 2 M lines of
// 3 bytes (a 6 MB file, well under MaxFileBytes) cost gigabytes. CKPT_MAX_SOURCES or --max-sources raises it
// (root.Main sets it once, before any read).
var MaxSources = DefaultMaxSources

// TooLarge is the error for a log file of size bytes, larger than MaxFileBytes.
func TooLarge(file string, size int64) *Error {
	return &Error{File: file, Kind: KindLineTooLong,
		Expected: fmt.Sprintf("a file of at most %d bytes (--max-file-bytes or CKPT_MAX_FILE_BYTES raises the limit)", MaxFileBytes),
		Got:      fmt.Sprintf("%d bytes or more", size)}
}

// lineTooLong is the error for line lineNo of n bytes (n < 0: not read to its end).
func lineTooLong(file string, lineNo, n int) *Error {
	got := fmt.Sprintf("a line of %d bytes", n)
	if n < 0 {
		got = "a longer line"
	}
	return &Error{File: file, Line: lineNo, Kind: KindLineTooLong,
		Expected: fmt.Sprintf("a line of at most %d MiB", MaxLineBytes>>20), Got: got}
}

// tooLong checks every line of ls against MaxLineBytes.
func (ls lines) tooLong(file string) *Error {
	for i, l := range ls.text {
		if len(l) > MaxLineBytes {
			return lineTooLong(file, i+1, len(l))
		}
	}
	return nil
}

// checkLineLength is tooLong for parsers that do not split the file into lines.
func checkLineLength(file string, data []byte) *Error {
	if len(data) <= MaxLineBytes {
		return nil
	}
	return splitLines(data).tooLong(file)
}

// lines is a file split the way Scala's Source.getLines (BufferedReader
// readLine) splits it: on "\n", "\r\n" or "\r", with no empty element after a
// final terminator.
type lines struct {
	text            [][]byte
	trailingNewline bool // the last line had a terminator
	crBreaks        int  // terminators that were "\r\n" or "\r"
}

// splitLines never allocates per line beyond the slice headers; the lines
// alias data. The next '\n' and '\r' positions are cached so a file with
// many of one and few of the other is still split in linear time.
func splitLines(data []byte) lines {
	var ls lines
	if len(data) == 0 {
		return ls
	}
	// Sizing the slice up front avoids regrowing it for huge logs.
	ls.text = make([][]byte, 0, bytes.Count(data, []byte{'\n'})+bytes.Count(data, []byte{'\r'})+1)
	pos := 0
	nl, cr := -1, -1
	nlDone, crDone := false, false // no more of that byte after pos
	for pos < len(data) {
		if !nlDone && nl < pos {
			if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
				nl = pos + i
			} else {
				nlDone = true
			}
		}
		if !crDone && cr < pos {
			if i := bytes.IndexByte(data[pos:], '\r'); i >= 0 {
				cr = pos + i
			} else {
				crDone = true
			}
		}
		end, next := len(data), len(data)
		switch {
		case !crDone && (nlDone || cr < nl):
			end, next = cr, cr+1
			if next < len(data) && data[next] == '\n' {
				next++
			}
			ls.crBreaks++
		case !nlDone:
			end, next = nl, nl+1
		}
		ls.text = append(ls.text, data[pos:end])
		ls.trailingNewline = end < len(data)
		pos = next
	}
	return ls
}

// javaTrim is java.lang.String.trim: it strips every char <= U+0020 from both
// ends (all ASCII control characters, not only white space).
func javaTrim(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && b[i] <= ' ' {
		i++
	}
	for j > i && b[j-1] <= ' ' {
		j--
	}
	return b[i:j]
}

// javaDigit is Character.digit(ch, 10) for one UTF-16 unit: ASCII digits and
// every other Unicode Nd digit of the BMP. Spark parses batch names and
// version numbers with Long.parseLong/Integer.parseInt, which use it, so
// "٣" is batch 3 to Spark.
func javaDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < 0x80 || r > 0xFFFF || r == utf8.RuneError {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) < rg.Lo {
			return -1
		}
		if uint16(r) <= rg.Hi && (uint16(r)-rg.Lo)%rg.Stride == 0 {
			// Nd digits come in contiguous runs of ten starting at zero.
			return int(uint16(r)-rg.Lo) % 10
		}
	}
	return -1
}

// javaParseSigned implements Long.parseLong / Integer.parseInt (radix 10)
// for the range [lo, hi]: optional sign, at least one digit, no spaces.
func javaParseSigned(s string, lo, hi int64) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	i := 0
	switch s[0] {
	case '-':
		neg = true
		i = 1
	case '+':
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	// Accumulate negatively, as Java does, so min is reachable.
	limit := -hi
	if neg {
		limit = lo
	}
	var acc int64
	for i < len(s) {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		d := javaDigit(r)
		if d < 0 {
			return 0, false
		}
		if acc < limit/10 {
			return 0, false
		}
		acc *= 10
		if acc < limit+int64(d) {
			return 0, false
		}
		acc -= int64(d)
		i += size
	}
	if neg {
		return acc, true
	}
	return -acc, true
}

// javaParseLong is java.lang.Long.parseLong(s).
func javaParseLong(s string) (int64, bool) {
	return javaParseSigned(s, -1<<63, 1<<63-1)
}

// javaParseInt is java.lang.Integer.parseInt(s).
func javaParseInt(s string) (int32, bool) {
	v, ok := javaParseSigned(s, -1<<31, 1<<31-1)
	return int32(v), ok
}

// parseVersionHeader applies MetadataVersionUtil.validateVersion to text
// (which the caller has or has not trimmed, as Spark does for that log).
func parseVersionHeader(file string, line int, text []byte, maxVersion int) (int, *Error) {
	s := string(text)
	if len(s) == 0 || s[0] != 'v' {
		return 0, malformedVersion(file, line, s)
	}
	v, ok := javaParseInt(s[1:])
	if !ok || v <= 0 {
		return 0, malformedVersion(file, line, s)
	}
	if int(v) > maxVersion {
		return 0, &Error{File: file, Line: line, Kind: KindUnsupportedVersion,
			Expected: versionRange(maxVersion), Got: excerpt(s),
			Spark: SparkUnsupportedVersion(int(v), maxVersion), Version: int(v), MaxVersion: maxVersion}
	}
	return int(v), nil
}

func versionRange(maxVersion int) string {
	if maxVersion == 1 {
		return `log version "v1"`
	}
	return `a log version from "v1" to "v` + itoa(maxVersion) + `"`
}

func malformedVersion(file string, line int, s string) *Error {
	return &Error{File: file, Line: line, Kind: KindMalformedVersion,
		Expected: `a version header like "v1"`, Got: excerpt(s), Spark: SparkMalformedVersion(s)}
}

func itoa(i int) string {
	var b [20]byte
	return string(appendInt(b[:0], int64(i)))
}

// appendHeader writes the "v<version>" line every versioned log starts with.
func appendHeader(dst []byte, version int) []byte {
	dst = append(dst, 'v')
	return appendInt(dst, int64(version))
}
