package recovery

import (
	"errors"
	"fmt"
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
)

// sparkFailure is one exception Spark raises: its class and message.
type sparkFailure struct {
	exception string
	message   string
	// exact is false when ckpt cannot reproduce the JVM's text (a Jackson
	// parser message, say); the message then describes the problem instead.
	exact bool
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
		return sparkFailure{excIllegalState, wrapRead(sparkPath, le.Spark), true}
	case logformat.KindMalformedVersion:
		return sparkFailure{excIllegalState, wrapRead(sparkPath, malformed(r, le.Spark)), true}
	case logformat.KindUnsupportedVersion:
		return sparkFailure{excIllegalState, wrapRead(sparkPath, tooNew(r, le.Version, le.MaxVersion)), true}
	case logformat.KindMissingMetadata:
		// lines.next() on an exhausted iterator: not an IllegalStateException,
		// so HDFSMetadataLog does not wrap it.
		return sparkFailure{excNoSuchElement, "next on empty iterator", true}
	}
	if le.Spark != "" {
		exc, msg := splitException(le.Spark)
		return sparkFailure{exc, msg, true}
	}
	// Malformed JSON: json4s/Jackson raise their own parser exception, whose
	// text ckpt does not reproduce.
	return sparkFailure{"", fmt.Sprintf("cannot parse %s: expected %s, got %s", sparkPath, le.Expected, le.Got), false}
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
	return sparkFailure{excIllegalState, fmt.Sprintf("batch %d doesn't exist", prev), true}
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
		return sparkFailure{excSpark, condition(r, "CONCURRENT_STREAM_LOG_UPDATE",
			fmt.Sprintf("Concurrent update to the log. Multiple streaming jobs detected for %d.\n"+
				"Please make sure only one streaming job runs on a specific checkpoint location at a time.", batch), "40000"), true}
	}
	if mode == ModeAsync { // 3.4's AsyncCommitLog.addAsync
		return sparkFailure{excIllegalState, fmt.Sprintf("Concurrent update to the log. Multiple streaming jobs detected for %d", batch), true}
	}
	return sparkFailure{excAssertion, fmt.Sprintf("assertion failed: Concurrent update to the commit log. Multiple streaming jobs detected for %d", batch), true}
}

// offsetConflict is what Spark raises when offsetLog.add(batch) finds the path taken
// (constructNextBatch): CONCURRENT_STREAM_LOG_UPDATE from 3.5, as for the commit log; before,
// an assertion in the sync engine and AsyncOffsetSeqLog's IllegalStateException in 3.4's async
// engine.
func offsetConflict(r release, mode Mode, batch int64) sparkFailure {
	if r.concurrentCondition() || mode == ModeAsync {
		return commitConflict(r, mode, batch)
	}
	return sparkFailure{excAssertion, fmt.Sprintf("assertion failed: Concurrent update to the log. Multiple streaming jobs detected for %d", batch), true}
}

// missingMetadataFile is SPARK-55058's refusal (master). The template is
// the one Databricks publishes for MISSING_METADATA_FILE; the open-source
// template was not available to re-read, so the text is marked inexact.
func missingMetadataFile(rootPath string) sparkFailure {
	return sparkFailure{"", "[MISSING_METADATA_FILE] Checkpoint location " + rootPath +
		" is in an inconsistent state: the metadata file is missing but offset and/or commit logs contain data. " +
		"Please restore the metadata file or create a new checkpoint directory.", false}
}

// sourceCountAssertion is OffsetSeq.toStreamProgress's assertion text.
func sourceCountAssertion(inFile, inQuery int) string {
	return fmt.Sprintf("assertion failed: There are [%d] sources in the checkpoint offsets and now there are [%d] sources requested by the query. Cannot continue.", inFile, inQuery)
}
