package recovery

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Spark's exception classes, as the driver log prints them.
const (
	excIllegalState    = "java.lang.IllegalStateException"
	excAssertion       = "java.lang.AssertionError"
	excNoSuchElement   = "java.util.NoSuchElementException"
	excIllegalArgument = "java.lang.IllegalArgumentException"
	excSpark           = "org.apache.spark.SparkException"
	// excSparkIllegalState carries 4.x's error conditions of the log readers
	// (INVALID_LOG_VERSION, MALFORMED_LOG_FILE).
	excSparkIllegalState = "org.apache.spark.SparkIllegalStateException"
	excFileAlreadyExists = "org.apache.hadoop.fs.FileAlreadyExistsException"
)

// sparkFailure is one exception Spark raises: its class and message, and the
// exception it wraps. The outermost is what the query thread throws (Spark's
// StreamingQueryException wrapper aside), the innermost the root cause.
type sparkFailure struct {
	exception string
	message   string
	// exact is false when ckpt cannot reproduce the JVM's text (a Jackson
	// parser message, say); the message then describes the problem instead.
	exact bool
	// errorClass is the exception's error class where its message does not
	// start with "[CLASS]" (KafkaIllegalStateException, _LEGACY_ERROR_TEMP_2207).
	errorClass string
	// cause is the exception this one wraps; nil for the root cause.
	cause *sparkFailure
}

// root is the innermost exception of the chain.
func (f sparkFailure) root() sparkFailure {
	for f.cause != nil {
		f = *f.cause
	}
	return f
}

// allExact says whether every message of the chain is Spark's own text.
func (f sparkFailure) allExact() bool {
	for ; ; f = *f.cause {
		if !f.exact {
			return false
		}
		if f.cause == nil {
			return true
		}
	}
}

var conditionPrefix = regexp.MustCompile(`^\[([A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)*)\] `)

// class is the error class of this exception alone: errorClass, or the
// "[CLASS] " a condition's message starts with (condition()).
func (f sparkFailure) class() string {
	if f.errorClass != "" {
		return f.errorClass
	}
	if m := conditionPrefix.FindStringSubmatch(f.message); m != nil {
		return m[1]
	}
	return ""
}

// chainClass is the error class of the innermost exception of the chain that
// has one (what getCondition/getErrorClass says there), "" when none has.
func (f sparkFailure) chainClass() string {
	class := ""
	for g := &f; g != nil; g = g.cause {
		if c := g.class(); c != "" {
			class = c
		}
	}
	return class
}

// wrapped is HDFSMetadataLog.get's IllegalStateException around an
// IllegalStateException raised while deserializing the batch file at
// sparkPath: "Failed to read log file <path>. <inner>", caused by inner.
func wrapped(sparkPath string, inner sparkFailure) sparkFailure {
	return sparkFailure{exception: excIllegalState, message: wrapRead(sparkPath, inner.message), exact: inner.exact, cause: &inner}
}

// versionException is the class of MetadataVersionUtil's refusals: the error
// conditions' SparkIllegalStateException from 4.0, IllegalStateException before.
func versionException(r release) string {
	if r.errorConditions() {
		return excSparkIllegalState
	}
	return excIllegalState
}

// condition renders a 4.x error condition: "[COND] message SQLSTATE: s".
// 3.5 (the first release with conditions for log conflicts) printed no
// SQLSTATE.
func condition(r release, cond, msg, sqlState string) string {
	s := "[" + cond + "] " + msg
	if r.errorConditions() && sqlState != "" {
		s += " SQLSTATE: " + sqlState
	}
	return s
}

// wrapRead is HDFSMetadataLog's wrapper around IllegalStateExceptions
// raised while deserializing a batch file.
func wrapRead(sparkPath, inner string) string { return WrapRead(sparkPath, inner) }

// WrapRead is HDFSMetadataLog's message for a batch file that does not deserialize: "Failed
// to read log file <path>. <inner>". The one home of that text (the engine raises it too).
func WrapRead(sparkPath, inner string) string {
	return "Failed to read log file " + sparkPath + ". " + inner
}

// ExcConcurrentModification is the class of Spark's concurrent-use error.
const ExcConcurrentModification = "org.apache.spark.SparkConcurrentModificationException"

