package doctor

import (
	"fmt"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
)

// sourceCountFailure reports the offsets file that fails Spark's source-count assertion
// (OffsetSeq.toStreamProgress), as the planner predicts it: its FailedFile, checked against the
// query the planner models on the latest offsets file.
func (r *runner) sourceCountFailure() {
	res := r.res
	p := res.FailedFile
	lp := r.cp.Offsets.Path(r.L)
	f := Finding{
		Code: CodeSourceCountMismatch, Severity: Error, Batch: batchOf(p), Path: p,
		SparkError: sparkError(res, false),
		Fix: "Restart with the query whose sources match the checkpoint, or start a new checkpoint for the changed query. " +
			"ckpt does not rewrite source offsets to match a different query.",
	}
	if p != lp {
		f.Files = []string{lp}
	}
	seq, err := r.readCached(p)
	latest, lerr := r.cp.ReadOffsets(r.ctx, r.L)
	switch {
	case err == nil && len(seq.BlankLines) > 0:
		f.Message = fmt.Sprintf("%s has an empty line %d, which Spark reads as one more source: the file lists %s", p, seq.BlankLines[0], plural(len(seq.Sources), "source"))
		f.Explanation = "Each line after the metadata is one source's offset, and on restart Spark asserts that the latest offsets file and the one " +
			"it restarts from have as many as the running query. An empty line, usually from an edit by hand, counts as an extra source, so the restart fails."
		f.Fix = "Restore the file from a backup, or remove the empty line (keeping no trailing newline) after taking a copy."
	case err == nil && lerr == nil && p != lp:
		f.Message = fmt.Sprintf("%s lists %s but %s lists %d: no query matches both, and Spark checks both on restart",
			p, plural(len(seq.Sources), "source"), lp, len(latest.Sources))
		f.Explanation = "Each offsets file has one line per streaming source, and on restart Spark asserts that both the latest offsets file and the one " +
			"it restarts from have as many sources as the running query, so one of the two fails whatever the query. Files that disagree come from a " +
			"query whose sources changed between batches, or from an edit by hand. The error shown is the one a query with the latest file's sources gets."
	default:
		f.Message = fmt.Sprintf("%s does not list as many sources as the query, and Spark checks it on restart", p)
		f.Explanation = "Each offsets file has one line per streaming source, and on restart Spark asserts that their number matches the running query."
	}
	r.add(f)
}

// readCached returns the parsed offsets file p (offsets/N), which the planner has read already.
func (r *runner) readCached(p string) (*logformat.OffsetSeq, error) {
	b := batchOf(p)
	if b == nil {
		return nil, fmt.Errorf("%s is not an offsets file", p)
	}
	return r.cp.ReadOffsets(r.ctx, *b)
}

// initialOffsets reports a Kafka source that restarts from its initial offsets whose
// sources/<i>/0 is gone: Spark resolves startingOffsets again, silently.
func (r *runner) initialOffsets() error {
	res := r.res
	if r.checkpointFails() {
		return nil
	}
	for i, ini := range res.StartFromInitial {
		if !ini || !slices.ContainsFunc(res.Kafka, func(p recovery.PartitionRange) bool { return p.Source == i }) {
			continue
		}
		p := initialPath(i)
		if _, err := r.cp.ReadFile(r.ctx, p); err == nil {
			continue
		} else if !isNotExist(err) {
			return fmt.Errorf("read %s: %w", p, err)
		}
		why := fmt.Sprintf("the re-run of batch %d has no start offset for source %d", *res.RerunBatch, i)
		if *res.RerunBatch != 0 {
			why += " (async progress tracking with no earlier offsets file)"
		}
		r.add(Finding{
			Code: CodeMissingInitialOffsets, Severity: Error, Batch: res.RerunBatch, Path: p, Files: []string{r.cp.Offsets.Path(*res.RerunBatch)},
			Message: fmt.Sprintf("%s, and %s is missing: Spark resolves startingOffsets again (default latest) and can skip records", why, p),
			Explanation: "A Kafka source records where it first started in sources/<i>/0. When a batch has no start offset Spark reads it; if it is gone " +
				"Spark resolves startingOffsets again, so with the default latest the records between the original start and now are skipped " +
				"(or read again with earliest), without any error.",
			Fix:      "Restore the file from a backup, or set startingOffsets explicitly to the positions the query originally started from. The command below shows the range per partition.",
			Commands: []string{r.replayCmd()},
		})
	}
	return nil
}

