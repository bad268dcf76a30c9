// Package recovery is the one recovery planner: Plan predicts what a restart
// of a Spark Structured Streaming query does with a checkpoint, per engine
// mode and Spark release. `ckpt replay`, doctor, repair verification and the
// ckpt engine all start from it, so there is one definition of Spark's
// restart rules (docs/design.md).
//
// The rules follow MicroBatchExecution.populateStartOffsets and its async
// override (see docs/spark-semantics.md §5, §6). Plan
// reads O(1) files: the latest offsets file, the one before it, the latest
// commit, the metadata file, and, for a Kafka source that restarts from its
// initial offsets, sources/<i>/0.
package recovery

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Plan predicts the restart of the query whose checkpoint is cp. It returns
// an error only when ckpt cannot read what it needs (I/O) or opts are
// invalid; a restart Spark refuses is a Result with Outcome "fail".
func Plan(ctx context.Context, cp *checkpoint.Checkpoint, opts Options) (*Result, error) {
	cfg, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	res, err := plan(ctx, cp, cfg)
	if err != nil {
		return nil, err
	}
	res.Releases, err = releaseNotes(ctx, cp, cfg, res)
	if err != nil {
		return nil, err
	}
	if err := assessBroker(ctx, cp, cfg.broker, cfg.failOnDataLoss, res); err != nil { // brokerrestart.go
		return nil, err
	}
	return res, nil
}

type planner struct {
	ctx   context.Context
	cp    *checkpoint.Checkpoint
	cfg   config
	rel   release
	res   *Result
	class string // engine logger name

	L, C       int64
	hasL, hasC bool

	// running is set once a batch is known to start before any failure,
	// so a later failure keeps NextBatch.
	running bool

	latest  *logformat.OffsetSeq // offsets/L
	start   *logformat.OffsetSeq // offsets of the previous batch, nil when none
	startID int64
	commit  *logformat.Commit // commits/C

	// querySources is the running query's number of sources as ckpt models
	// it (checkLatestSources).
	querySources int
}

// errFailed stops the planner once Spark's failure is recorded in res.
var errFailed = errors.New("restart fails")

func plan(ctx context.Context, cp *checkpoint.Checkpoint, cfg config) (*Result, error) {
	p := &planner{ctx: ctx, cp: cp, cfg: cfg, rel: cfg.rel, class: engineClass(cfg.mode, cfg.rel)}
	p.res = &Result{
		Outcome:        OutcomeResume,
		SkippedBatches: []int64{},
		Warnings:       []string{},
		Mode:           cfg.mode,
		SparkVersion:   cfg.rel.String(),
	}
	p.L, p.hasL = cp.Offsets.Latest()
	p.C, p.hasC = cp.Commits.Latest()
	if p.hasL {
		p.res.LatestOffsets = ptr(p.L)
		p.res.PreviousBatch = p.previousBatch()
	}
	if p.hasC {
		p.res.LatestCommit = ptr(p.C)
	}
	err := p.run()
	if errors.Is(err, errFailed) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return p.res, nil
}

func (p *planner) run() error {
	if err := p.checkMetadata(); err != nil {
		return err
	}
	usesCommits := p.cfg.mode != ModeSpark21
	if p.rel.readsLogsUpFront() {
		// master: initializeExecution reads both latest entries, then
		// asserts that no commit exists without an offsets entry.
		if p.hasL {
			if err := p.readLatest(); err != nil {
				return err
			}
		}
		if p.hasC {
			if err := p.readCommit(); err != nil {
				return err
			}
		}
		if !p.hasL && p.hasC {
			return p.fail(ReasonEmptyOffsetsWithCommits, "", sparkFailure{excAssertion, "assertion failed", true})
		}
	}
	if !p.hasL {
		return p.freshStart(usesCommits)
	}
	if p.latest == nil {
		if err := p.readLatest(); err != nil {
			return err
		}
	}
	if p.cfg.mode == ModeSpark21 {
		p.log("INFO", "Resuming streaming query, starting with batch %d", p.L)
	}
	// populateStartOffsets: endOffsets = offsets/L's toStreamProgress, then
	// the previous offsets file, then the commit log.
	if err := p.checkLatestSources(); err != nil {
		return err
	}
	if err := p.resolveStart(); err != nil {
		return err
	}
	if usesCommits && p.hasC && p.commit == nil {
		if err := p.readCommit(); err != nil {
			return err
		}
	}
	return p.decide(usesCommits)
}

// fail records Spark's failure and stops planning. reason is one of
// Reasons; file is the checkpoint-relative file the failure is about, or "".
func (p *planner) fail(reason, file string, f sparkFailure, log ...string) error {
	r := p.res
	r.Outcome = OutcomeFail
	r.Reason, r.FailedFile = reason, file
	r.Error = ptr(f.message)
	r.Exception = f.exception
	r.DriverLog = append(r.DriverLog, log...)
	if !f.exact {
		r.ErrorInexact = true
		r.Warnings = append(r.Warnings, "the error text is ckpt's description: Spark's own message for this case could not be reproduced exactly")
	}
	r.key = reason
	if !p.running {
		r.NextBatch = -1
	}
	return errFailed
}

