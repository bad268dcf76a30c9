// Checks on the files in the logs: leftovers, orphan checksums, retention, empty and older damaged files.

package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Retention thresholds: far more files than the default keeps (10×) makes listings slow; a
// long-running query keeping fewer than the default limits rollback and replay.
const (
	manyFiles        = 10 * logformat.DefaultMinBatchesToRetain
	longRunningBatch = 2 * logformat.DefaultMinBatchesToRetain
)

// repairLockPath is repair.LockPath (repair imports doctor, not the reverse).
const repairLockPath = "_ckpt/lock"

// repairLock reports the lock of a ckpt command that changes the checkpoint, if one is held.
func (r *runner) repairLock() {
	// No _ckpt/ in the root listing: no lock, and no request to learn it.
	if !slices.ContainsFunc(r.cp.Root, func(e storage.Entry) bool { return e.IsDir && e.Path == "_ckpt" }) {
		return
	}
	data, err := r.cp.Store.ReadFile(r.ctx, repairLockPath)
	if err != nil {
		return
	}
	var l struct {
		ID       string `json:"id"`
		Journal  string `json:"journal"`
		Op       string `json:"op"`
		Host     string `json:"host"`
		PID      int    `json:"pid"`
		Acquired string `json:"acquired"`
	}
	msg := repairLockPath + " is held, but does not parse"
	if json.Unmarshal(data, &l) == nil {
		msg = fmt.Sprintf("%s is held by ckpt %s %s (host %s, pid %d, since %s; journal %s)",
			repairLockPath, plain(l.Op), plain(l.ID), plain(l.Host), l.PID, plain(l.Acquired), plain(l.Journal))
	}
	r.findings = append(r.findings, Finding{Code: CodeRepairLock, Severity: Warning, Path: repairLockPath, Message: msg,
		Fix: "ckpt commands that change this checkpoint refuse while it is held: wait for a running holder; resume or undo its journal if it exists; without a journal the next change takes a stale lock over."})
}

// leftoverStaging reports the staging runs a stopped ckpt left (journal.StagingRuns judges
// them: in progress or journaled runs are not leftovers).
func (r *runner) leftoverStaging() {
	if !slices.ContainsFunc(r.cp.Root, func(e storage.Entry) bool { return e.IsDir && e.Path == "_ckpt" }) {
		return
	}
	runs, err := journal.StagingRuns(r.ctx, r.cp.Store)
	if err != nil {
		return // the lock or journals do not read: nothing can be said of the runs
	}
	var files []string
	var bytes int64
	var names []string
	for _, run := range runs {
		if !run.Stale() {
			continue
		}
		names = append(names, plain(run.Run))
		files = append(files, journal.StagingDir+"/"+run.Run)
		bytes += run.Bytes
	}
	if len(files) == 0 {
		return
	}
	shown, _ := capList(files)
	r.findings = append(r.findings, Finding{Code: CodeLeftoverStaging, Severity: Info, Path: shown[0], Files: shown[1:],
		Message: fmt.Sprintf("%s holds %d run(s) of staged state files (%d bytes) that no running ckpt and no journal will place: %s; Spark does not read them",
			journal.StagingDir, len(files), bytes, strings.Join(names, ", ")),
		Fix:      "Nothing blocks the restart. Remove them (each run is judged again first; one in progress or journaled stays):",
		Commands: []string{r.cmd("purge", "--staging", "--execute")}})
}

// plain is s as it is when it has nothing to escape, else quoted: a lock's fields come from a
// file and never reach the terminal raw.
func plain(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
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
				f := Finding{
					Code: CodeOrphanChecksum, Severity: Warning, Path: e.Path, Files: []string{},
					Message:     ".metadata.crc exists without metadata, where Spark writes a new metadata file on start",
					Explanation: orphanExplanation,
					SparkError:  ptr(recovery.ExcConcurrentModification + ": " + recovery.ConcurrentUse("metadata")),
					Fix:         "Remove the orphan checksum after a backup (`ckpt repair` without --execute shows the plan), and restore metadata (see missing-metadata).",
					Commands:    []string{r.repairCmd()},
				}
				if r.res.Reason == recovery.ReasonOrphanChecksum && r.res.FailedFile == e.Path {
					// The planner: the query fails when it is created, writing metadata.
					f.Severity = Error
					f.Message = ".metadata.crc exists without metadata: Spark writes a new metadata file when the query is created, and the write fails"
					f.SparkError = sparkError(r.res, false)
				}
				r.add(f)
			}
		}
	}
}

