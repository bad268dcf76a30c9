package recovery

import (
	"bytes"
	"encoding/json"
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

// Rules 4.2.0 showed the oracle (testdata/spark-oracle/4.2.0) where it differs from what was
// read on master before the release.

// checksUnfinishedRepartition: 4.2's initializeExecution (sync engine only; the async engine
// overrides it with a no-op) runs checkUnfinishedRepartitionBatch after reading both latest
// entries, under spark.sql.streaming.checkUnfinishedRepartitionOnRestart (default true): when
// offsets/L has no commit and a commit exists (L > C ≥ 0, L ≥ 1), isRepartitionBatch(L) requires
// offsets/L-1, so a missing one fails there with Scala's require ("Previous batch 6 not found in
// offset log", IllegalArgumentException) before populateStartOffsets would say "batch 6 doesn't
// exist" (4.2.0's bytecode; goldens missing-previous-offsets, offsets-name-plus-previous,
// async-behind-0-2 in sync mode).
func (r release) checksUnfinishedRepartition() bool { return r.atLeast(4, 2) }

// unfinishedRepartitionPrev is isRepartitionBatch's refusal of a missing offsets/L-1.
func unfinishedRepartitionPrev(prev int64) sparkFailure {
	return sparkFailure{exception: excIllegalArgument, message: fmt.Sprintf("requirement failed: Previous batch %d not found in offset log", prev), exact: true}
}

// excSparkRuntime is the class of STREAMING_CHECKPOINT_MISSING_METADATA_FILE (4.2.0).
const excSparkRuntime = "org.apache.spark.SparkRuntimeException"

// sinkInfoRequired are the fields of 4.2.0's SinkMetadataInfo (a v3 commit's sinkMetadataMap
// values) that have no default, in constructor order; isActive defaults to true. json4s fails
// on the first one missing.
var sinkInfoRequired = []string{"sinkName", "commitOffset", "providerName", "apiVersion"}

// commitV3Unreadable is 4.2.0's json4s refusal of a v3 commit whose sinkMetadataMap lacks a
// SinkMetadataInfo field (4.2.0 has apiVersion, which master's copy read for ckpt did not:
// golden commit-v3-latest). CommitLog.deserialize is not wrapped ("Failed to read log file"
// is only for IllegalStateException), so the query fails with the MappingException chain.
// nil when the release is not 4.2, or every entry has every field.
func commitV3Unreadable(r release, c *logformat.Commit) *sparkFailure {
	if r != mkRelease(4, 2) || c == nil || c.Version != 3 || c.SinkMetadata == nil {
		return nil
	}
	var entries map[string]map[string]json.RawMessage
	if json.Unmarshal(c.SinkMetadata, &entries) != nil {
		return nil
	}
	// json4s walks the JSON object in file order; Go's map does not keep it.
	dec := json.NewDecoder(bytes.NewReader(c.SinkMetadata))
	var names []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := tok.(string)
		names = append(names, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	for _, n := range names {
		for _, f := range sinkInfoRequired {
			if _, ok := entries[n][f]; ok {
				continue
			}
			const conv = "Did not find value which can be converted into java.lang.String"
			root := &sparkFailure{exception: excMapping, message: conv, exact: true}
			field := &sparkFailure{exception: excMapping, message: "No usable value for " + f + "\n" + conv, exact: true, cause: root}
			return &sparkFailure{exception: excMapping, message: "No usable value for sinkMetadataMap\n" + field.message, exact: true, cause: field}
		}
	}
	return nil
}

// excMapping is json4s' extraction failure.
const excMapping = "org.json4s.MappingException"

// checkUnfinishedRepartition is the part of 4.2's checkUnfinishedRepartitionBatch the oracle
// showed: a missing offsets/L-1. The rest of it (L or L-1 without metadata, and a batch L whose
// spark.sql.shuffle.partitions differs from L-1's: STREAMING_UNFINISHED_REPARTITION_DETECTED)
// is read in 4.2.0's bytecode but not modelled yet.
func (p *planner) checkUnfinishedRepartition() error {
	if !p.rel.checksUnfinishedRepartition() || p.cfg.mode != ModeSync || !p.hasL || !p.hasC || p.L <= p.C || p.L == 0 {
		return nil
	}
	prev := p.L - 1
	// offsetLog.get(L-1) opens offsets/<L-1>: a file listed under another spelling is not found.
	if !p.cp.Offsets.Has(prev) || p.cp.Offsets.FilePath(prev) != p.cp.Offsets.Path(prev) {
		return p.fail(ReasonMissingPreviousOffsets, p.cp.Offsets.Path(prev), unfinishedRepartitionPrev(prev))
	}
	return nil
}
