// What does not change the outcome: the file sink verdict and leftovers in the restart's way.

package recovery

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
)

// afterPlan adds the leftovers in the restart's way, then the sink verdict.
func (p *planner) afterPlan() error {
	if err := p.leftovers(); err != nil {
		return err
	}
	return p.sinkVerdict()
}

// leftovers fails the restart on an orphan Hadoop checksum next to the first
// file the restart writes: the local file system's ChecksumFs renames the
// new file's checksum onto it and refuses (FileAlreadyExistsException,
// rename without overwrite), which HDFSMetadataLog.write turns into
// multiStreamingQueriesUsingPathConcurrentlyError (docs/spark-semantics.md
// §1.2). A resume writes offsets/N first; a re-run writes commits/L after
// the batch ran.
func (p *planner) leftovers() error {
	type target struct {
		log *checkpoint.Log
		id  int64
	}
	var targets []target
	r := p.res
	switch {
	case r.RerunBatch != nil:
		if p.cfg.mode != ModeSpark21 {
			targets = append(targets, target{p.cp.Commits, *r.RerunBatch})
		}
	case r.NextBatch >= 0:
		targets = append(targets, target{p.cp.Offsets, r.NextBatch}, target{p.cp.Commits, r.NextBatch})
	}
	for _, t := range targets {
		if t.log.Has(t.id) {
			continue
		}
		if dir, ok := p.numericDir(t.log, t.id); ok {
			// HDFSMetadataLog.add: fileManager.exists(batchIdToPath(id)) is true for a
			// directory, so add returns false and the engine reports a concurrent update.
			p.warn("%s is a directory where the restart writes %s: Spark's listing skips it (files only), but the write finds the path taken and the query stops; remove the directory first",
				dir, t.log.Path(t.id))
			f := commitConflict(p.rel, p.cfg.mode, t.id)
			if t.log == p.cp.Offsets {
				f = offsetConflict(p.rel, p.cfg.mode, t.id)
			} else {
				p.running = true // the batch ran; its commit fails
			}
			return p.fail(ReasonBatchPathTaken, dir, f)
		}
		crc, ok := t.log.ChecksumFor(fmt.Sprint(t.id))
		if !ok {
			continue
		}
		p.warn("%s is the checksum of %s, which does not exist and which the restart writes: Hadoop's local file system renames the new file's checksum onto it and refuses (%s: %s), so %s is left without its checksum and the query stops; delete the orphan .crc first",
			crc.Path, t.log.Path(t.id), excFileAlreadyExists, renameDestinationExists(p.cp.SparkPath(crc.Path)), t.log.Path(t.id))
		if t.log == p.cp.Commits {
			p.running = true // the batch ran; its commit fails
		}
		return p.fail(ReasonOrphanChecksum, crc.Path, concurrentUseFailure(p.rel, p.cp.SparkPath(t.log.Dir), p.cp.SparkPath(crc.Path)))
	}
	return nil
}

// numericDir returns the directory entry of log named as batch id, when Spark's listing skips
// directories (listsDirectories): the path the restart writes batch id to is taken.
func (p *planner) numericDir(log *checkpoint.Log, id int64) (string, bool) {
	if p.rel.listsDirectories() {
		return "", false
	}
	want := log.Path(id)
	for _, e := range log.Others {
		if e.IsDir && e.Path == want {
			return e.Path, true
		}
	}
	return "", false
}

