// Reading the metadata, offsets and commit files under the release's rules.

package recovery

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// checkMetadata applies StreamingQueryCheckpointMetadata.streamMetadata,
// which runs when the query is created, before the engine starts.
func (p *planner) checkMetadata() error {
	dataInLogs := p.hasL || p.hasC
	if !p.cp.HasMetadata() {
		if !dataInLogs {
			return p.orphanMetadataChecksum()
		}
		if p.rel.missingMetadataFails() {
			return p.fail(ReasonMissingMetadata, checkpoint.FileMetadata, missingMetadataFile(p.rel, p.cp.SparkPath("")))
		}
		if err := p.orphanMetadataChecksum(); err != nil {
			return err
		}
		p.warn("the metadata file is missing: Spark %s silently writes a new one with a new query id, so sinks that deduplicate by query id do not recognise earlier batches (Spark 4.2 and later refuse this checkpoint: STREAMING_CHECKPOINT_MISSING_METADATA_FILE)", p.rel)
		return nil
	}
	md, err := p.cp.ReadMetadata(p.ctx)
	if err == nil {
		// StreamExecution's constructor: val id = UUID.fromString(streamMetadata.id).
		if f := javaUUIDError(md.ID); f != nil {
			p.warn("the query id in metadata, %q, is not a UUID Java reads: the query fails when it is created, before any batch", md.ID)
			return p.fail(ReasonCorruptMetadata, checkpoint.FileMetadata, *f)
		}
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
	if j := p.jacksonFailure(checkpoint.FileMetadata, 0); j != nil && le.Spark == "" {
		f = *j
	}
	return p.fail(ReasonCorruptMetadata, checkpoint.FileMetadata, f,
		"ERROR StreamMetadata: Error reading stream metadata from "+p.cp.SparkPath(checkpoint.FileMetadata))
}

// orphanMetadataChecksum fails the restart when the metadata file is missing and its Hadoop
// checksum .metadata.crc is not: Spark writes a new metadata file when the query is created
// (StreamMetadata.write through CheckpointFileManager.createAtomic, 2.4 and later), and on the
// local file system the rename of the new checksum onto the orphan fails
// (FileAlreadyExistsException: "Rename destination <checkpoint>/.metadata.crc already
// exists."), which Spark reports with the file's name.
func (p *planner) orphanMetadataChecksum() error {
	const crc = "." + checkpoint.FileMetadata + ".crc"
	if !p.rel.atLeast(2, 4) || !p.hidesChecksums() {
		return nil
	}
	for _, e := range p.cp.Root {
		if e.Path == crc && !e.IsDir {
			p.warn("%s is the checksum of the missing metadata file, which Spark writes when the query is created: Hadoop's local file system renames the new file's checksum onto it and refuses (%s: %s), so the query fails before any batch; delete the orphan .crc first",
				crc, excFileAlreadyExists, renameDestinationExists(p.cp.SparkPath(crc)))
			return p.fail(ReasonOrphanChecksum, crc, concurrentUseFailure(p.rel, checkpoint.FileMetadata, p.cp.SparkPath(crc)))
		}
	}
	return nil
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
	return &fileFailure{wrapped(sparkPath, sparkFailure{exception: ve.RootException(), message: ve.Message, exact: true}), true}
}

// readOffsets reads offsets/id under the release's rules. A file Spark
// cannot read is returned as a fileFailure; an I/O failure as an error.
func (p *planner) readOffsets(id int64) (*logformat.OffsetSeq, *fileFailure, error) {
	if listed := p.cp.Offsets.FilePath(id); listed != "" && listed != p.cp.Offsets.Path(id) {
		// Spark opens offsets/<id>, not the listed spelling.
		return nil, &fileFailure{sparkFailure: fileNotFound(p.cp.SparkPath(p.cp.Offsets.Path(id)))}, nil
	}
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
		return nil, &fileFailure{sparkFailure: p.jsonReadFailure(p.cp.Offsets.Path(id), path, le, err)}, nil
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
		return sparkFailure{exception: excAssertion, message: "assertion failed", exact: true}
	}
	return sparkFailure{exception: excAssertion, message: sourceCountAssertion(inFile, p.querySources), exact: true}
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
		return p.fail(ReasonCorruptLatestCommit, rel, p.jsonReadFailure(rel, path, le, err))
	}
	if ve := checkVersion(p.rel, LogCommits, c.Version, p.cfg.commitFmt); ve != nil {
		return p.fail(ReasonUnsupportedCommitVersion, rel, versionFailure(path, ve).sparkFailure)
	}
	if f := commitV3Unreadable(p.rel, c); f != nil {
		return p.fail(ReasonCorruptLatestCommit, rel, *f)
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
		return p.fail(ReasonBatchSpanTooLarge, log.Dir, sparkFailure{exception: excIllegalArgument, message: "More than Int.MaxValue elements.", exact: true})
	case span > bigSpan:
		p.warn("%s/ holds ids %d to %d: Spark %s lists a log as every id between its oldest and newest file, an array of %d ids (%d MB of driver heap), which can fail with an OutOfMemoryError",
			log.Dir, lo, hi, p.rel, span, span*8>>20)
	}
	return nil
}

