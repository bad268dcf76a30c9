package logformat

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind classifies a parse failure so callers (doctor in particular) can map
// it to a stable finding code without matching message text.
type Kind int

const (
	// KindEmpty: the file has no content at all (Spark: "Incomplete log file").
	KindEmpty Kind = iota + 1
	// KindMalformedVersion: the first line is not "v<positive int>".
	KindMalformedVersion
	// KindUnsupportedVersion: the version is newer than any Spark writes.
	KindUnsupportedVersion
	// KindMissingMetadata: an offsets file stops after its version line.
	KindMissingMetadata
	// KindBadJSON: a JSON document is syntactically or structurally wrong.
	KindBadJSON
	// KindBadOffset: a source offset does not have its source's shape.
	KindBadOffset
	// KindBlankLine: an empty line where Spark expects content.
	KindBlankLine
	// KindMalformed: any other structural problem.
	KindMalformed
	// KindLineTooLong: a line is longer than MaxLineBytes (or the file longer than MaxFileBytes);
	// Spark would read it, but no real log line is that long and parsing it costs many times its
	// size.
	KindLineTooLong
)

var kindNames = [...]string{
	KindEmpty:              "empty",
	KindMalformedVersion:   "malformed-version",
	KindUnsupportedVersion: "unsupported-version",
	KindMissingMetadata:    "missing-metadata",
	KindBadJSON:            "bad-json",
	KindBadOffset:          "bad-offset",
	KindBlankLine:          "blank-line",
	KindMalformed:          "malformed",
	KindLineTooLong:        "line-too-long",
}

// String returns a stable, machine-friendly name ("malformed-version").
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText makes Kind render as its name in JSON output.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Error is the single error type every parser returns, so callers can report
// the file, the line, what was expected and what Spark itself would say.
type Error struct {
	File     string // as passed by the caller
	Line     int    // 1-based line (0 when the problem is the whole file)
	Kind     Kind
	Expected string // what was expected, in words
	Got      string // short quoted excerpt of what was found
	Spark    string // the exact message Spark raises for this input, "" if Spark accepts it or has none
	// Version and MaxVersion are set for KindUnsupportedVersion.
	Version, MaxVersion int
}

// Error renders e.g. `offsets/7: line 1: expected a version header like "v1", got "" (Spark: Incomplete log file)`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	b.WriteString("expected ")
	b.WriteString(e.Expected)
	b.WriteString(", got ")
	b.WriteString(e.Got)
	if e.Spark != "" {
		b.WriteString(" (Spark: ")
		b.WriteString(truncateRunes(e.Spark, maxSparkRender))
		b.WriteString(")")
	}
	return b.String()
}

// maxExcerpt bounds Error.Got so a corrupt multi-megabyte line does not end
// up in a terminal or a JSON report.
const maxExcerpt = 80

// maxSparkRender bounds how much of Spark's message Error() prints; some
// Spark messages embed the whole offending input. The Spark field itself
// stays exact.
const maxSparkRender = 300

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// excerpt quotes s, truncated to about maxExcerpt bytes on a rune boundary.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return strconv.Quote(s)
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// Spark's own texts (3.x wording), kept in one place so tests and callers
// agree on them.
const (
	sparkIncomplete        = "Incomplete log file"
	sparkIncompleteCommit  = "Incomplete log file in the offset commit log"
	sparkNoSuchElement     = "java.util.NoSuchElementException: next on empty iterator"
	sparkKafkaNoVersion    = "Log file was malformed: failed to detect the log file version line."
	sparkRequirementFailed = "requirement failed"
	sparkKafkaExpected     = `Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got `
)

// SparkMalformedVersion is Spark's message for an unparsable version line.
func SparkMalformedVersion(text string) string {
	return "Log file was malformed: failed to read correct log version from " + text + "."
}

// SparkUnsupportedVersion is Spark's (3.x) message for a version newer than
// the reader supports.
func SparkUnsupportedVersion(version, maxVersion int) string {
	return "UnsupportedLogVersion: maximum supported log version is v" + strconv.Itoa(maxVersion) +
		", but encountered v" + strconv.Itoa(version) +
		". The log file was produced by a newer version of Spark and cannot be read by this version. Please upgrade."
}