const orphanExplanation = "Hadoop's local file system writes .N.crc beside each file and removes it with the file; an orphan appears when N was " +
	"deleted by hand. When Spark writes N again the leftover checksum can make the rename into place fail, which Spark reports as two " +
	"queries using the checkpoint even when there is only one (seen with real Spark 3.5.7, 4.0.0 and 4.1.1: Hadoop's FileAlreadyExistsException " +
	"\"Rename destination <.N.crc> already exists.\" under \"Multiple streaming queries are concurrently using <log>.\")."

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
		f := Finding{
			Code: CodeOrphanChecksum, Severity: Warning, Batch: ptr(o.id), Path: o.e.Path, Files: []string{},
			Message:     fmt.Sprintf("%s is the checksum of %s, which does not exist and which the query writes next", o.e.Path, lg.Path(o.id)),
			Explanation: orphanExplanation,
			SparkError:  ptr(recovery.ExcConcurrentModification + ": " + recovery.ConcurrentUse(r.cp.SparkPath(lg.Dir))),
			Fix:         "Remove the orphan checksum before restarting; ckpt does it after a backup (`ckpt repair` without --execute shows the plan).",
			Commands:    []string{r.repairCmd()},
		}
		if r.res.Reason == recovery.ReasonOrphanChecksum && r.res.FailedFile == o.e.Path {
			// The planner: the restart's first write meets it.
			f.Severity = Error
			f.Message = fmt.Sprintf("%s is the checksum of %s, which does not exist and which the restart writes first: the write fails", o.e.Path, lg.Path(o.id))
			f.SparkError = sparkError(r.res, false)
		}
		r.add(f)
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
	g := r.gapInfo()
	o0, hasO := r.cp.Offsets.Earliest()
	c0, hasC0 := r.cp.Commits.Earliest()
	if hasO && hasC0 && !async && g.Kind != recovery.GapsAsync && o0 != c0 && r.hasL && r.C <= r.L {
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
	if !async && g.Kind != recovery.GapsAsync && hasC0 && r.hasC {
		var holes []int64
		cs := r.cp.Commits.IDs()
		for i := 1; i < len(cs) && len(holes) < recovery.MaxGapSpans; i++ {
			// The offsets ids inside the commit gap: walk the listing, never the id range, which
			// can span 2^63 ids.
			for id, ok := r.cp.Offsets.Next(cs[i-1] + 1); ok && id < cs[i] && id < r.L && len(holes) < recovery.MaxGapSpans; id, ok = r.cp.Offsets.Next(id + 1) {
				holes = append(holes, id)
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
	n := len(r.cp.Offsets.IDs())
	if n > manyFiles {
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Info, Path: checkpoint.DirOffsets,
			Message: fmt.Sprintf("offsets/ keeps %d files (Spark's default keeps about %d): minBatchesToRetain was raised or purging fails", n, logformat.DefaultMinBatchesToRetain+1),
			Explanation: "Every start lists these directories, and on object stores a listing of many thousands of files is slow. If purging fails " +
				"(async log purge reports its errors at the next batch), the logs grow without bound.",
			Fix: "Check spark.sql.streaming.minBatchesToRetain and the driver log for purge errors.",
		})
	}
	if hasO && !async && g.Kind == recovery.GapsNone && r.hasL && r.L >= longRunningBatch && o0 > 0 && n < logformat.DefaultMinBatchesToRetain {
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Info, Path: checkpoint.DirOffsets,
			Message: fmt.Sprintf("offsets/ keeps only %s (%s) of a query at batch %d; Spark's default keeps %d", batchesSpan(o0, r.L), plural(n, "file"), r.L, logformat.DefaultMinBatchesToRetain+1),
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
		size, err := r.cp.Size(r.ctx, p) // no request for a file the planner read
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if size != 0 {
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

// batchesSpan renders "batch 7" or "batches 3..7".
func batchesSpan(from, to int64) string {
	if from == to {
		return fmt.Sprintf("batch %d", from)
	}
	return fmt.Sprintf("batches %d..%d", from, to)
}