// listedLatest is the newest id Spark's listing of log gives and the entry
// behind it: the newest batch file, or, where the release lists them
// (listsDirectories), a newer directory whose name is a number.
func (p *planner) listedLatest(log *checkpoint.Log) (id int64, entry string, isDir, ok bool) {
	id, ok = log.Latest()
	if ok {
		entry = log.FilePath(id)
	}
	if !p.rel.listsDirectories() {
		return id, entry, false, ok
	}
	for _, e := range log.Others {
		if !e.IsDir {
			continue
		}
		name := e.Path[strings.LastIndexByte(e.Path, '/')+1:]
		n := logformat.ParseName(name)
		if n.Kind == logformat.NameBatch && (!ok || n.Batch > id) {
			id, entry, isDir, ok = n.Batch, e.Path, true, true
		}
	}
	return id, entry, isDir, ok
}

// checkLatestReadable fails the restart when getLatest of log cannot open
// the newest listed id: Spark opens <dir>/<id> (batchIdToPath), not the
// listed name, so "007" or "+7" leads to a file that does not exist, and a
// numeric directory (listed up to 3.5) cannot be read as a file.
func (p *planner) checkLatestReadable(log *checkpoint.Log) error {
	id, entry, isDir, ok := p.listedLatest(log)
	if !ok || (!isDir && entry == log.Path(id)) {
		return nil
	}
	canonical := p.cp.SparkPath(log.Path(id))
	var f sparkFailure
	switch {
	case !p.rel.getLatestReadsUnchecked():
		// get(id) turns the missing or unreadable file into None.
		f = sparkFailure{exception: excIllegalState, message: fmt.Sprintf("failed to read log file for batch %d", id), exact: true}
	case isDir:
		// Hadoop's local file system opens the directory with a FileInputStream.
		f = sparkFailure{exception: "java.io.FileNotFoundException", message: fmt.Sprintf("%s (Is a directory)", strings.TrimPrefix(canonical, "file:")), exact: false}
	default:
		f = fileNotFound(canonical)
	}
	what := fmt.Sprintf("%s is listed as batch %d (Spark parses the name with toLong), but Spark opens %s, which does not exist", entry, id, log.Path(id))
	if isDir {
		what = fmt.Sprintf("%s is a directory whose name is a number: Spark %s lists it as batch %d, its newest, and cannot read it (4.0 and later list files only)", entry, p.rel, id)
	}
	p.warn("%s", what)
	return p.fail(ReasonLatestNotReadable, entry, f)
}

// javaUUIDError is what java.util.UUID.fromString (JDK 17, which Spark 3.5
// to 4.x run on) throws for s; nil when Java accepts it. Java is lenient:
// five dash-separated groups of hex digits, each with an optional sign, 36
// characters at most ("1-2-3-4-5" is a UUID). A group that is not hex fails
// in Long.parseLong with a NumberFormatException, whose text ckpt derives
// (inexact); the other two messages are UUID.fromString's own.
func javaUUIDError(s string) *sparkFailure {
	if len(s) > 36 {
		return &sparkFailure{exception: excIllegalArgument, message: "UUID string too large", exact: true}
	}
	groups := strings.Split(s, "-")
	if len(groups) != 5 {
		return &sparkFailure{exception: excIllegalArgument, message: "Invalid UUID string: " + s, exact: true}
	}
	const nfe = "java.lang.NumberFormatException"
	for _, g := range groups {
		if g == "" {
			return &sparkFailure{exception: nfe, message: "", exact: false}
		}
		start := 0
		if g[0] == '+' || g[0] == '-' {
			start = 1
			if len(g) == 1 {
				return &sparkFailure{exception: nfe, message: fmt.Sprintf("Error at index 0 in: %q", g), exact: false}
			}
		}
		for i := start; i < len(g); i++ {
			c := g[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return &sparkFailure{exception: nfe, message: fmt.Sprintf("Error at index %d in: %q", i, g), exact: false}
			}
		}
	}
	return nil
}
