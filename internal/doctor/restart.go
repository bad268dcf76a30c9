package doctor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// restart turns the planner's prediction into findings. Every decision about what Spark does is
// the planner's; this only names it.
func (r *runner) restart() error {
	if r.checkpointFails() {
		if err := r.failure(); err != nil {
			return err
		}
	} else {
		r.toleratedConflicts()
	}
	r.missingMetadataWarning()
	r.commitLag()
	r.uncommitted()
	r.kafkaRangeDataLoss()
	return nil
}

// checkpointFails reports whether the restart fails on the checkpoint itself. A restart that
// fails only on the broker (one of recovery.BrokerReasons) is reported by the broker findings,
// while the checkpoint's own findings stay those of a restart that starts.
func (r *runner) checkpointFails() bool {
	if b := r.res.Broker; b != nil {
		return b.CheckpointOutcome == recovery.OutcomeFail
	}
	// A restart that fails only on a Delta table is reported by the Delta findings (delta.go),
	// one that fails loading state by the state findings (state.go).
	return r.res.Failed() && !slices.Contains(recovery.DeltaReasons, r.res.Reason) && !slices.Contains(recovery.StateReasons, r.res.Reason)
}

// failure names the planner's failure from its Reason and FailedFile: doctor decides nothing
// about Spark's rules itself. A reason doctor has no code for is an error, not a silently dropped
// finding.
func (r *runner) failure() error {
	res := r.res
	switch res.Reason {
	case recovery.ReasonMissingMetadata:
		r.missingMetadata(Error)
	case recovery.ReasonEmptyOffsetsWithCommits:
		r.emptyOffsetsWithCommits(Error)
	case recovery.ReasonCommitsAhead:
		r.commitsAhead(Error)
	case recovery.ReasonMissingPreviousOffsets:
		r.missingPrevious()
	case recovery.ReasonSourceCountMismatch:
		r.sourceCountFailure()
	case recovery.ReasonCorruptMetadata, recovery.ReasonCorruptLatestOffsets, recovery.ReasonCorruptPreviousOffsets,
		recovery.ReasonCorruptLatestCommit, recovery.ReasonCorruptInitialOffsets:
		r.blockingFile(res.FailedFile, false)
	case recovery.ReasonUnsupportedOffsetsVersion, recovery.ReasonUnsupportedCommitVersion,
		recovery.ReasonUnsupportedInitialOffsetsVersion:
		r.blockingFile(res.FailedFile, true)
	case recovery.ReasonInvalidSourceOffset:
		r.invalidSourceOffset()
	case recovery.ReasonBatchSpanTooLarge:
		r.batchSpanTooLarge()
	case recovery.ReasonOrphanChecksum:
		// orphanChecksums reports it, as an error, with the planner's text.
	case recovery.ReasonLatestNotReadable:
		r.latestNotReadable()
	case recovery.ReasonKafkaRangeDataLoss:
		// restart() reports it from the planner's ranges and error.
	case recovery.ReasonNotEmptyOnStart, recovery.ReasonBatchPathTaken, recovery.ReasonSparkBug, recovery.ReasonKafkaPrefetchMismatch:
		r.plannerFailure()
	default:
		return fmt.Errorf("doctor has no code for the predicted restart failure %q (reason %q; please report this)", exceptionLine(res), res.Reason)
	}
	return nil
}

// toleratedConflicts reports the conflicts that old Spark releases survive: they still mean a
// damaged checkpoint.
func (r *runner) toleratedConflicts() {
	switch {
	case r.hasL && r.hasC && r.C > r.L:
		r.commitsAhead(Warning)
	case !r.hasL && r.hasC:
		r.emptyOffsetsWithCommits(Error)
	}
}

func (r *runner) metadataErr() *logformat.Error {
	if !r.cp.HasMetadata() {
		return nil
	}
	_, err := r.cp.ReadMetadata(r.ctx)
	return parseErr(err)
}

// restartFiles are the files a restart reads, in the planner's order, as store-relative paths:
// the previous offsets file is the planner's PreviousBatch.
func (r *runner) restartFiles() []string {
	var ps []string
	if r.hasL {
		ps = append(ps, r.cp.Offsets.Path(r.L))
		if prev := r.res.PreviousBatch; prev != nil {
			ps = append(ps, r.cp.Offsets.Path(*prev))
		}
	}
	if r.hasC {
		ps = append(ps, r.cp.Commits.Path(r.C))
	}
	for i, ini := range r.res.StartFromInitial {
		if ini {
			ps = append(ps, initialPath(i))
		}
	}
	return ps
}