// previousBatch is the offsets file the restart starts from, from the
// listing: offsets/L-1 (sync, Spark 2.1) or the nearest lower id (async,
// getPrevBatchFromStorage).
func (p *planner) previousBatch() *int64 {
	if !p.hasL || p.L == 0 {
		return nil
	}
	if p.cfg.mode == ModeAsync {
		if prev, ok := p.cp.Offsets.Prev(p.L); ok {
			return ptr(prev)
		}
		return nil
	}
	if p.cp.Offsets.Has(p.L - 1) {
		return ptr(p.L - 1)
	}
	return nil
}

func (p *planner) warn(format string, a ...any) {
	p.res.Warnings = append(p.res.Warnings, fmt.Sprintf(format, a...))
}

func (p *planner) log(level, format string, a ...any) {
	p.res.DriverLog = append(p.res.DriverLog, level+" "+p.class+": "+fmt.Sprintf(format, a...))
}

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
		p.warn("the metadata file is missing: Spark %s silently writes a new one with a new query id, so sinks that deduplicate by query id do not recognise earlier batches (Spark master refuses this checkpoint: MISSING_METADATA_FILE)", p.rel)
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

// freshStart is the "no offsets" row: a new query at batch 0.
func (p *planner) freshStart(usesCommits bool) error {
	r := p.res
	r.NextBatch = 0
	r.key = keyFresh
	p.running = true
	p.log("INFO", "Starting new streaming query.")
	if !usesCommits || !p.hasC {
		return p.sinkVerdict()
	}
	// ≤ 4.0 start at batch 0 regardless of commits/; the first commit file
	// that already exists makes commitLog.add fail.
	k, _ := p.cp.Commits.Earliest()
	if p.rel.commitConflictFails() {
		p.warn("offsets/ is empty but commits/ holds batches up to %d: the restart runs %s as new and then finds commits/%d already written", p.C, batchesText(0, k), k)
		return p.fail(ReasonEmptyOffsetsWithCommits, p.cp.Commits.Path(k), commitConflict(p.rel, p.cfg.mode, k))
	}
	r.key = keyFreshIgnored
	p.warn("offsets/ is empty but commits/ holds batches up to %d: Spark %s ignores the failed commit writes, so commits/0..%d keep their old content", p.C, p.rel, p.C)
	return p.sinkVerdict()
}

// resolveStart finds the offsets the re-run batch starts from.
func (p *planner) resolveStart() error {
	switch p.cfg.mode {
	case ModeSync:
		if p.L == 0 {
			return nil
		}
		prev := p.L - 1
		if !p.cp.Offsets.Has(prev) {
			var log []string
			if p.rel.logsMissingPrev() {
				log = append(log, missingPrevLog(p.class, p.L))
			}
			return p.fail(ReasonMissingPreviousOffsets, p.cp.Offsets.Path(prev), missingPrev(prev), log...)
		}
		return p.readStart(prev)
	case ModeAsync:
		// getPrevBatchFromStorage: the nearest on-disk id below L.
		prev, ok := p.cp.Offsets.Prev(p.L)
		if p.L == 0 || !ok {
			return nil
		}
		return p.readStart(prev)
	default: // Spark 2.1: offsetLog.get(L-1) is optional.
		if p.L == 0 || !p.cp.Offsets.Has(p.L-1) {
			return nil
		}
		return p.readStart(p.L - 1)
	}
}

func (p *planner) readStart(id int64) error {
	seq, f, err := p.readOffsets(id)
	if err != nil {
		return err
	}
	path := p.cp.Offsets.Path(id)
	if f != nil {
		reason := ReasonCorruptPreviousOffsets
		if f.unsupported {
			reason = ReasonUnsupportedOffsetsVersion
		}
		return p.fail(reason, path, f.sparkFailure)
	}
	p.start, p.startID = seq, id
	// The same assertion as for offsets/L (checkLatestSources).
	if seq.Version >= 2 || len(seq.Sources) == p.querySources {
		return nil
	}
	latest := p.cp.Offsets.Path(p.L)
	if len(seq.BlankLines) > 0 {
		p.warn("%s has an empty source line (line %d), which Spark reads as one more source offset: it lists %s where %s, and the query as ckpt models it, have %d",
			path, seq.BlankLines[0], sourcesText(len(seq.Sources)), latest, p.querySources)
	} else {
		p.warn("%s lists %s but %s lists %d: Spark checks both files against the query's sources, so no query restarts from them. ckpt takes the query to have %s's %d, so %s fails the check; a query with %s fails on %s instead",
			path, sourcesText(len(seq.Sources)), latest, len(p.latest.Sources), latest, p.querySources, path, sourcesText(len(seq.Sources)), latest)
	}
	return p.fail(ReasonSourceCountMismatch, path, p.sourceCountFailure(len(seq.Sources)))
}

