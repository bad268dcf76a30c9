package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Spark's default spark.sql.streaming.minBatchesToRetain (§5.5).
const minBatchesToRetain = 100

// Retention thresholds: far more files than the default keeps (10×) makes listings slow; a
// long-running query keeping fewer than the default limits rollback and replay.
const (
	manyFiles        = 10 * minBatchesToRetain
	longRunningBatch = 2 * minBatchesToRetain
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
	sinkPath := "sink:" + SinkLogDir
	if s.Latest >= 0 {
		sinkPath = fmt.Sprintf("sink:%s/%d", SinkLogDir, s.Latest)
	}
	switch s.Status {
	case recovery.SinkAhead:
		var files []string
		if r.hasL {
			files = append(files, r.cp.Offsets.Path(r.L))
		}
		r.add(Finding{
			Code: CodeSinkAhead, Severity: Error, Batch: ptr(s.Latest), Path: sinkPath, Files: files,
			Message: "the file sink is ahead of the checkpoint: " + s.Message,
			Explanation: "The file sink skips every batch id it already has. Batches planned again with whatever data the sources have now " +
				"are dropped by the sink without an error. This appears after offsets were deleted or the checkpoint was restored from an older copy.",
			SparkError: ptr(fmt.Sprintf("INFO FileStreamSink: Skipping already committed batch %d", nextOrRerun(r.res))),
			Fix: "Do not delete offsets at or below the sink's latest batch. Restore the missing offsets from a backup, or point --sink at the " +
				"right directory if this is another query's output. The command below shows which batches the sink skips.",
			Commands: []string{r.replayCmd()},
		})
	case recovery.SinkBehind:
		msg := "the file sink is behind the commit log: " + s.Message
		if s.Latest < 0 {
			msg = "the file sink has no _spark_metadata log although batches committed: is --sink this query's output directory?"
		}
		r.add(Finding{
			Code: CodeSinkBehind, Severity: Warning, Batch: ptr(s.Latest), Path: sinkPath, Files: commitFile(r),
			Message: msg,
			Explanation: "A commit is written only after the sink's write succeeded, so the sink log should reach the latest commit. Readers of a file sink " +
				"trust only its log, so the missing batches are invisible to them, and no restart writes them again.",
			Fix: "Check that --sink is this query's output directory; if it is, restore _spark_metadata from a backup.",
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

// Gap shapes in offsets/.
type gapKind int

const (
	gapsNone      gapKind = iota
	gapsAsync             // sparse, or commits on the same sparse ids: async progress tracking
	gapsOrphan            // one lone latest file after a gap, commits contiguous
	gapsAmbiguous         // one gap below the latest file, no commits to tell
	gapsHoles             // isolated holes in an otherwise contiguous log
)

type gapInfo struct {
	kind    gapKind
	missing []int64 // missing ids between the first and the latest offsets file (capped)
	gaps    int     // number of gaps
	cp      *checkpoint.Checkpoint
}

// maxMissing bounds the ids collected from gaps: enough to print, without expanding a huge gap.
const maxMissing = 1000

// analyzeGaps classifies the gaps in offsets/ from the listings alone.
func analyzeGaps(cp *checkpoint.Checkpoint) gapInfo {
	g := gapInfo{cp: cp}
	off := cp.Offsets.IDs
	for i := 1; i < len(off); i++ {
		if off[i] > off[i-1]+1 {
			g.gaps++
			for id := off[i-1] + 1; id < off[i] && len(g.missing) < maxMissing; id++ {
				g.missing = append(g.missing, id)
			}
		}
	}
	if g.gaps == 0 {
		return g
	}
	L := off[len(off)-1]
	// Commits on the same sparse ids: two consecutive commits, both on offsets ids, with an
	// offsets gap between them. The normal engine never leaves that.
	straddle := false
	cs := cp.Commits.IDs
	index := func(id int64) int { return sort.Search(len(off), func(i int) bool { return off[i] >= id }) }
	for i := 1; i < len(cs) && !straddle; i++ {
		a, b := cs[i-1], cs[i]
		if b > a+1 && cp.Offsets.Has(a) && cp.Offsets.Has(b) && int64(index(b)-index(a)) < b-a {
			straddle = true
		}
	}
	sparse := g.gaps >= 2 && 2*g.gaps >= len(off)-1
	belowLatest := !cp.Offsets.Has(L - 1)
	// An orphan needs evidence of a contiguous log below it: at least two consecutive files.
	contiguousBelow := len(off) >= 3 && off[len(off)-2] == off[len(off)-3]+1
	switch {
	case straddle || sparse:
		g.kind = gapsAsync
	case g.gaps == 1 && belowLatest && len(cs) > 0 && contiguousBelow:
		g.kind = gapsOrphan
	case g.gaps == 1 && belowLatest:
		g.kind = gapsAmbiguous
	default:
		g.kind = gapsHoles
	}
	return g
}

// shape describes the gap pattern in one clause.
func (g gapInfo) shape() string {
	off, cs := g.cp.Offsets.IDs, g.cp.Commits.IDs
	switch g.kind {
	case gapsAsync:
		c := "no commits"
		if len(cs) > 0 {
			c = "commits " + ids(cs)
		}
		return fmt.Sprintf("the gaps look like async progress tracking (offsets %s, %s)", ids(off), c)
	case gapsOrphan:
		L := off[len(off)-1]
		return fmt.Sprintf("offsets/%d looks like a single orphan after a gap (offsets %s, commits %s)", L, ids(off), ids(cs))
	case gapsAmbiguous:
		c := "no commits"
		if len(cs) > 0 {
			c = "commits " + ids(cs)
		}
		return fmt.Sprintf("offsets skip %s; too few files to tell async progress tracking from an orphan file (offsets %s, %s)", ids(g.missing), ids(off), c)
	case gapsHoles:
		return fmt.Sprintf("offsets skip %s", ids(g.missing))
	}
	if len(off) > 0 {
		return fmt.Sprintf("offsets/%d is the oldest offsets file on disk (offsets %s): the files before it were purged or deleted", off[0], ids(off))
	}
	return "offsets/ is empty"
}

// gaps reports gap patterns the planner does not fail on.
func (r *runner) gaps() {
	g := analyzeGaps(r.cp)
	if g.kind == gapsNone {
		return
	}
	L := r.L
	prevMissing := r.syncMissesPrevious()
	async := r.res.Mode == recovery.ModeAsync
	if prevMissing && r.reported[r.cp.Offsets.Path(L-1)] {
		return // missing-previous-offsets says it all
	}
	if g.kind == gapsHoles && !async {
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Warning, Path: checkpoint.DirOffsets,
			Message: fmt.Sprintf("offsets/ skips %s in the middle of the log: files were deleted by hand or by a lifecycle rule", ids(g.missing)),
			Explanation: "Spark deletes offsets only from the oldest end (purge), so holes in the middle were made by something else. A restart " +
				"reads only the latest two files, but a rollback or replay across a hole fails.",
			Fix: "Nothing blocks the restart. Find what deletes files (a lifecycle rule, a cleanup script).",
		})
		return
	}
	f := Finding{Code: CodeAsyncProgressGaps, Path: checkpoint.DirOffsets, Fix: "Before switching async progress tracking off, run the query with asyncProgressTrackingCheckpointIntervalMs=0 " +
		"for at least two micro-batches (Spark's documented procedure), then disable it."}
	if prevMissing {
		f.Severity = Warning
		f.Batch = ptr(L - 1)
		f.Path = r.cp.Offsets.Path(L - 1)
		f.Files = []string{r.cp.Offsets.Path(L)}
		f.Message = fmt.Sprintf("%s; offsets/%d is missing, so a restart without async progress tracking fails with \"batch %d doesn't exist\"", g.shape(), L-1, L-1)
		f.Explanation = "The async engine restarts from the nearest lower offsets file and is fine with gaps. The normal engine requires offsets/L-1, " +
			"so switching async progress tracking off now makes the next restart fail (missing-previous-offsets)."
		f.SparkError = ptr(fmt.Sprintf("java.lang.IllegalStateException: batch %d doesn't exist", L-1))
		f.Commands = []string{r.cmd("doctor", "--mode", "sync")}
	} else {
		f.Severity = Info
		f.Message = fmt.Sprintf("%s; the latest two offsets files are consecutive, so either engine restarts", g.shape())
		f.Explanation = "Gaps further back only limit how far back a rollback or replay can go."
	}
	if cost := r.asyncRecoveryCost(); cost != "" {
		f.Explanation += " " + cost
	}
	r.add(f)
}

// syncMissesPrevious asks the planner whether the normal (sync) engine's restart fails because
// offsets/L-1 is missing: doctor's own prediction when it predicts that engine, else a sync
// prediction for the same release.
func (r *runner) syncMissesPrevious() bool {
	res := r.res
	if res.Mode != recovery.ModeSync {
		p, err := recovery.Plan(r.ctx, r.cp, recovery.Options{Mode: recovery.ModeSync, SparkVersion: r.opts.SparkVersion,
			CommitFormatVersion: r.opts.CommitFormatVersion})
		if err != nil {
			return false // no sync engine in this release (Spark 2.1)
		}
		res = p
	}
	return res.Reason == recovery.ReasonMissingPreviousOffsets
}

// asyncRecoveryCost explains what a failure replays under async progress tracking: the async
// restart (recovery.Plan in async mode) continues from the latest persisted batch, so every
// batch run since then runs again. The last interval between persisted offsets files shows how
// many batches and records that is.
func (r *runner) asyncRecoveryCost() string {
	if !r.hasL {
		return ""
	}
	prev, ok := r.cp.Offsets.Prev(r.L)
	if !ok {
		return ""
	}
	plan, err := recovery.Plan(r.ctx, r.cp, recovery.Options{Mode: recovery.ModeAsync, SparkVersion: r.opts.SparkVersion})
	if err != nil || plan.Failed() {
		return ""
	}
	batches := r.L - prev
	records := ""
	if n, ok := r.recordsBetween(prev, r.L); ok {
		records = fmt.Sprintf(", %d records", n)
	}
	return fmt.Sprintf("Failure recovery time grows with the checkpoint interval: a failure replays every batch since the latest persisted one "+
		"(the async restart %s), and between the last two persisted offsets files (%d and %d) the query ran %d batches%s, "+
		"so a failure just before the next persisted batch replays about that much.",
		strings.TrimPrefix(plan.Verdict(), "Restart "), prev, r.L, batches, records)
}

// recordsBetween counts the Kafka records between two offsets files (one Kafka source).
func (r *runner) recordsBetween(from, to int64) (int64, bool) {
	var offs [2]map[logformat.TopicPartition]int64
	for i, id := range []int64{from, to} {
		seq, err := r.cp.ReadOffsets(r.ctx, id)
		if err != nil || len(seq.Sources) != 1 || seq.Sources[0].Void {
			return 0, false
		}
		k, err := logformat.ParseKafkaOffsets(r.cp.Offsets.Path(id), seq.Sources[0].JSON)
		if err != nil {
			return 0, false
		}
		offs[i] = k.Map()
	}
	var n int64
	for tp, end := range offs[1] {
		if start, ok := offs[0][tp]; ok && end > start {
			n += end - start
		}
	}
	return n, true
}

// leftovers reports temporary and orphan checksum files, from the listings.
func (r *runner) leftovers() {
	for _, lg := range []*checkpoint.Log{r.cp.Offsets, r.cp.Commits} {
		if len(lg.Temps) > 0 {
			var files []string
			var batches []int64
			for _, e := range lg.Temps {
				files = append(files, e.Path)
				if n := logformat.ParseName(baseName(e)); n.HasBatch {
					batches = append(batches, n.Batch)
				}
			}
			files, more := capList(files)
			f := Finding{
				Code: CodeLeftoverTempFile, Severity: Info, Path: files[0], Files: files[1:],
				Message:  fmt.Sprintf("%s is left from an interrupted write%s", files[0], more),
				Fix:      "Spark ignores these files. ckpt can remove them after a backup; `ckpt repair` without --execute shows the plan.",
				Commands: []string{r.repairCmd()},
			}
			if len(lg.Temps) > 1 {
				f.Message = fmt.Sprintf("%d temporary files are left from interrupted writes in %s/%s", len(lg.Temps), lg.Dir, more)
			}
			if len(batches) == 1 {
				f.Batch = ptr(batches[0])
				f.Message = fmt.Sprintf("%s is left from an interrupted write of %s", files[0], lg.Path(batches[0]))
			}
			f.Explanation = "Spark writes each log file as a temporary file and renames it into place; a leftover means the driver was killed or the rename failed " +
				"around that batch. Spark ignores it and never removes it."
			r.add(f)
		}
		r.orphanChecksums(lg)
	}
	// The root: .metadata.crc without metadata is in the way of the metadata file Spark 4.0 and
	// older write on start.
	if !r.cp.HasMetadata() {
		for _, e := range r.cp.Root {
			if e.Path == ".metadata.crc" {
				r.add(Finding{
					Code: CodeOrphanChecksum, Severity: Warning, Path: e.Path, Files: []string{},
					Message:     ".metadata.crc exists without metadata, where Spark writes a new metadata file on start",
					Explanation: orphanExplanation,
					SparkError:  ptr("org.apache.spark.SparkConcurrentModificationException: Multiple streaming queries are concurrently using metadata"),
					Fix:         "Remove the orphan checksum after a backup (`ckpt repair` without --execute shows the plan), and restore metadata (see missing-metadata).",
					Commands:    []string{r.repairCmd()},
				})
			}
		}
	}
}

const orphanExplanation = "Hadoop's local file system writes .N.crc beside each file and removes it with the file; an orphan appears when N was " +
	"deleted by hand. When Spark writes N again the leftover checksum can make the rename into place fail, which Spark reports as two " +
	"queries using the checkpoint even when there is only one (reported once in public, unverified in Spark's source)."

func baseName(e storage.Entry) string {
	if i := strings.LastIndexByte(e.Path, '/'); i >= 0 {
		return e.Path[i+1:]
	}
	return e.Path
}

// orphanChecksums reports .N.crc (Hadoop) and N.crc (Spark master's checksum manager) files
// whose N is gone. One the restart will write over is a warning; old ones are grouped as info.
func (r *runner) orphanChecksums(lg *checkpoint.Log) {
	type orphan struct {
		e  storage.Entry
		id int64
	}
	var orphans []orphan
	for _, e := range lg.Checksums {
		n := logformat.ParseName(baseName(e))
		if n.HasBatch && logformat.ParseName(n.Target).Kind == logformat.NameBatch && !lg.Has(n.Batch) {
			orphans = append(orphans, orphan{e, n.Batch})
		}
	}
	for _, e := range lg.Others {
		if t, ok := strings.CutSuffix(baseName(e), ".crc"); ok && !e.IsDir {
			if n := logformat.ParseName(t); n.Kind == logformat.NameBatch && !lg.Has(n.Batch) {
				orphans = append(orphans, orphan{e, n.Batch})
			}
		}
	}
	latest, has := lg.Latest()
	var old []string
	for _, o := range orphans {
		if has && o.id <= latest {
			old = append(old, o.e.Path)
			continue
		}
		r.add(Finding{
			Code: CodeOrphanChecksum, Severity: Warning, Batch: ptr(o.id), Path: o.e.Path, Files: []string{},
			Message:     fmt.Sprintf("%s is the checksum of %s, which does not exist and which the query writes next", o.e.Path, lg.Path(o.id)),
			Explanation: orphanExplanation,
			SparkError:  ptr(fmt.Sprintf("org.apache.spark.SparkConcurrentModificationException: Multiple streaming queries are concurrently using %s", r.cp.SparkPath(lg.Dir))),
			Fix:         "Remove the orphan checksum before restarting; ckpt does it after a backup (`ckpt repair` without --execute shows the plan).",
			Commands:    []string{r.repairCmd()},
		})
	}
	if len(old) > 0 {
		files, more := capList(old)
		r.add(Finding{
			Code: CodeOrphanChecksum, Severity: Info, Path: files[0], Files: files[1:],
			Message:     fmt.Sprintf("%d checksum files in %s/ belong to batch files that no longer exist%s", len(old), lg.Dir, more),
			Explanation: "These ids are below the latest batch, so Spark does not write them again; the files are clutter left by a deletion by hand.",
			Fix:         "Harmless; ckpt can remove them after a backup.",
			Commands:    []string{r.repairCmd()},
		})
	}
}

// retention compares what the logs keep with what Spark's purge leaves.
func (r *runner) retention() {
	async := r.res.Mode == recovery.ModeAsync
	g := analyzeGaps(r.cp)
	o0, hasO := r.cp.Offsets.Earliest()
	c0, hasC0 := r.cp.Commits.Earliest()
	if hasO && hasC0 && !async && g.kind != gapsAsync && o0 != c0 && r.hasL && r.C <= r.L {
		which := fmt.Sprintf("commits start at %d but offsets at %d: commits were purged further than offsets", c0, o0)
		if c0 < o0 {
			which = fmt.Sprintf("offsets start at %d but commits at %d: offsets were purged further than commits", o0, c0)
		}
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Warning, Path: checkpoint.DirCommits,
			Files:   []string{r.cp.Offsets.Path(o0), r.cp.Commits.Path(c0)},
			Message: which,
			Explanation: "Spark purges offsets and commits below the same threshold, so both logs normally start at the same batch. A difference means " +
				"files were deleted by hand, by a lifecycle rule or a cleanup script, or a purge failed half-way. The restart reads only the latest files, " +
				"but whatever deletes files may take the latest ones next.",
			Fix: "Nothing blocks the restart. Find what deletes files and stop it.",
		})
	}
	if !async && g.kind != gapsAsync && hasC0 && r.hasC {
		var holes []int64
		cs := r.cp.Commits.IDs
		for i := 1; i < len(cs) && len(holes) < maxMissing; i++ {
			for id := cs[i-1] + 1; id < cs[i] && len(holes) < maxMissing; id++ {
				if r.cp.Offsets.Has(id) && id < r.L {
					holes = append(holes, id)
				}
			}
		}
		if len(holes) > 0 {
			r.add(Finding{
				Code: CodeRetentionAnomaly, Severity: Info, Path: checkpoint.DirCommits,
				Message:     fmt.Sprintf("commits are missing for batches %s in the middle of the log, while their offsets exist", ids(holes)),
				Explanation: "The normal engine writes a commit for every batch and purges from the oldest end, so holes were made by hand. Spark reads only the latest commit.",
				Fix:         "Nothing blocks the restart.",
			})
		}
	}
	n := len(r.cp.Offsets.IDs)
	if n > manyFiles {
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Info, Path: checkpoint.DirOffsets,
			Message: fmt.Sprintf("offsets/ keeps %d files (Spark's default keeps about %d): minBatchesToRetain was raised or purging fails", n, minBatchesToRetain+1),
			Explanation: "Every start lists these directories, and on object stores a listing of many thousands of files is slow. If purging fails " +
				"(async log purge reports its errors at the next batch), the logs grow without bound.",
			Fix: "Check spark.sql.streaming.minBatchesToRetain and the driver log for purge errors.",
		})
	}
	if hasO && !async && g.kind == gapsNone && r.hasL && r.L >= longRunningBatch && o0 > 0 && n < minBatchesToRetain {
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Info, Path: checkpoint.DirOffsets,
			Message: fmt.Sprintf("offsets/ keeps only batches %d..%d (%d files) of a query at batch %d; Spark's default keeps %d", o0, r.L, n, r.L, minBatchesToRetain+1),
			Explanation: "minBatchesToRetain was lowered or older files were deleted. The restart is unaffected, but a rollback or a replay reaches back " +
				"only to the oldest file kept.",
			Fix: "Nothing blocks the restart.",
		})
	}
}

