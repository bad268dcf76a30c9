// Deciding the restart's start: fresh start, the re-run batch's start offsets, the commit-log rows.

package recovery

import (
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// freshStart is the "no offsets" row: a new query at batch 0.
func (p *planner) freshStart(usesCommits bool) error {
	if err := p.verifyNewCheckpoint(); err != nil {
		return err
	}
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

// verifyNewCheckpoint is 4.1's verifyNewCheckpointDirectory: a query with no offsets entry
// starts at batch 0 only when offsets/, state/ and commits/ are missing or empty, checked in
// that order.
func (p *planner) verifyNewCheckpoint() error {
	if !p.rel.verifiesNewCheckpoint() {
		return nil
	}
	hidden := p.hidesChecksums()
	for _, dir := range []string{checkpoint.DirOffsets, checkpoint.DirState, checkpoint.DirCommits} {
		first, err := p.firstEntry(dir, hidden)
		if err != nil {
			return err
		}
		if first == "" {
			continue
		}
		reason := ReasonNotEmptyOnStart
		if dir == checkpoint.DirCommits && p.hasC {
			reason = ReasonEmptyOffsetsWithCommits
		}
		p.warn("offsets/ holds no batch, so Spark %s starts a new query at batch 0, and first checks that offsets/, state/ and commits/ are empty: %s/ holds %s", p.cfg.exact(), dir, first)
		return p.fail(reason, dir, sparkFailure{exception: excLocationNotEmpty, message: condition(p.rel, "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY",
			"The checkpoint location "+p.cp.SparkPath(dir)+" should be empty on batch 0\n"+
				"Please either use a new checkpoint location, or delete the existing data in the checkpoint location.", "42K03"), exact: true})
	}
	return nil
}

// excLocationNotEmpty is the class of STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY.
const excLocationNotEmpty = "org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointLocationNotEmpty"

// hidesChecksums reports whether Spark's listing of the checkpoint leaves out Hadoop's .crc
// files: on the local file system (and the in-memory store that stands for it in tests)
// Hadoop's ChecksumFs filters them from every listing; elsewhere they are plain files.
func (p *planner) hidesChecksums() bool {
	return strings.HasPrefix(p.cp.SparkPath(""), "file:") || strings.HasPrefix(p.cp.Store.URI(), "mem:")
}

// firstEntry is the first entry (by name) Spark's listing of dir shows, "" when dir is missing
// or empty. offsets/ and commits/ come from the checkpoint's listings; state/ is listed here,
// once, when the root has it.
func (p *planner) firstEntry(dir string, hideChecksums bool) (string, error) {
	var paths []string
	isChecksum := func(p string) bool {
		name := path.Base(p)
		return strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".crc")
	}
	switch dir {
	case checkpoint.DirOffsets, checkpoint.DirCommits:
		lg := p.cp.Offsets
		if dir == checkpoint.DirCommits {
			lg = p.cp.Commits
		}
		if id, ok := lg.Earliest(); ok {
			paths = append(paths, lg.FilePath(id))
		}
		for _, e := range slices.Concat(lg.Temps, lg.Others, lg.Checksums) {
			if !hideChecksums || !isChecksum(e.Path) {
				paths = append(paths, e.Path)
			}
		}
	default:
		found := false
		for _, e := range p.cp.Root {
			if e.Path == dir && e.IsDir {
				found = true
			}
		}
		if !found {
			return "", nil
		}
		es, err := p.cp.Store.List(p.ctx, dir)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range es {
			if !hideChecksums || !isChecksum(e.Path) {
				paths = append(paths, e.Path)
			}
		}
	}
	first := ""
	for _, e := range paths {
		if first == "" || e < first {
			first = e
		}
	}
	return first, nil
}

// resolveStart finds the offsets the re-run batch starts from.
func (p *planner) resolveStart() error {
	switch p.cfg.mode {
	case ModeSync:
		if p.L == 0 {
			return nil
		}
		prev := p.L - 1
		// get(L-1) opens offsets/<L-1>: a file listed under another
		// spelling ("007") is not found, and get returns None.
		if !p.cp.Offsets.Has(prev) || p.cp.Offsets.FilePath(prev) != p.cp.Offsets.Path(prev) {
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
	default: // Spark 2.1: offsetLog.get(L-1) is optional (None for a file listed as "+6").
		if p.L == 0 || !p.cp.Offsets.Has(p.L-1) || p.cp.Offsets.FilePath(p.L-1) != p.cp.Offsets.Path(p.L-1) {
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
		if err := p.skipped(); err != nil {
			return err
		}
		return p.rerun()
	case C == L:
		// latestCommittedBatchId + 1 on a Scala Long: past 2^63-1 it wraps,
		// in Spark as in Go.
		r.NextBatch = L + 1
		r.key = keyResume
		if L == math.MaxInt64 {
			p.warn("batch %d is the largest id a long holds: Spark's next batch id wraps to %d, so it writes offsets/%d and the log's newest id stays %d", L, r.NextBatch, r.NextBatch, L)
		}
		if p.commit.NextBatchWatermarkMs > r.WatermarkMs {
			r.WatermarkMs = p.commit.NextBatchWatermarkMs
		}
		if err := p.checkCommittedOffsets(); err != nil {
			return err
		}
		if err := p.afterPlan(); err != nil {
			return err
		}
		if L == math.MaxInt64 && p.rel.listsContinuousRange() && !p.rel.atLeast(4, 0) && p.cfg.mode == ModeSync {
			return p.wrappedSpan()
		}
		return nil
	case C == L-1:
		r.key = keyRerun
		return p.rerun()
	case C < L-1:
		p.log("WARN", "Batch completion log latest batch id is %d, which is not trailing batchid %d by one", C, L)
		r.key = keyRerunBehind
		if err := p.skipped(); err != nil {
			return err
		}
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

// skipped finds the batches whose data the restart never processes again:
// the span from the batch after the latest commit (without commits, the
// oldest offsets file: older ids were purged after a commit) to the batch
// the re-run starts from. It is a span, never a list of ids, so ids near
// 2^63 cost nothing. Their records lie between the end offsets of the batch
// before the span and the re-run's start; when the re-run starts at or
// before that point on every source (a repaired checkpoint whose offsets/L-1
// holds the committed offsets), the re-run reads them and nothing is
// skipped.
func (p *planner) skipped() error {
	if p.start == nil {
		return nil // the re-run starts from the initial offsets
	}
	lower := p.C + 1
	if !p.hasC {
		lower, _ = p.cp.Offsets.Earliest()
	}
	upper := p.startID
	if lower > upper {
		return nil
	}
	sk := &Skipped{Span: Span{From: lower, To: upper}, EndBatch: upper}
	sk.MissingOffsets = sk.Count() - uint64(p.cp.Offsets.CountIn(lower, upper))
	if sk.MissingOffsets > 0 && sk.MissingOffsets <= 3 {
		for id := lower; id <= upper && len(sk.missing) < 3; id++ {
			if !p.cp.Offsets.Has(id) {
				sk.missing = append(sk.missing, id)
			}
			if id == upper {
				break // upper may be 2^63-1
			}
		}
	}
	if lower > 0 {
		sk.StartBatch = ptr(lower - 1)
	}
	from, err := p.skippedFrom(lower)
	if err != nil {
		return err
	}
	if from != nil && p.covers(from) {
		return nil
	}
	if from != nil {
		p.skippedRecords(sk, from)
	}
	p.res.Skipped = sk
	return nil
}

// skippedFrom reads the end offsets of batch lower-1, where the skipped
// data starts: offsets/<lower-1>, or the Kafka initial offsets when lower is
// 0. nil when unknown (not on disk, unreadable).
func (p *planner) skippedFrom(lower int64) ([]logformat.SourceOffset, error) {
	if lower == 0 {
		out := make([]logformat.SourceOffset, len(p.start.Sources))
		for i := range out {
			ini, err := p.cp.ReadKafkaInitialOffsets(p.ctx, i)
			if err != nil {
				return nil, nil
			}
			out[i] = logformat.SourceOffset{JSON: ini.Offsets.JSON()}
		}
		return out, nil
	}
	if !p.cp.Offsets.Has(lower - 1) {
		return nil, nil
	}
	seq, err := p.cp.ReadOffsets(p.ctx, lower-1)
	if err != nil {
		return nil, nil // doctor reports the damage; the records are unknown
	}
	return seq.Sources, nil
}

// covers reports whether the re-run's start is at or before from on every
// source: Kafka partition by partition, other sources by equal offsets.
func (p *planner) covers(from []logformat.SourceOffset) bool {
	if len(from) != len(p.start.Sources) {
		return false
	}
	for i, f := range from {
		s := p.start.Sources[i]
		if f.Void && s.Void {
			continue
		}
		fk, err1 := logformat.ParseKafkaOffsets("", f.JSON)
		sk, err2 := logformat.ParseKafkaOffsets("", s.JSON)
		if err1 != nil || err2 != nil {
			if f.JSON != s.JSON {
				return false
			}
			continue
		}
		sm := sk.Map()
		for tp, off := range fk.Map() {
			if st, ok := sm[tp]; !ok || st > off {
				return false
			}
		}
	}
	return true
}

// skippedRecords counts the Kafka records between from and the re-run's
// start, partition by partition.
func (p *planner) skippedRecords(sk *Skipped, from []logformat.SourceOffset) {
	var sum int64
	known := true
	for i, s := range p.start.Sources {
		if i >= len(from) {
			known = false
			break
		}
		sko, err1 := logformat.ParseKafkaOffsets("", s.JSON)
		fko, err2 := logformat.ParseKafkaOffsets("", from[i].JSON)
		if err1 != nil || err2 != nil {
			if err1 == nil || err2 == nil {
				known = false
			}
			continue
		}
		fm := fko.Map()
		sm := sko.Map()
		for _, tp := range sortedTPs(sm, fm) {
			pr := PartitionRange{Source: i, Topic: tp.Topic, Partition: tp.Partition}
			st, inFrom := fm[tp]
			end, inStart := sm[tp]
			if inFrom {
				pr.Start = ptr(st)
			}
			if inStart {
				pr.End = ptr(end)
			}
			switch {
			case !inStart:
				pr.Note = NotePartitionGone
				known = false
			case !inFrom:
				pr.Note = "new partition: from its earliest offset"
				known = false
			case end < st:
				pr.Note = NoteOffsetBackwards
				known = false
			default:
				pr.Records = ptr(end - st)
				sum += end - st
			}
			sk.Kafka = append(sk.Kafka, pr)
		}
	}
	if known && len(sk.Kafka) > 0 {
		sk.Records = ptr(sum)
	}
}

// sortedTPs is the union of the maps' partitions, by topic then partition.
func sortedTPs(a, b map[logformat.TopicPartition]int64) []logformat.TopicPartition {
	tps := make([]logformat.TopicPartition, 0, len(a))
	for tp := range a {
		tps = append(tps, tp)
	}
	for tp := range b {
		if _, ok := a[tp]; !ok {
			tps = append(tps, tp)
		}
	}
	sort.Slice(tps, func(x, y int) bool {
		if tps[x].Topic != tps[y].Topic {
			return tps[x].Topic < tps[y].Topic
		}
		return tps[x].Partition < tps[y].Partition
	})
	return tps
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
				file := p.cp.Offsets.Path(p.startID)
				if p.endOffsetFailed {
					file = p.cp.Offsets.Path(p.L)
				}
				return p.fail(ReasonInvalidSourceOffset, file, *f)
			}
		}
		if err := p.kafkaRange(i, starts[i], hasStart[i], end); err != nil {
			return err
		}
	}
	if err := p.afterPlan(); err != nil {
		return err
	}
	return p.rerunBugs()
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

// wrappedSpan: the batch after 2^63-1 runs (offsets, output, commit: checked with Spark 3.5.7),
// and then, on 3.4 and 3.5, the next listing of offsets/ spans from -2^63 to 2^63-1, which Spark 3.4+ turns into
// an array of every id between them (HDFSMetadataLog.listBatches) and Scala refuses. Sync only:
// the async engine's listings after the wrap were not checked against Spark. 4.0.0 and 4.1.1
// run the batch and end an availableNow query cleanly (scenario max-batch-id-committed).
func (p *planner) wrappedSpan() error {
	p.running = true
	p.warn("after batch %d runs, %s/ holds ids %d to %d: Spark %s lists a log as every id between its oldest and newest file, more than a JVM array holds, so the query stops once the batch is committed",
		p.res.NextBatch, p.cp.Offsets.Dir, p.res.NextBatch, p.L, p.rel)
	return p.fail(ReasonBatchSpanTooLarge, p.cp.Offsets.Dir, sparkFailure{exception: excIllegalArgument, message: "More than Int.MaxValue elements.", exact: true})
}
