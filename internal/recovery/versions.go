package recovery

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// LogKind names a metadata log whose files start with a version header
// ("v1") that Spark checks when it reads them (MetadataVersionUtil).
type LogKind string

// The logs CheckVersion knows.
const (
	// LogOffsets is offsets/ (OffsetSeqLog).
	LogOffsets LogKind = "offsets"
	// LogCommits is commits/ (CommitLog).
	LogCommits LogKind = "commits"
	// LogKafkaInitialOffsets is a Kafka source's sources/<i>/0
	// (KafkaSourceInitialOffsetWriter).
	LogKafkaInitialOffsets LogKind = "kafka-initial-offsets"
	// LogFileSink is a file sink's _spark_metadata (FileStreamSinkLog).
	LogFileSink LogKind = "file-sink"
	// LogFileSource is a file source's sources/<i>/ (FileStreamSourceLog).
	LogFileSource LogKind = "file-source"
)

// VersionError is a Spark release's refusal of a log file's version
// header. Error() is Spark's exact message for that release, as
// MetadataVersionUtil raises it; Spark wraps it when it reads the file
// (SparkError).
type VersionError struct {
	Log          LogKind
	SparkVersion string // the release, "3.5"
	Version      int    // the file's header
	// Supported is the newest version the release reads, or with
	// ExactMatch the only one (Spark 4.0's commit log).
	Supported  int
	ExactMatch bool
	// Message is Spark's text: "UnsupportedLogVersion: maximum supported log
	// version is v1, but encountered v2. …" (3.x) or
	// "[INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION] … SQLSTATE: KD002" (4.x).
	Message string
}

func (e *VersionError) Error() string { return e.Message }

// Exception is the JVM class of the exception the reader throws: HDFSMetadataLog's
// IllegalStateException ("Failed to read log file …"), whose cause is RootException.
func (e *VersionError) Exception() string { return excIllegalState }

// RootException is the class of MetadataVersionUtil's refusal itself (Message):
// SparkIllegalStateException from 4.0 (INVALID_LOG_VERSION), IllegalStateException before.
func (e *VersionError) RootException() string {
	if r, err := parseRelease(e.SparkVersion); err == nil {
		return versionException(r)
	}
	return excIllegalState
}

// SparkError is the exception line Spark prints when it reads the file at
// sparkPath (as Checkpoint.SparkPath renders it), e.g.
// "java.lang.IllegalStateException: Failed to read log file file:/ckpt/commits/7. UnsupportedLogVersion: …".
func (e *VersionError) SparkError(sparkPath string) string {
	return excIllegalState + ": " + wrapRead(sparkPath, e.Message)
}

// CheckVersion reports whether Spark release sparkVersion ("3.5", "4.0",
// "master"; "" is the default release) reads a file of log whose header is
// v<version>. commitFormatVersion is
// spark.sql.streaming.stateStore.checkpointFormatVersion (0 means the
// default, 1), which Spark 4.0's commit log requires the header to equal.
//
// It returns nil when the release reads the version, a *VersionError with
// Spark's exact text when it refuses it, and another error when the
// arguments are invalid. Plan uses it for the files a restart reads, doctor
// --deep for the others, so both apply the same limits. Spark 2.1 has no
// commit log, so it never refuses a commit file.
func CheckVersion(sparkVersion string, log LogKind, version int, commitFormatVersion int) error {
	if sparkVersion == "" {
		sparkVersion = DefaultSparkVersion
	}
	rel, err := parseRelease(sparkVersion)
	if err != nil {
		return err
	}
	if version < 1 {
		return fmt.Errorf("invalid log version %d: a version header is v1 or higher", version)
	}
	if commitFormatVersion == 0 {
		commitFormatVersion = 1
	}
	if commitFormatVersion < 1 || commitFormatVersion > logformat.CommitsMaxVersion {
		return fmt.Errorf("invalid commit format version %d: want 1, 2 or 3", commitFormatVersion)
	}
	switch log {
	case LogOffsets, LogCommits, LogKafkaInitialOffsets, LogFileSink, LogFileSource:
	default:
		return fmt.Errorf("unknown log %q", log)
	}
	if ve := checkVersion(rel, log, version, commitFormatVersion); ve != nil {
		return ve
	}
	return nil
}

// checkVersion is CheckVersion on validated arguments.
func checkVersion(rel release, log LogKind, version, commitFmt int) *VersionError {
	ve := &VersionError{Log: log, SparkVersion: rel.String(), Version: version}
	switch log {
	case LogOffsets:
		ve.Supported = rel.offsetsMaxVersion()
	case LogCommits:
		switch {
		case rel == mkRelease(2, 1):
			return nil // no commit log
		case rel == mkRelease(4, 0) || rel == mkRelease(4, 1):
			// validateVersionExactMatch (SPARK-50652): 4.0 and 4.1 read only
			// the configured format version; SPARK-56970 (4.2) reads the
			// header and dispatches on it.
			if version == commitFmt {
				return nil
			}
			ve.Supported, ve.ExactMatch = commitFmt, true
			ve.Message = notExactly(rel, version, commitFmt)
			return ve
		}
		ve.Supported = rel.commitsMaxVersion()
	default:
		// KafkaSourceInitialOffsetWriter, FileStreamSinkLog and
		// FileStreamSourceLog have been at v1 in every release.
		ve.Supported = 1
	}
	if version <= ve.Supported {
		return nil
	}
	ve.Message = tooNew(rel, version, ve.Supported)
	return ve
}

// commitsMaxVersion is CommitLog's maximum supported header outside 4.0's
// and 4.1's exact-match rule: v1 up to 3.5, v3 (sinkMetadataMap,
// SPARK-56971, backported to branch-4.2) from 4.2 on.
func (r release) commitsMaxVersion() int {
	if r.atLeast(4, 2) {
		return logformat.CommitsMaxVersion
	}
	return 1
}