// decide applies the commit-log rows of the decision table (§5.3).
func (p *planner) decide(usesCommits bool) error {
	r := p.res
	if md := p.latest.Metadata; md != nil {
		r.WatermarkMs, r.BatchTimestampMs = md.BatchWatermarkMs, md.BatchTimestampMs
	}
	if !usesCommits {
		r.key = keyRerun21
		return p.rerun()
	}
	L, C := p.L, p.C
	switch {
	case !p.hasC:
		p.log("INFO", "no commit log present")
		r.key = keyRerunNoCommits
		p.skipped()
		return p.rerun()
	case C == L:
		r.NextBatch = L + 1
		r.key = keyResume
		if p.commit.NextBatchWatermarkMs > r.WatermarkMs {
			r.WatermarkMs = p.commit.NextBatchWatermarkMs
		}
		return p.afterPlan()
	case C == L-1:
		r.key = keyRerun
		return p.rerun()
	case C < L-1:
		p.log("WARN", "Batch completion log latest batch id is %d, which is not trailing batchid %d by one", C, L)
		r.key = keyRerunBehind
		p.skipped()
		return p.rerun()
	}
	// C > L: no branch matches; batch L re-runs, then commitLog.add meets
	// the first commit file at or above L.
	k, _ := p.cp.Commits.Next(L)
	if err := p.rerun(); err != nil {
		return err
	}
	if !p.rel.commitConflictFails() {
		r.key = keyAheadIgnored
		p.warn("commits/ is ahead of offsets/ (commit %d > offsets %d): Spark %s ignores the failed commit writes for %s, so those commit files keep their old content", C, L, p.rel, batchesText(k, C))
		return nil
	}
	if k > L {
		p.warn("commits/ is ahead of offsets/ (commit %d > offsets %d): batch %d re-runs, then the restart runs %s as new and finds commits/%d already written", C, L, L, batchesText(L+1, k), k)
	} else {
		p.warn("commits/ is ahead of offsets/ (commit %d > offsets %d): batch %d re-runs and its commit finds commits/%d already written", C, L, L, k)
	}
	if p.cfg.mode == ModeAsync && k > L {
		p.warn("in async mode the conflict comes at the first batch at or above %d whose commit is persisted, which depends on asyncProgressTrackingCheckpointIntervalMs", k)
	}
	return p.fail(ReasonCommitsAhead, p.cp.Commits.Path(k), commitConflict(p.rel, p.cfg.mode, k))
}

// skipped lists the batches whose data the restart never processes again.
func (p *planner) skipped() {
	lower := p.C + 1
	if !p.hasC {
		// Without commits, ids below the oldest offsets file were purged by
		// Spark's retention, which only follows a commit.
		lower, _ = p.cp.Offsets.Earliest()
	}
	upper := int64(-1)
	if p.start != nil {
		upper = p.startID
	}
	for id := lower; id <= upper; id++ {
		p.res.SkippedBatches = append(p.res.SkippedBatches, id)
	}
}

// rerun describes the re-run of batch L over (start, O[L]].
func (p *planner) rerun() error {
	r := p.res
	r.NextBatch = p.L
	r.RerunBatch = ptr(p.L)
	p.running = true
	n := len(p.latest.Sources)
	r.RerunRange = &Range{Start: make([]rawJSON, n), End: make([]rawJSON, n)}
	r.StartFromInitial = make([]bool, n)
	starts := make([]logformat.SourceOffset, n)
	hasStart := make([]bool, n)
	for i, end := range p.latest.Sources {
		r.RerunRange.End[i] = offsetJSON(end)
		st, ok := p.startFor(i, end)
		starts[i], hasStart[i] = st, ok && !st.Void
		if hasStart[i] {
			r.RerunRange.Start[i] = offsetJSON(st)
		} else {
			r.RerunRange.Start[i] = jsonNull
			r.StartFromInitial[i] = true
		}
	}
	// runBatch, source by source: deserialize the start offset, then the
	// end offset, then (no start) read the initial offsets.
	for i, end := range p.latest.Sources {
		if hasStart[i] {
			if f := p.checkStart(i, starts[i], end); f != nil {
				return p.fail(ReasonInvalidSourceOffset, p.cp.Offsets.Path(p.startID), *f)
			}
		}
		if err := p.kafkaRange(i, starts[i], hasStart[i], end); err != nil {
			return err
		}
	}
	return p.afterPlan()
}