// concurrentUseFailure is HDFSMetadataLog.write's failure when the rename into place meets an
// existing file (here: the orphan checksum of the new file): _LEGACY_ERROR_TEMP_2207 from 3.4,
// a java.util.ConcurrentModificationException before. The root cause is Hadoop's
// FileAlreadyExistsException ("Rename destination <.N.crc> already exists.").
func concurrentUseFailure(r release, sparkPath, crcSparkPath string) sparkFailure {
	cause := &sparkFailure{exception: excFileAlreadyExists, message: renameDestinationExists(crcSparkPath), exact: true}
	if !r.atLeast(3, 4) {
		return sparkFailure{exception: "java.util.ConcurrentModificationException", message: "Multiple streaming queries are concurrently using " + sparkPath, exact: true, cause: cause}
	}
	return sparkFailure{exception: ExcConcurrentModification, message: ConcurrentUse(sparkPath), exact: true, errorClass: "_LEGACY_ERROR_TEMP_2207", cause: cause}
}

// Sink kinds (Options.SinkKind).
const (
	SinkKindFile  = ""      // FileStreamSink: _spark_metadata's latest batch
	SinkKindDelta = "delta" // Delta's DeltaSink: the txn action whose appId is the query id
)

// sinkVerdict compares the sink's latest batch with the restart. FileStreamSink skips a batch
// id at or below its log's latest; DeltaSink skips one at or below the txn version recorded for
// the query (DeltaSink.addBatch: "Skipping already complete epoch"), so one rule serves both.
func (p *planner) sinkVerdict() error {
	if p.cfg.sinkLatest == nil {
		return nil
	}
	s := *p.cfg.sinkLatest
	r := p.res
	v := &SinkVerdict{Latest: s, Kind: p.cfg.sinkKind}
	r.Sink = v
	name, skipLog := "FileStreamSink", func(b int64) string {
		return fmt.Sprintf("INFO FileStreamSink: Skipping already committed batch %d", b)
	}
	if p.cfg.sinkKind == SinkKindDelta {
		name, skipLog = "the Delta sink", func(b int64) string {
			return fmt.Sprintf("INFO DeltaSink: Skipping already complete epoch %d, in query %s", b, p.queryID())
		}
	}
	if r.RerunBatch != nil {
		b := *r.RerunBatch
		switch {
		case s > b:
			v.Status = SinkAhead
			v.Message = fmt.Sprintf("the sink already has batches up to %d: it skips the re-run of batch %d (no duplicates) and also %s, whose new data never reaches the sink", s, b, batchesText(b+1, s))
			r.DriverLog = append(r.DriverLog, skipLog(b))
		case s == b:
			v.Status = SinkSkipsRerun
			v.Message = fmt.Sprintf("the sink already has batch %d: %s skips the re-run, no duplicates", b, name)
			r.DriverLog = append(r.DriverLog, skipLog(b))
		case s == b-1:
			v.Status = SinkWritesRerun
			v.Message = fmt.Sprintf("batch %d never reached the sink: the re-run writes it", b)
		default:
			v.Status = SinkBehind
			v.Message = fmt.Sprintf("the sink lacks %s, which no restart writes again; the re-run writes batch %d", batchesText(s+1, b-1), b)
		}
		return nil
	}
	next := r.NextBatch
	switch {
	case s >= next:
		v.Status = SinkAhead
		v.Message = fmt.Sprintf("the sink already has %s, which the restart runs as new: the sink skips them, so their data never reaches it", batchesText(next, s))
	case s == next-1:
		v.Status = SinkInSync
		switch {
		case s < 0 && p.cfg.sinkKind == SinkKindDelta:
			v.Message = "the Delta table holds no txn for this query, as the query is new"
		case s < 0:
			v.Message = "the sink log is empty, as the query is new"
		default:
			v.Message = fmt.Sprintf("the sink has every committed batch up to %d", s)
		}
	default:
		v.Status = SinkBehind
		v.Message = fmt.Sprintf("the sink lacks %s, which the commit log says finished: no restart writes them again", batchesText(s+1, next-1))
	}
	return nil
}

// queryID is the query id from the metadata file, for log lines; "<query id>" when unreadable.
func (p *planner) queryID() string {
	if m, err := p.cp.ReadMetadata(p.ctx); err == nil && m != nil {
		return m.ID
	}
	return "<query id>"
}