func initialPath(source int) string { return checkpoint.InitialOffsetsPath(source) }

// cachedErr is the parse error of a restart-read file. The planner read it already, so this
// costs no I/O.
func (r *runner) cachedErr(p string) *logformat.Error {
	dir, name, _ := strings.Cut(p, "/")
	switch {
	case p == checkpoint.FileMetadata:
		return r.metadataErr()
	case dir == checkpoint.DirOffsets:
		n := logformat.ParseName(name)
		_, err := r.cp.ReadOffsets(r.ctx, n.Batch)
		return parseErr(err)
	case dir == checkpoint.DirCommits:
		n := logformat.ParseName(name)
		_, err := r.cp.ReadCommit(r.ctx, n.Batch)
		return parseErr(err)
	case dir == checkpoint.DirSources:
		var i int
		if _, err := fmt.Sscanf(p, checkpoint.DirSources+"/%d/0", &i); err != nil || p != initialPath(i) {
			return nil
		}
		_, err := r.cp.ReadKafkaInitialOffsets(r.ctx, i)
		return parseErr(err)
	}
	return nil
}

// fileVersion is the header version of a restart-read file that parsed (or was too new to).
func (r *runner) fileVersion(p string, le *logformat.Error) int {
	if le != nil {
		return le.Version
	}
	dir, name, _ := strings.Cut(p, "/")
	n := logformat.ParseName(name)
	switch dir {
	case checkpoint.DirOffsets:
		if seq, err := r.cp.ReadOffsets(r.ctx, n.Batch); err == nil {
			return seq.Version
		}
	case checkpoint.DirCommits:
		if c, err := r.cp.ReadCommit(r.ctx, n.Batch); err == nil {
			return c.Version
		}
	}
	return 0
}

// role says why the restart reads p.
func (r *runner) role(p string) string {
	switch {
	case p == checkpoint.FileMetadata:
		return "the query id file, which Spark reads before anything else"
	case r.hasL && p == r.cp.Offsets.Path(r.L):
		return "the latest offsets file: Spark reads it on every start and never falls back to an older one"
	case r.hasC && p == r.cp.Commits.Path(r.C):
		return "the latest commit: Spark reads it on every start and never falls back to an older one"
	case strings.HasPrefix(p, checkpoint.DirOffsets+"/"):
		return fmt.Sprintf("the offsets file batch %d restarts from", r.L)
	case strings.HasPrefix(p, checkpoint.DirSources+"/"):
		return "the Kafka source's initial offsets, which the re-run reads because it has no start offset"
	}
	return "a file the restart reads"
}

func batchOf(p string) *int64 {
	_, name, ok := strings.Cut(p, "/")
	if !ok {
		return nil
	}
	if n := logformat.ParseName(name); n.Kind == logformat.NameBatch && !strings.HasPrefix(p, checkpoint.DirSources+"/") {
		return ptr(n.Batch)
	}
	return nil
}