// sink reports the planner's verdict on the file sink when it means lost data.
func (r *runner) sink() {
	s := r.res.Sink
	if s == nil {
		return
	}
	sinkPath := "sink:" + sinklog.Dir
	if s.Latest >= 0 {
		sinkPath = fmt.Sprintf("sink:%s/%d", sinklog.Dir, s.Latest)
	}
	kind, skipped := "file sink", fmt.Sprintf("INFO FileStreamSink: Skipping already committed batch %d", nextOrRerun(r.res))
	where := "right directory"
	noLog := "the file sink has no _spark_metadata log although batches committed: is --sink this query's output directory?"
	restore := "Check that --sink is this query's output directory; if it is, restore _spark_metadata from a backup."
	if s.Kind == recovery.SinkKindDelta {
		kind, where = "Delta sink", "right table"
		sinkPath = "sink:" + deltalog.LogDir
		appID := "<query id>"
		if m, err := r.cp.ReadMetadata(r.ctx); err == nil && m != nil {
			appID = m.ID
		}
		if d := r.opts.DeltaSink; d != nil && d.TableVersion >= 0 {
			sinkPath = "sink:" + deltalog.LogDir + "/" + deltalog.CommitName(d.TableVersion)
		}
		skipped = fmt.Sprintf("INFO DeltaSink: Skipping already complete epoch %d, in query %s", nextOrRerun(r.res), appID)
		noLog = "the Delta sink's log has no txn action for this query (appId " + appID + ") although batches committed: is --delta-sink this query's table?"
		restore = "Check that --delta-sink is this query's table; if it is, the table was restored from an older copy or its log lost versions."
	}
	switch s.Status {
	case recovery.SinkAhead:
		var files []string
		if r.hasL {
			files = append(files, r.cp.Offsets.Path(r.L))
		}
		r.add(Finding{
			Code: CodeSinkAhead, Severity: Error, Batch: ptr(s.Latest), Path: sinkPath, Files: files,
			Message: "the " + kind + " is ahead of the checkpoint: " + s.Message,
			Explanation: "The " + kind + " skips every batch id it already has. Batches planned again with whatever data the sources have now " +
				"are dropped by the sink without an error. This appears after offsets were deleted or the checkpoint was restored from an older copy.",
			SparkError: ptr(skipped),
			Fix: "Do not delete offsets at or below the sink's latest batch. Restore the missing offsets from a backup, or point " + r.sinkFlag() + " at the " +
				where + " if this is another query's output. The command below shows which batches the sink skips.",
			Commands: []string{r.replayCmd()},
		})
	case recovery.SinkBehind:
		msg := "the " + kind + " is behind the commit log: " + s.Message
		if s.Latest < 0 {
			msg = noLog
		}
		r.add(Finding{
			Code: CodeSinkBehind, Severity: Warning, Batch: ptr(s.Latest), Path: sinkPath, Files: commitFile(r),
			Message: msg,
			Explanation: "A commit is written only after the sink's write succeeded, so the sink log should reach the latest commit. Readers of a file sink " +
				"trust only its log, so the missing batches are invisible to them, and no restart writes them again.",
			Fix: restore,
		})
	}
}

func commitFile(r *runner) []string {
	if r.hasC {
		return []string{r.cp.Commits.Path(r.C)}
	}
	return nil
}

func nextOrRerun(res *recovery.Result) int64 {
	if res.RerunBatch != nil {
		return *res.RerunBatch + 1
	}
	return res.NextBatch
}