// startFor finds source i's start offset: by source id between two of
// master's v2 OffsetMap files, else by position (a v1 file lists sources in
// the order the v2 ids number them).
func (p *planner) startFor(i int, end logformat.SourceOffset) (logformat.SourceOffset, bool) {
	if p.start == nil {
		return logformat.SourceOffset{}, false
	}
	if end.SourceID != "" && p.start.Version >= 2 {
		// Both OffsetMap files: match by source id.
		for _, s := range p.start.Sources {
			if s.SourceID == end.SourceID {
				return s, true
			}
		}
		return logformat.SourceOffset{}, false
	}
	if i < len(p.start.Sources) {
		return p.start.Sources[i], true
	}
	return logformat.SourceOffset{}, false
}

// afterPlan adds what does not change the outcome: the sink verdict and
// leftovers that can get in the restart's way.
func (p *planner) afterPlan() error {
	p.leftovers()
	return p.sinkVerdict()
}

// leftovers warns about orphan Hadoop checksum files next to the files the
// restart writes first.
func (p *planner) leftovers() {
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
		if crc, ok := t.log.ChecksumFor(fmt.Sprint(t.id)); ok {
			p.warn("%s is the checksum of %s, which does not exist and which the restart writes: Hadoop's checksummed local file system may refuse to create it (reported as \"Multiple streaming queries are concurrently using\", unverified); delete the orphan .crc first",
				crc.Path, t.log.Path(t.id))
		}
	}
}

// sinkVerdict compares the file sink's latest batch with the restart.
func (p *planner) sinkVerdict() error {
	if p.cfg.sinkLatest == nil {
		return nil
	}
	s := *p.cfg.sinkLatest
	r := p.res
	v := &SinkVerdict{Latest: s}
	r.Sink = v
	if r.RerunBatch != nil {
		b := *r.RerunBatch
		switch {
		case s > b:
			v.Status = SinkAhead
			v.Message = fmt.Sprintf("the sink already has batches up to %d: it skips the re-run of batch %d (no duplicates) and also %s, whose new data never reaches the sink", s, b, batchesText(b+1, s))
			r.DriverLog = append(r.DriverLog, fmt.Sprintf("INFO FileStreamSink: Skipping already committed batch %d", b))
		case s == b:
			v.Status = SinkSkipsRerun
			v.Message = fmt.Sprintf("the sink already has batch %d: FileStreamSink skips the re-run, no duplicates", b)
			r.DriverLog = append(r.DriverLog, fmt.Sprintf("INFO FileStreamSink: Skipping already committed batch %d", b))
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
		if s < 0 {
			v.Message = "the sink log is empty, as the query is new"
		} else {
			v.Message = fmt.Sprintf("the sink has every committed batch up to %d", s)
		}
	default:
		v.Status = SinkBehind
		v.Message = fmt.Sprintf("the sink lacks %s, which the commit log says finished: no restart writes them again", batchesText(s+1, next-1))
	}
	return nil
}

// sourcesText renders "1 source", "2 sources".
func sourcesText(n int) string {
	if n == 1 {
		return "1 source"
	}
	return fmt.Sprintf("%d sources", n)
}

// batchesText renders a batch range: "batch 6" or "batches 6..9".
func batchesText(from, to int64) string {
	if from == to {
		return fmt.Sprintf("batch %d", from)
	}
	return fmt.Sprintf("batches %d..%d", from, to)
}

// releaseNotes plans the same checkpoint under every release of the mode
// and groups the releases whose behaviour differs from cfg's.
func releaseNotes(ctx context.Context, cp *checkpoint.Checkpoint, cfg config, res *Result) ([]ReleaseNote, error) {
	if cfg.mode == ModeSpark21 {
		return nil, nil
	}
	key := func(r *Result) string { return fmt.Sprintf("%s|%s|%d", r.key, r.Outcome, r.NextBatch) }
	want := key(res)
	var order []string
	groups := map[string]*ReleaseNote{}
	for _, v := range SparkVersions {
		rel, _ := parseRelease(v)
		if rel == mkRelease(2, 1) || (cfg.mode == ModeAsync && !rel.atLeast(3, 4)) {
			continue
		}
		c := cfg
		c.rel = rel
		r, err := plan(ctx, cp, c)
		if err != nil {
			return nil, err
		}
		k := key(r)
		if k == want {
			continue
		}
		g, ok := groups[k]
		if !ok {
			g = &ReleaseNote{Outcome: r.Outcome, NextBatch: r.NextBatch, Error: r.Error, Summary: r.Verdict()}
			groups[k] = g
			order = append(order, k)
		}
		g.Versions = append(g.Versions, v)
	}
	notes := make([]ReleaseNote, 0, len(order))
	for _, k := range order {
		notes = append(notes, *groups[k])
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].Versions[0] < notes[j].Versions[0] })
	return notes, nil
}