// blockingFile reports the restart-read file that makes the restart fail: too new for the
// release (unsupported), or damaged.
func (r *runner) blockingFile(p string, unsupported bool) {
	res := r.res
	le := r.cachedErr(p)
	if unsupported {
		v := r.fileVersion(p, le)
		f := Finding{
			Code: CodeUnsupportedLogVersion, Severity: Error, Batch: batchOf(p), Path: p,
			Message: fmt.Sprintf("%s has format v%d, which Spark %s cannot read (%s engine)", p, v, res.SparkVersion, res.Mode),
			Explanation: fmt.Sprintf("%s is %s. It was written by a newer Spark release or with another checkpoint format "+
				"setting (spark.sql.streaming.stateStore.checkpointFormatVersion for commits), so the restart fails.", p, r.role(p)),
			SparkError: sparkError(res, false),
		}
		if how, ver, cf := r.readersOf(p, v); how != "" {
			f.Fix = "Restart with " + how + "; check first with the command below. Do not delete or rewrite the file."
			args := []string{"--spark-version", ver}
			if cf > 1 {
				args = append(args, "--commit-format-version", fmt.Sprint(cf))
			}
			f.Commands = []string{r.cmd("doctor", args...)}
		} else if ok := r.readableBy(); ok != "" {
			f.Fix = fmt.Sprintf("Restart with Spark %s (or the matching checkpoint format setting); check first with the command below. Do not delete or rewrite the file.", ok)
			f.Commands = []string{r.cmd("doctor", "--spark-version", ok)}
		} else {
			f.Fix = "Restart with the Spark release (and checkpoint format setting) that wrote the checkpoint. Do not delete or rewrite the file."
		}
		r.add(f)
		return
	}
	what := "cannot be read"
	switch {
	case le != nil:
		what = describe(le)
	case p == checkpoint.FileMetadata && res.Exception != "":
		// It parses, but the query id is not a UUID Java reads (the planner's failure).
		what = "holds a query id that is not a UUID (" + res.Exception + ": " + res.ErrorText() + ")"
	}
	f := Finding{
		Code: CodeCorruptLogFile, Severity: Error, Batch: batchOf(p), Path: p,
		Message:     fmt.Sprintf("%s %s, and it blocks the restart", p, what),
		Explanation: fmt.Sprintf("%s is %s. Spark writes log files atomically, so a damaged one comes from a copy by hand, a non-atomic store or an interrupted upload.", p, r.role(p)),
		SparkError:  sparkError(res, false),
	}
	switch {
	case p == checkpoint.FileMetadata:
		f.Fix = "Restore metadata from a backup, or write it with the query's original id (driver log: \"Starting [id = <uuid>, runId = …]\"). Never write a new random id."
	case strings.HasPrefix(p, checkpoint.DirSources+"/"):
		f.Fix = "Restore the file from a backup, or set startingOffsets to the positions the query originally started from; the command below shows the ranges the restart reads."
		f.Commands = []string{r.replayCmd()}
	default:
		f.Fix = "Restore the file from a backup if you have one. Otherwise let ckpt remove it (and any commit that would then be ahead) so the previous batch becomes the latest; `ckpt repair` without --execute shows the plan and the replay first."
		f.Commands = []string{r.repairCmd()}
	}
	r.add(f)
}

// invalidSourceOffset reports an offsets file whose source offset the re-run cannot hand to its
// source: the file is damaged for Spark although it parses.
func (r *runner) invalidSourceOffset() {
	res := r.res
	p := res.FailedFile
	if res.RerunBatch == nil {
		r.invalidCommittedOffset()
		return
	}
	b := *res.RerunBatch
	msg := fmt.Sprintf("%s holds a source offset its source cannot read, and the re-run of batch %d starts from it", p, b)
	files := []string{r.cp.Offsets.Path(b)}
	if p == r.cp.Offsets.Path(b) {
		msg = fmt.Sprintf("%s holds a source offset its source cannot read, and the re-run of batch %d reads up to it", p, b)
		files = []string{}
	}
	r.add(Finding{
		Code: CodeCorruptLogFile, Severity: Error, Batch: batchOf(p), Path: p, Files: files,
		Message: msg,
		Explanation: fmt.Sprintf("%s is %s. Each line after the metadata is one source's offset, in the order of the query's sources; "+
			"an empty line, or another source's offset (the query's sources changed order or were replaced), parses as a log file "+
			"but not as an offset of that source, so the batch fails when it runs.", p, r.role(p)),
		SparkError: sparkError(res, false),
		Fix: "Restore the file from a backup. If the query's sources changed, restart with the query that wrote the checkpoint, " +
			"or start a new checkpoint. ckpt does not rewrite source offsets; the command below shows the range the restart reads.",
		Commands: []string{r.replayCmd()},
	})
}

