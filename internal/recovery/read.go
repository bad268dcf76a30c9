// Reading the metadata, offsets and commit files under the release's rules.

package recovery

import (
	"errors"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// checkMetadata applies StreamingQueryCheckpointMetadata.streamMetadata,
// which runs when the query is created, before the engine starts.
func (p *planner) checkMetadata() error {
	dataInLogs := p.hasL || p.hasC
	if !p.cp.HasMetadata() {
		if !dataInLogs {
			return nil
		}
		if p.rel.missingMetadataFails() {
			return p.fail(ReasonMissingMetadata, checkpoint.FileMetadata, missingMetadataFile(p.cp.SparkPath("")))
		}
		p.warn("the metadata file is missing: Spark %s silently writes a new one with a new query id, so sinks that deduplicate by query id do not recognise earlier batches (Spark 4.2 and later refuse this checkpoint: MISSING_METADATA_FILE)", p.rel)
		return nil
	}
	_, err := p.cp.ReadMetadata(p.ctx)
	if err == nil {
		return nil
	}
	var le *logformat.Error
	if !errors.As(err, &le) {
		return fmt.Errorf("read metadata: %w", err)
	}
	f := sparkFailure{message: fmt.Sprintf("cannot parse %s: expected %s, got %s", p.cp.SparkPath(checkpoint.FileMetadata), le.Expected, le.Got)}
	if le.Spark != "" {
		f.exception, f.message = splitException(le.Spark)
		f.exact = true
	}
	return p.fail(ReasonCorruptMetadata, checkpoint.FileMetadata, f,
		"ERROR StreamMetadata: Error reading stream metadata from "+p.cp.SparkPath(checkpoint.FileMetadata))
}

// fileFailure is Spark's failure to read one log file: a damaged file, or
// a version header the release refuses (unsupported).
type fileFailure struct {
	sparkFailure
	unsupported bool
}

// versionFailure is the failure of reading a file whose header the release
// refuses.
func versionFailure(sparkPath string, ve *VersionError) *fileFailure {
	return &fileFailure{sparkFailure{ve.Exception(), wrapRead(sparkPath, ve.Message), true}, true}
}

// readOffsets reads offsets/id under the release's rules. A file Spark
// cannot read is returned as a fileFailure; an I/O failure as an error.
func (p *planner) readOffsets(id int64) (*logformat.OffsetSeq, *fileFailure, error) {
	seq, err := p.cp.ReadOffsets(p.ctx, id)
	path := p.cp.SparkPath(p.cp.Offsets.Path(id))
	if err != nil {
		var le *logformat.Error
		if !errors.As(err, &le) {
			return nil, nil, fmt.Errorf("read %s: %w", p.cp.Offsets.Path(id), err)
		}
		if le.Kind == logformat.KindUnsupportedVersion {
			if ve := checkVersion(p.rel, LogOffsets, le.Version, p.cfg.commitFmt); ve != nil {
				return nil, versionFailure(path, ve), nil
			}
		}
		return nil, &fileFailure{sparkFailure: readFailure(p.rel, path, err)}, nil
	}
	if ve := checkVersion(p.rel, LogOffsets, seq.Version, p.cfg.commitFmt); ve != nil {
		return nil, versionFailure(path, ve), nil
	}
	return seq, nil, nil
}

func (p *planner) readLatest() error {
	seq, f, err := p.readOffsets(p.L)
	if err != nil {
		return err
	}
	if f != nil {
		reason := ReasonCorruptLatestOffsets
		if f.unsupported {
			reason = ReasonUnsupportedOffsetsVersion
		}
		return p.fail(reason, p.cp.Offsets.Path(p.L), f.sparkFailure)
	}
	p.latest = seq
	return nil
}

// checkLatestSources applies OffsetSeq.toStreamProgress's assertion to
// offsets/L. Spark checks every offsets file it reads against the running
// query's sources, which ckpt cannot see: it models the query as having
// offsets/L's sources, not counting empty lines (an empty line is an edit by
// hand that Spark reads as one more source, §1.7). master's v2 OffsetMap
// files are matched by source id, without the assertion.
func (p *planner) checkLatestSources() error {
	seq := p.latest
	p.querySources = len(seq.Sources) - len(seq.BlankLines)
	if known := p.cfg.querySources; known > 0 {
		p.querySources = known
	}
	if seq.Version >= 2 || len(seq.Sources) == p.querySources {
		return nil
	}
	path := p.cp.Offsets.Path(p.L)
	if len(seq.BlankLines) == 0 {
		return p.fail(ReasonSourceCountMismatch, path, p.sourceCountFailure(len(seq.Sources)))
	}
	p.warn("%s has an empty source line (line %d), which Spark reads as one more source offset: the file lists %s for a query ckpt takes to have the %s of its other lines",
		path, seq.BlankLines[0], sourcesText(len(seq.Sources)), sourcesText(p.querySources))
	return p.fail(ReasonSourceCountMismatch, path, p.sourceCountFailure(len(seq.Sources)))
}

// sourceCountFailure is the assertion for a file listing inFile sources.
func (p *planner) sourceCountFailure(inFile int) sparkFailure {
	if !p.rel.sourceCountMessage() {
		return sparkFailure{excAssertion, "assertion failed", true}
	}
	return sparkFailure{excAssertion, sourceCountAssertion(inFile, p.querySources), true}
}

// readCommit reads commits/C under the release's header rules.
func (p *planner) readCommit() error {
	c, err := p.cp.ReadCommit(p.ctx, p.C)
	rel := p.cp.Commits.Path(p.C)
	path := p.cp.SparkPath(rel)
	if err != nil {
		var le *logformat.Error
		if !errors.As(err, &le) {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		if le.Kind == logformat.KindUnsupportedVersion {
			if ve := checkVersion(p.rel, LogCommits, le.Version, p.cfg.commitFmt); ve != nil {
				return p.fail(ReasonUnsupportedCommitVersion, rel, versionFailure(path, ve).sparkFailure)
			}
		}
		return p.fail(ReasonCorruptLatestCommit, rel, readFailure(p.rel, path, err))
	}
	if ve := checkVersion(p.rel, LogCommits, c.Version, p.cfg.commitFmt); ve != nil {
		return p.fail(ReasonUnsupportedCommitVersion, rel, versionFailure(path, ve).sparkFailure)
	}
	p.commit = c
	return nil
}

// maxJVMArray is Int.MaxValue, the most elements a Scala range holds.
const maxJVMArray = 1<<31 - 1

// bigSpan is the span from which ckpt warns about the array listBatches
// allocates (8 bytes per id: 100M ids are 800 MB of driver heap).
const bigSpan = 100_000_000

// checkSpan applies HDFSMetadataLog.listBatches of Spark 3.4+ to log before
// getLatest reads it: every id from the oldest to the newest file becomes an
// element of an array. Past Int.MaxValue ids Scala's NumericRange refuses
// (scala.collection.immutable.NumericRange.count); below it a large span
// still costs the driver 8 bytes per id.
func (p *planner) checkSpan(log *checkpoint.Log) error {
	if !p.rel.listsContinuousRange() {
		return nil
	}
	lo, ok1 := log.Earliest()
	hi, ok2 := log.Latest()
	if !ok1 || !ok2 {
		return nil
	}
	span := uint64(hi-lo) + 1
	switch {
	case span > maxJVMArray:
		p.warn("%s/ holds ids %d to %d: Spark %s lists a log as every id between its oldest and newest file, %d ids, more than a JVM array holds",
			log.Dir, lo, hi, p.rel, span)
		return p.fail(ReasonBatchSpanTooLarge, log.Dir, sparkFailure{excIllegalArgument, "More than Int.MaxValue elements.", true})
	case span > bigSpan:
		p.warn("%s/ holds ids %d to %d: Spark %s lists a log as every id between its oldest and newest file, an array of %d ids (%d MB of driver heap), which can fail with an OutOfMemoryError",
			log.Dir, lo, hi, p.rel, span, span*8>>20)
	}
	return nil
}