// ConcurrentUse is Spark's message when a log file it is about to write already exists
// (another query, or a leftover, holds the checkpoint): "Multiple streaming queries are
// concurrently using <path>." (_LEGACY_ERROR_TEMP_2207, Spark 3.4 and later; 3.3 and older
// print it without the period). The one home of that text.
func ConcurrentUse(sparkPath string) string {
	return "Multiple streaming queries are concurrently using " + sparkPath + "."
}

// renameDestinationExists is Hadoop's FileAlreadyExistsException text when a
// rename meets an existing file (RawLocalFileSystem, through ChecksumFs for
// the checksum).
func renameDestinationExists(sparkPath string) string {
	return "Rename destination " + sparkPath + " already exists."
}

// fileNotFound is Hadoop's FileNotFoundException for a file Spark opens that is not there. The
// text is RawLocalFileSystem's ("File file:/… does not exist", confirmed by Spark 3.5.7, 4.0.0
// and 4.1.1 on offsets-name-padded); other file systems word it their own way, so it is exact
// only on the local one.
func fileNotFound(sparkPath string) sparkFailure {
	return sparkFailure{exception: "java.io.FileNotFoundException", message: fmt.Sprintf("File %s does not exist", sparkPath),
		exact: strings.HasPrefix(sparkPath, "file:")}
}

// tooNew is MetadataVersionUtil's "maximum supported version" error.
func tooNew(r release, version, max int) string {
	if r.errorConditions() {
		return condition(r, "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION",
			fmt.Sprintf("UnsupportedLogVersion. The maximum supported log version is v%d, but encountered v%d. "+
				"The log file was produced by a newer version of Spark and cannot be read by this version. You need to upgrade.",
				max, version), "KD002")
	}
	return logformat.SparkUnsupportedVersion(version, max)
}

// notExactly is Spark 4.0's commit-log rule (validateVersionExactMatch).
func notExactly(r release, version, want int) string {
	return condition(r, "INVALID_LOG_VERSION.EXACT_MATCH_VERSION",
		fmt.Sprintf("UnsupportedLogVersion. The only supported log version is v%d, but encountered v%d.", want, version), "KD002")
}

// malformed renders the malformed-header error from the 3.x text logformat
// carries.
func malformed(r release, text3x string) string {
	if r.errorConditions() {
		return condition(r, "MALFORMED_LOG_FILE", text3x, "KD002")
	}
	return text3x
}

// readFailure maps a parse error of a log file to the exception Spark
// raises when it reads that file. A version header too new for the release
// is checkVersion's (callers check that first).
func readFailure(r release, sparkPath string, err error) sparkFailure {
	var le *logformat.Error
	if !errors.As(err, &le) {
		return sparkFailure{exception: "", message: err.Error()}
	}
	switch le.Kind {
	case logformat.KindEmpty:
		return wrapped(sparkPath, sparkFailure{exception: excIllegalState, message: le.Spark, exact: true})
	case logformat.KindMalformedVersion:
		return wrapped(sparkPath, sparkFailure{exception: versionException(r), message: malformed(r, le.Spark), exact: true})
	case logformat.KindUnsupportedVersion:
		return wrapped(sparkPath, sparkFailure{exception: versionException(r), message: tooNew(r, le.Version, le.MaxVersion), exact: true})
	case logformat.KindMissingMetadata:
		// lines.next() on an exhausted iterator: not an IllegalStateException,
		// so HDFSMetadataLog does not wrap it.
		return sparkFailure{exception: excNoSuchElement, message: "next on empty iterator", exact: true}
	}
	if le.Spark != "" {
		exc, msg := splitException(le.Spark)
		return sparkFailure{exception: exc, message: msg, exact: true}
	}
	// Malformed JSON: json4s/Jackson raise their own parser exception, whose
	// text ckpt does not reproduce.
	return sparkFailure{exception: "", message: fmt.Sprintf("cannot parse %s: expected %s, got %s", sparkPath, le.Expected, le.Got), exact: false}
}

// splitException splits "java.util.Foo: message" into class and message.
func splitException(s string) (string, string) {
	if i := strings.Index(s, ": "); i > 0 {
		cls := s[:i]
		if strings.Count(cls, ".") >= 2 && !strings.ContainsAny(cls, " ") {
			return cls, s[i+2:]
		}
	}
	return "", s
}