// invalidCommittedOffset reports a latest committed offsets file whose source offset the resumed
// query cannot hand to its source (recovery's checkCommittedOffsets): the next batch starts from
// it, so the query fails before it plans one.
func (r *runner) invalidCommittedOffset() {
	res := r.res
	p := res.FailedFile
	f := Finding{
		Code: CodeCorruptLogFile, Severity: Error, Batch: batchOf(p), Path: p, Files: []string{},
		Message: fmt.Sprintf("%s, the latest committed batch, holds a source offset its source cannot read, and the resumed query starts from it", p),
		Explanation: fmt.Sprintf("%s is %s. Each line after the metadata is one source's offset, in the order of the query's sources; "+
			"the resumed query hands each source its offset from this file before it plans the next batch, so a damaged line "+
			"(truncated JSON, text that is not that source's offset) fails the query although the file parses as a log file.", p, r.role(p)),
		SparkError: sparkError(res, false),
		Fix: "Restore the file from a backup. Otherwise go back to the batch before it: `ckpt rewind --to-batch` moves this batch's offsets and " +
			"commit into the backup, and the restart processes its records again (duplicates in a sink that does not deduplicate).",
		Commands: []string{},
	}
	if b := batchOf(p); b != nil && *b > 0 {
		f.Commands = []string{r.cmd("rewind", "--to-batch", fmt.Sprint(*b-1))}
	}
	r.add(f)
}

// readableBy names a release the planner predicts a resume for, from its per-release notes.
func (r *runner) readableBy() string {
	for _, n := range r.res.Releases {
		if n.Outcome == recovery.OutcomeResume && len(n.Versions) > 0 {
			// The newest release, not master, when one resumes.
			v := n.Versions[len(n.Versions)-1]
			if v == "master" && len(n.Versions) > 1 {
				v = n.Versions[len(n.Versions)-2]
			}
			return v
		}
	}
	return ""
}

// missingPrevious reports the sync engine's "batch L-1 doesn't exist", with the shape of the gap.
func (r *runner) missingPrevious() {
	L := r.L
	g := r.gapInfo()
	files := []string{r.cp.Offsets.Path(L)}
	if r.cp.Commits.Has(L) {
		files = append(files, r.cp.Commits.Path(L))
	}
	f := Finding{
		Code: CodeMissingPreviousOffsets, Severity: Error, Batch: ptr(L - 1), Path: r.cp.Offsets.Path(L - 1), Files: files,
		Message:    fmt.Sprintf("offsets/%d is missing, so Spark cannot restart from the latest batch %d; %s", L-1, L, g.shape()),
		SparkError: sparkError(r.res, true),
		Commands:   []string{r.repairCmd()},
	}
	if listed := r.cp.Offsets.FilePath(L - 1); listed != "" && listed != r.cp.Offsets.Path(L-1) {
		f.Message = fmt.Sprintf("%s holds batch %d under a name Spark does not open (it parses the name as %d, then opens %s, which does not exist), so Spark cannot restart from the latest batch %d",
			listed, L-1, L-1, r.cp.Offsets.Path(L-1), L)
		f.Explanation = "The normal engine reads offsets/L-1 to find where batch L starts. Spark never writes a padded or signed name: it was renamed or copied in by hand."
		f.Fix = fmt.Sprintf("If %s holds batch %d's content, rename it to %s.", listed, L-1, r.cp.Offsets.Path(L-1))
		f.Commands = nil
		r.add(f)
		return
	}
	repair := "Or let ckpt make the latest two offsets files consecutive (and drop commits that would then be ahead): `ckpt repair` without --execute shows the plan and the replay it causes, with --execute it applies it after a backup."
	if g.Kind == recovery.GapsAsync {
		f.Explanation = "Async progress tracking persists offsets and commits only every asyncProgressTrackingCheckpointIntervalMs, " +
			"so both logs are sparse; the async engine restarts from the nearest lower offsets file, but the normal engine requires offsets/L-1. " +
			"This is what switching async progress tracking off without Spark's procedure leads to."
		f.Fix = "Spark's documented procedure: " + recovery.AsyncSwitchOffProcedure + ". " + repair
	} else {
		f.Explanation = "The normal engine reads offsets/L-1 to find where batch L starts, before it looks at the commit log, " +
			"so the restart fails even if batch L committed. A lone offsets file after a gap is usually copied in by hand, " +
			"written by a second query sharing the checkpoint, or left by a partial restore; async progress tracking leaves gaps too."
		f.Fix = "If the query ran with async progress tracking, Spark's documented procedure: " + recovery.AsyncSwitchOffProcedure + ". " + repair
	}
	r.add(f)
}