// emptyFiles reports zero-byte files among those a restart reads that the planner did not reach
// (it stopped at an earlier problem). It stats only these few files: the listing has no sizes
// (storage.ListNames), so empty older files are found by --deep, which reads them.
func (r *runner) emptyFiles() error {
	for _, p := range r.restartFiles() {
		dir, _, _ := strings.Cut(p, "/")
		if r.reported[p] || (dir != checkpoint.DirOffsets && dir != checkpoint.DirCommits) {
			continue
		}
		e, err := r.cp.Store.Stat(r.ctx, p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if e.Size != 0 {
			continue
		}
		id := r.batchOf(p)
		r.add(Finding{
			Code: CodeCorruptLogFile, Severity: Error, Batch: id, Path: p,
			Message:     fmt.Sprintf("%s is empty, and the restart reads it once the problem before it is fixed", p),
			Explanation: fmt.Sprintf("%s is %s.", p, r.role(p)),
			Fix:         "Restore the file from a backup, or let ckpt remove it; `ckpt repair` without --execute shows the plan.",
			Commands:    []string{r.repairCmd()},
		})
	}
	return nil
}

// batchOf returns the batch id of a restart file of offsets/ or commits/, nil if none matches.
func (r *runner) batchOf(p string) *int64 {
	for _, lg := range []*checkpoint.Log{r.cp.Offsets, r.cp.Commits} {
		for _, id := range []int64{r.L, r.C} {
			if lg.Has(id) && lg.Path(id) == p {
				return ptr(id)
			}
		}
		if prev := r.res.PreviousBatch; prev != nil && lg.Has(*prev) && lg.Path(*prev) == p {
			return ptr(*prev)
		}
	}
	return nil
}

// olderDamaged reports damaged files a restart does not read, one finding per log. spark is what
// Spark raises when it reads the first of them, nil when not known.
func (r *runner) olderDamaged(code string, lg *checkpoint.Log, files []string, first int64, one, many string, spark *string) {
	all := len(files)
	files, more := capList(files)
	f := Finding{
		Code: code, Severity: Warning, Path: files[0], Files: files[1:],
		Explanation: "Spark reads only the newest files on restart, so this does not block it; a rollback, savepoint or replay that goes back to " +
			"these batches fails.",
		SparkError: spark,
		Fix:        "Restore from a backup if you need these batches; otherwise nothing blocks the restart.",
		Commands:   []string{},
	}
	if code == CodeUnsupportedLogVersion {
		f.Explanation = fmt.Sprintf("A newer Spark release, or another checkpoint format setting, wrote these files. Spark %s reads only the newest files on restart, "+
			"so this does not block it; a rollback, savepoint or replay that goes back to these batches fails with this release.", r.res.SparkVersion)
		f.Fix = "Nothing blocks the restart. Going back to these batches needs a Spark release (and checkpoint format setting) that reads them; do not rewrite or delete the files."
	}
	if all == 1 {
		f.Batch = ptr(first)
		f.Message = fmt.Sprintf("%s %s (an older batch the restart does not read)", files[0], one)
	} else {
		f.Message = fmt.Sprintf("%d files in %s/ %s, from %s (older batches the restart does not read)%s", all, lg.Dir, many, files[0], more)
	}
	r.add(f)
}

// deep reads every offsets and commits file the restart did not, concurrently, and reports
// damaged files and changes in the number of sources.
func (r *runner) deep() error {
	for _, lg := range []*checkpoint.Log{r.cp.Offsets, r.cp.Commits} {
		var paths []string
		var idsRead []int64
		for _, id := range lg.IDs {
			p := lg.Path(id)
			if r.reported[p] {
				continue
			}
			paths = append(paths, p)
			idsRead = append(idsRead, id)
		}
		data, err := storage.ReadMany(r.ctx, r.cp.Store, paths, r.opts.Parallelism)
		if err != nil {
			return fmt.Errorf("read %s/: %w", lg.Dir, err)
		}
		type bad struct {
			files    []string
			first    int64
			refusal  *recovery.VersionError // the first file's, for unsupported versions
			versions []int
		}
		damaged := map[string]*bad{}
		counts := make([]int, len(paths))
		versions := make([]int, len(paths))
		kind := recovery.LogOffsets
		if lg == r.cp.Commits {
			kind = recovery.LogCommits
		}
		var empty []string
		var firstEmpty int64
		for i, p := range paths {
			if len(data[i]) == 0 {
				// Reported as empty, not as a parse failure, and not counted in the
				// source history.
				if empty == nil {
					firstEmpty = idsRead[i]
				}
				empty = append(empty, p)
				counts[i] = -1
				continue
			}
			var perr error
			if lg == r.cp.Offsets {
				var seq *logformat.OffsetSeq
				seq, perr = logformat.ParseOffsets(p, data[i])
				if perr == nil {
					counts[i], versions[i] = len(seq.Sources), seq.Version
				}
			} else {
				var c *logformat.Commit
				c, perr = logformat.ParseCommit(p, data[i])
				if perr == nil {
					versions[i] = c.Version
				}
			}
			le := parseErr(perr)
			if le == nil && perr != nil {
				return perr
			}
			// The version header, whether the file parsed or was too new for any release: the
			// planner's CheckVersion says whether this Spark reads it.
			version := versions[i]
			if le != nil && le.Kind == logformat.KindUnsupportedVersion {
				version = le.Version
			}
			if le != nil {
				counts[i] = -1
			}
			code := ""
			var ve *recovery.VersionError
			if version > 0 {
				err := recovery.CheckVersion(r.res.SparkVersion, kind, version, r.opts.CommitFormatVersion)
				if err != nil && !errors.As(err, &ve) {
					return err
				}
			}
			switch {
			case ve != nil:
				code = CodeUnsupportedLogVersion
			case le != nil:
				code = CodeCorruptLogFile
			default:
				continue
			}
			b := damaged[code]
			if b == nil {
				b = &bad{first: idsRead[i], refusal: ve}
				damaged[code] = b
			}
			b.files = append(b.files, p)
			if ve != nil && !slices.Contains(b.versions, ve.Version) {
				b.versions = append(b.versions, ve.Version)
			}
		}
		if len(empty) > 0 {
			r.olderDamaged(CodeCorruptLogFile, lg, empty, firstEmpty, "is empty", "are empty", nil)
		}
		if b := damaged[CodeCorruptLogFile]; b != nil {
			r.olderDamaged(CodeCorruptLogFile, lg, b.files, b.first, "cannot be parsed", "cannot be parsed", nil)
		}
		if b := damaged[CodeUnsupportedLogVersion]; b != nil {
			sv := r.res.SparkVersion
			vs := make([]string, len(b.versions))
			for i, v := range b.versions {
				vs[i] = fmt.Sprintf("v%d", v)
			}
			r.olderDamaged(CodeUnsupportedLogVersion, lg, b.files, b.first,
				fmt.Sprintf("has format v%d, which Spark %s cannot read", b.refusal.Version, sv),
				fmt.Sprintf("have a format version Spark %s cannot read (%s)", sv, strings.Join(vs, ", ")),
				ptr(b.refusal.SparkError(r.cp.SparkPath(b.files[0]))))
		}
		if lg == r.cp.Offsets {
			r.sourceHistory(idsRead, counts)
		}
	}
	return nil
}

// sourceHistory reports changes in the number of sources across offsets files (Deep only).
func (r *runner) sourceHistory(list []int64, counts []int) {
	if slices.ContainsFunc(r.findings, func(f Finding) bool { return f.Code == CodeSourceCountMismatch }) {
		return
	}
	type run struct {
		from, to int64
		n        int
	}
	var runs []run
	for i, id := range list {
		if counts[i] < 0 {
			continue
		}
		if len(runs) > 0 && runs[len(runs)-1].n == counts[i] {
			runs[len(runs)-1].to = id
			continue
		}
		runs = append(runs, run{id, id, counts[i]})
	}
	if len(runs) < 2 {
		return
	}
	var parts []string
	for _, rn := range runs {
		span := fmt.Sprint(rn.from)
		if rn.to != rn.from {
			span = fmt.Sprintf("%d..%d", rn.from, rn.to)
		}
		parts = append(parts, fmt.Sprintf("offsets %s list %d", span, rn.n))
	}
	r.add(Finding{
		Code: CodeSourceCountMismatch, Severity: Warning, Path: r.cp.Offsets.Path(runs[len(runs)-1].from),
		Message: "the number of sources changed over time: " + strings.Join(parts, "; "),
		Explanation: "The query's sources were changed at some point. The restart reads only the latest files, which agree, but going back to " +
			"batches with a different number of sources fails Spark's source-count assertion.",
		Fix: "Nothing blocks the restart; do not roll back across the change.",
	})
}
