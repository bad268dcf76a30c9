// Checks on gaps in offsets/ and what an async restart replays.

package doctor

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// gapInfo is the planner's gap classification with the listings to describe it by.
type gapInfo struct {
	recovery.Gaps
	cp *checkpoint.Checkpoint
}

func (r *runner) gapInfo() gapInfo { return gapInfo{Gaps: r.assess.Gaps, cp: r.cp} }

// shape describes the gap pattern in one clause.
func (g gapInfo) shape() string {
	off, cs := g.cp.Offsets.IDs(), g.cp.Commits.IDs()
	switch g.Kind {
	case recovery.GapsAsync:
		c := "no commits"
		if len(cs) > 0 {
			c = "commits " + ids(cs)
		}
		return fmt.Sprintf("the gaps look like async progress tracking (offsets %s, %s)", ids(off), c)
	case recovery.GapsOrphan:
		L := off[len(off)-1]
		return fmt.Sprintf("offsets/%d looks like a single orphan after a gap (offsets %s, commits %s)", L, ids(off), ids(cs))
	case recovery.GapsAmbiguous:
		c := "no commits"
		if len(cs) > 0 {
			c = "commits " + ids(cs)
		}
		return fmt.Sprintf("offsets skip %s; too few files to tell async progress tracking from an orphan file (offsets %s, %s)", spans(g.Missing, g.Count), ids(off), c)
	case recovery.GapsHoles:
		return fmt.Sprintf("offsets skip %s", spans(g.Missing, g.Count))
	}
	if len(off) > 0 {
		return fmt.Sprintf("offsets/%d is the oldest offsets file on disk (offsets %s): the files before it were purged or deleted", off[0], ids(off))
	}
	return "offsets/ is empty"
}

// gaps reports gap patterns the planner does not fail on.
func (r *runner) gaps() {
	g := r.gapInfo()
	if g.Kind == recovery.GapsNone || r.res.Reason == recovery.ReasonBatchSpanTooLarge {
		return // batch-span-too-large names the outlier
	}
	L := r.L
	prevMissing := r.assess.SyncMissesPrevious()
	async := r.res.Mode == recovery.ModeAsync
	if prevMissing && r.reported[r.cp.Offsets.Path(L-1)] {
		return // missing-previous-offsets says it all
	}
	if g.Kind == recovery.GapsHoles && !async {
		r.add(Finding{
			Code: CodeRetentionAnomaly, Severity: Warning, Path: checkpoint.DirOffsets,
			Message: fmt.Sprintf("offsets/ skips %s in the middle of the log: files were deleted by hand or by a lifecycle rule", spans(g.Missing, g.Count)),
			Explanation: "Spark deletes offsets only from the oldest end (purge), so holes in the middle were made by something else. A restart " +
				"reads only the latest two files, but a rollback or replay across a hole fails.",
			Fix: "Nothing blocks the restart. Find what deletes files (a lifecycle rule, a cleanup script).",
		})
		return
	}
	f := Finding{Code: CodeAsyncProgressGaps, Path: checkpoint.DirOffsets, Fix: "Before switching async progress tracking off, follow Spark's documented procedure: " +
		recovery.AsyncSwitchOffProcedure + "."}
	if prevMissing {
		f.Severity = Warning
		f.Batch = ptr(L - 1)
		f.Path = r.cp.Offsets.Path(L - 1)
		f.Files = []string{r.cp.Offsets.Path(L)}
		f.Message = fmt.Sprintf("%s; offsets/%d is missing, so a restart without async progress tracking fails with \"batch %d doesn't exist\"", g.shape(), L-1, L-1)
		f.Explanation = "The async engine restarts from the nearest lower offsets file and is fine with gaps. The normal engine requires offsets/L-1, " +
			"so switching async progress tracking off now makes the next restart fail (missing-previous-offsets)."
		f.SparkError = sparkError(r.assess.Sync, false) // the normal engine's "batch L-1 doesn't exist"
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

// spans renders gaps as "4, 8..1007"; n is the number of gaps, more than listed when capped.
func spans(ss []recovery.Span, n int) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	out := strings.Join(parts, ", ")
	if n > len(ss) {
		out += fmt.Sprintf(" and %d more gaps", n-len(ss))
	}
	return out
}