// commitsHave renders "commit 6 has" or "commits 6, 7 have".
func commitsHave(list []int64) string {
	if len(list) == 1 {
		return fmt.Sprintf("commit %d has", list[0])
	}
	return "commits " + ids(list) + " have"
}

// commitsAhead reports commits beyond the latest offsets.
func (r *runner) commitsAhead(sev Severity) {
	var ahead []int64
	var files []string
	for _, id := range r.cp.Commits.IDs() {
		if id > r.L {
			ahead = append(ahead, id)
			files = append(files, r.cp.Commits.Path(id))
		}
	}
	files, more := capList(files)
	f := Finding{
		Code: CodeCommitsAhead, Severity: sev, Batch: ptr(ahead[0]), Path: r.cp.Commits.Path(ahead[0]), Files: files,
		Message: fmt.Sprintf("commits/ reaches batch %d but offsets/ only %d: %s no offsets%s", r.C, r.L, commitsHave(ahead), more),
		Explanation: "Spark writes offsets/N before running batch N and commits/N after it, so a commit ahead of the offsets means offsets " +
			"were deleted by hand without their commits, or a second query writes this checkpoint. Batch " + fmt.Sprint(r.L) +
			" re-runs, and writing its commit (or a later one) finds the file already there.",
		SparkError: sparkError(r.res, false),
		Fix:        "Make sure no other query uses this checkpoint (Spark's message is also its report of two live writers). Then let ckpt remove the commits beyond the latest offsets, with their .crc files; `ckpt repair` without --execute shows the plan.",
		Commands:   []string{r.repairCmd()},
	}
	if sev == Warning {
		f.Explanation += fmt.Sprintf(" Spark %s ignores the failed commit writes, so the restart goes on, but those commit files keep their old content (watermark, state ids).", r.res.SparkVersion)
	}
	r.add(f)
}

// emptyOffsetsWithCommits reports commits with no offsets at all.
func (r *runner) emptyOffsetsWithCommits(sev Severity) {
	first, _ := r.cp.Commits.Earliest()
	f := Finding{
		Code: CodeEmptyOffsetsWithCommits, Severity: sev, Path: checkpoint.DirOffsets,
		Files:   []string{r.cp.Commits.Path(first), r.cp.Commits.Path(r.C)},
		Message: fmt.Sprintf("offsets/ has no batch file but commits/ holds %d (%s): Spark starts the query as new", len(r.cp.Commits.IDs()), ids(r.cp.Commits.IDs())),
		Explanation: "Without offsets Spark believes the query is new: it starts at batch 0 from the sources' starting positions " +
			"(Kafka: startingOffsets, default latest), skipping or re-reading everything since, and stops when it reaches a commit id " +
			"that already exists. Spark 4.1 and later refuse to start at all (4.1: STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY; 4.2: an assertion).",
		SparkError: sparkError(r.res, false),
		Fix:        "Restore offsets/ from a backup: the commits alone cannot say where the sources were. Otherwise ckpt can move the commits aside so the query starts afresh, which is only right with deliberately chosen starting positions; `ckpt repair` without --execute shows the plan.",
		Commands:   []string{r.repairCmd()},
	}
	r.add(f)
}

// missingMetadata reports the missing query id file.
func (r *runner) missingMetadata(sev Severity) {
	f := Finding{
		Code: CodeMissingMetadata, Severity: sev, Path: checkpoint.FileMetadata,
		Explanation: "metadata holds the query id. Sinks that deduplicate by query id (Delta's txnAppId, foreachBatch writers keyed on it) " +
			"and listeners depend on it staying the same across restarts. It is the oldest file in the checkpoint, the first a storage lifecycle rule expires.",
		Fix: "Restore metadata from a backup, or write it with the query's original id: {\"id\":\"<original-uuid>\"}, no newline " +
			"(the id is in the driver log line \"Starting [id = <uuid>, runId = …]\", the Spark UI and StreamingQueryListener events). Never write a new random id.",
	}
	if sev == Error {
		f.Message = fmt.Sprintf("metadata is missing while the logs hold batches: Spark %s refuses to start", r.res.SparkVersion)
		f.SparkError = sparkError(r.res, false)
	} else {
		f.Message = fmt.Sprintf("metadata is missing while the logs hold batches: Spark %s silently writes a new query id on start", r.res.SparkVersion)
	}
	r.add(f)
}