// missingPrev is the sync engine's failure when offsets/L-1 is absent.
func missingPrev(prev int64) sparkFailure {
	return sparkFailure{exception: excIllegalState, message: fmt.Sprintf("batch %d doesn't exist", prev), exact: true}
}

// missingPrevLog is the ERROR line SPARK-38033 added before that failure.
func missingPrevLog(class string, latest int64) string {
	return fmt.Sprintf("ERROR %s: The offset log for batch %d doesn't exist, which is required to restart the query "+
		"from the latest batch %d from the offset log. Please ensure there are two subsequent offset logs available "+
		"for the latest batch via manually deleting the offset file(s). Please also ensure the latest batch for commit "+
		"log is equal or one batch earlier than the latest batch for offset log.", class, latest-1, latest)
}

// commitConflict is what Spark raises when commitLog.add(batch) finds the
// file already there (the commits-ahead row of the decision table).
func commitConflict(r release, mode Mode, batch int64) sparkFailure {
	if r.concurrentCondition() {
		return sparkFailure{exception: excSpark, message: condition(r, "CONCURRENT_STREAM_LOG_UPDATE",
			fmt.Sprintf("Concurrent update to the log. Multiple streaming jobs detected for %d.\n"+
				"Please make sure only one streaming job runs on a specific checkpoint location at a time.", batch), "40000"), exact: true}

	}
	if mode == ModeAsync { // 3.4's AsyncCommitLog.addAsync
		return sparkFailure{exception: excIllegalState, message: fmt.Sprintf("Concurrent update to the log. Multiple streaming jobs detected for %d", batch), exact: true}
	}
	return sparkFailure{exception: excAssertion, message: fmt.Sprintf("assertion failed: Concurrent update to the commit log. Multiple streaming jobs detected for %d", batch), exact: true}
}

// ConcurrentLogUpdate is what the sync engine of sparkVersion (a SparkVersions line) raises when
// a log write finds its file already there, exception and message: CONCURRENT_STREAM_LOG_UPDATE
// from 3.5. The one home of the text (the engine raises it too).
func ConcurrentLogUpdate(sparkVersion string, batch int64) string {
	rel, err := parseRelease(sparkVersion)
	if err != nil {
		rel, _ = parseRelease(DefaultSparkVersion)
	}
	f := commitConflict(rel, ModeSync, batch)
	return f.exception + ": " + f.message
}

// offsetConflict is what Spark raises when offsetLog.add(batch) finds the path taken
// (constructNextBatch): CONCURRENT_STREAM_LOG_UPDATE from 3.5, as for the commit log; before,
// an assertion in the sync engine and AsyncOffsetSeqLog's IllegalStateException in 3.4's async
// engine.
func offsetConflict(r release, mode Mode, batch int64) sparkFailure {
	if r.concurrentCondition() || mode == ModeAsync {
		return commitConflict(r, mode, batch)
	}
	return sparkFailure{exception: excAssertion, message: fmt.Sprintf("assertion failed: Concurrent update to the log. Multiple streaming jobs detected for %d", batch), exact: true}
}

// missingMetadataFile is SPARK-55058's refusal: 4.2.0's text and class
// (golden missing-metadata), STREAMING_CHECKPOINT_MISSING_METADATA_FILE; master
// is taken to say the same.
func missingMetadataFile(r release, rootPath string) sparkFailure {
	return sparkFailure{exception: excSparkRuntime, message: condition(r, "STREAMING_CHECKPOINT_MISSING_METADATA_FILE", "Checkpoint location "+rootPath+
		" is in an inconsistent state: the metadata file is missing but offset and/or commit logs contain data. "+
		"Please restore the metadata file or create a new checkpoint directory.", "42K03"), exact: true}
}

// sourceCountAssertion is OffsetSeq.toStreamProgress's assertion text.
func sourceCountAssertion(inFile, inQuery int) string {
	return fmt.Sprintf("assertion failed: There are [%d] sources in the checkpoint offsets and now there are [%d] sources requested by the query. Cannot continue.", inFile, inQuery)
}