func (r *runner) missingMetadataWarning() {
	if r.cp.HasMetadata() || !(r.hasL || r.hasC) || r.reported[checkpoint.FileMetadata] {
		return
	}
	r.missingMetadata(Warning)
}

// commitLag reports the batches the restart never processes again, from the planner's span
// (Result.Skipped), with the records at stake.
func (r *runner) commitLag() {
	res := r.res
	sk := res.Skipped
	var spark *string
	for _, l := range res.DriverLog {
		if strings.Contains(l, "Batch completion log latest batch id is") {
			spark = ptr(l)
		}
	}
	if sk == nil && spark == nil {
		return
	}
	f := Finding{Code: CodeCommitLag, Path: checkpoint.DirCommits, SparkError: spark}
	if r.hasC {
		f.Path = r.cp.Commits.Path(r.C)
		f.Batch = ptr(r.C)
	}
	if sk == nil {
		latestCommit := "commits/ is empty"
		if r.hasC {
			latestCommit = fmt.Sprintf("the latest commit is %d", r.C)
		}
		f.Severity = Info
		f.Message = fmt.Sprintf("%s and the latest offsets %d: Spark logs a warning, but the re-run range covers the batches in between", latestCommit, r.L)
		f.Explanation = "Under async progress tracking commits are sparse by design, and the re-run starts from the nearest lower offsets file, so nothing is skipped."
		f.Fix = "Nothing to fix; the command below shows the range the restart reads."
		f.Commands = []string{r.replayCmd()}
		r.add(f)
		return
	}
	// A trailing commit log proves commits were lost: an error. Without any commit (a commit log
	// never written, or lost whole) the checkpoint cannot say the batches did not finish: a warning.
	f.Severity = Error
	if !r.hasC {
		f.Severity = Warning
	}
	f.Files = []string{r.cp.Offsets.Path(sk.EndBatch)}
	if sk.StartBatch != nil && r.cp.Offsets.Has(*sk.StartBatch) {
		f.Files = append([]string{r.cp.Offsets.Path(*sk.StartBatch)}, f.Files...)
	}
	f.Message = res.SkippedText()
	f.Explanation = fmt.Sprintf("Spark restarts from offsets/%d and re-runs only batch %d. The data between the end of the "+
		"latest committed batch and that start is never read again: if those batches did not reach the sink "+
		"before their commits were lost (usually deleted by hand), it is lost.", sk.EndBatch, r.L)
	f.Fix = "Check the sink for the listed batches; the first command shows the exact range the restart reads."
	f.Commands = []string{r.replayCmd()}
	if sk.StartBatch != nil && r.cp.Offsets.Has(*sk.StartBatch) {
		f.Fix += fmt.Sprintf(" If their output is missing there, rewinding to batch %d (the second command, a plan until --execute) makes the restart read from the end of batch %d again, batch %d's records included.", *sk.StartBatch, *sk.StartBatch, r.L)
		f.Commands = append(f.Commands, r.cmd("rewind", "--to-batch", fmt.Sprint(*sk.StartBatch)))
	}
	r.add(f)
}

// uncommitted reports the batch the restart runs again.
func (r *runner) uncommitted() {
	res := r.res
	if r.checkpointFails() || res.RerunBatch == nil {
		return
	}
	b := *res.RerunBatch
	var parts []string
	if rg := res.RerunRange; rg != nil {
		for i := range rg.End {
			start := "initial offsets"
			if i < len(rg.Start) && string(rg.Start[i]) != "null" && len(rg.Start[i]) > 0 {
				start = string(rg.Start[i])
			}
			parts = append(parts, fmt.Sprintf("source %d: %s → %s", i, start, string(rg.End[i])))
		}
	}
	var records int64
	counted := false
	for _, pr := range res.Kafka {
		if pr.Records != nil {
			records += *pr.Records
			counted = true
		}
	}
	msg := fmt.Sprintf("batch %d has offsets but no commit: the restart runs it again", b)
	if res.Mode == recovery.ModeSpark21 {
		msg = fmt.Sprintf("Spark 2.1 has no commit log: the restart runs the latest batch %d again", b)
	}
	if counted {
		msg += " (" + plural(int(records), "Kafka record") + ")"
	}
	expl := "The query stopped while the batch ran. Spark re-runs it over exactly the recorded range, with the same timestamp and watermark; " +
		"sinks idempotent by batch id write it once, others may write it twice."
	if len(parts) > 0 {
		expl += " Range: " + strings.Join(parts, "; ") + "."
	}
	if s := res.Sink; s != nil && (s.Status == recovery.SinkSkipsRerun || s.Status == recovery.SinkWritesRerun) {
		expl += " File sink: " + s.Message + "."
	}
	files := []string{r.cp.Offsets.Path(b)}
	r.add(Finding{
		Code: CodeUncommittedBatch, Severity: Info, Batch: ptr(b), Path: files[0], Files: files[1:],
		Message: msg, Explanation: expl,
		Fix:      "Nothing to fix; the command below shows the range per source and partition.",
		Commands: []string{r.replayCmd()},
	})
}

// kafkaRangeDataLoss reports the Kafka partitions of the re-run whose recorded range the planner
// marks as lost data (recovery.NotePartitionGone, recovery.NoteOffsetBackwards): Spark's
// data-loss checks when it plans the re-run.
func (r *runner) kafkaRangeDataLoss() {
	res := r.res
	if res.RerunBatch == nil {
		return
	}
	var gone, back []recovery.PartitionRange
	for _, pr := range res.Kafka {
		switch pr.Note {
		case recovery.NotePartitionGone:
			gone = append(gone, pr)
		case recovery.NoteOffsetBackwards:
			back = append(back, pr)
		}
	}
	if len(gone) == 0 && len(back) == 0 {
		return
	}
	b := *res.RerunBatch
	tp := func(pr recovery.PartitionRange) string { return dataloss.TP(pr.Topic, pr.Partition) }
	var parts []string
	var spark string
	if len(back) > 0 {
		var names []string
		for _, pr := range back {
			names = append(names, fmt.Sprintf("%s (%d → %d)", tp(pr), *pr.Start, *pr.End))
		}
		parts = append(parts, "goes backwards on "+strings.Join(names, ", "))
		pr := back[0]
		spark = dataloss.OffsetChanged(tp(pr), *pr.Start, *pr.End)
	}
	if len(gone) > 0 {
		var names []string
		for _, pr := range gone {
			names = append(names, tp(pr))
		}
		parts = append(parts, "loses "+strings.Join(names, ", ")+", which the end offsets do not list")
		// Spark checks the partitions that are gone before the ranges.
		spark = dataloss.Gone(dataloss.Set(names), false)
	}
	// The planner's failure is Spark's text for the release; a restart that does not fail
	// (failOnDataLoss=false) still reports the 3.5-style text Spark logs.
	sparkErr := sparkError(res, false)
	if res.Reason != recovery.ReasonKafkaRangeDataLoss {
		sparkErr = ptr(dataloss.IllegalState + ": " + dataloss.Driver(spark, true))
	}
	files := []string{}
	start := "the initial offsets"
	for i, ini := range res.StartFromInitial {
		if ini {
			start = "the initial offsets in " + initialPath(i)
			break
		}
	}
	if prev := res.PreviousBatch; prev != nil {
		files = append(files, r.cp.Offsets.Path(*prev))
		start = r.cp.Offsets.Path(*prev)
	}
	r.add(Finding{
		Code: CodeKafkaRangeDataLoss, Severity: Error, Batch: ptr(b), Path: r.cp.Offsets.Path(b), Files: files,
		Message: fmt.Sprintf("the re-run of batch %d (%s → %s) %s: Spark reports data loss",
			b, start, r.cp.Offsets.Path(b), strings.Join(parts, " and ")),
		Explanation: "The re-run reads exactly the recorded range. Spark never records a range that goes backwards or drops a partition, so the topic " +
			"was recreated between the two batches or a file was edited or copied in by hand. With failOnDataLoss=true (the default) the restart " +
			"fails when Spark plans the batch; with false it warns and reads nothing for those partitions.",
		SparkError: sparkErr,
		Fix: "If the topic was recreated on purpose, start the query on a new checkpoint, or restart once with failOnDataLoss=false and accept the loss. " +
			"If a file was edited or copied in by hand, restore it from a backup. ckpt does not rewrite source offsets; the command below shows the range per partition.",
		Commands: []string{r.replayCmd()},
	})
}
