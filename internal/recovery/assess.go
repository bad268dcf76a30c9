// The combined questions about a restart: the plan, the gap pattern of the logs, and whether
// switching async progress tracking off would break the restart (spark-semantics.md §6.6).

package recovery

import (
	"context"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
)

// Assessment is a restart plan together with what the logs' gaps say about the engine that
// wrote them and what the other engine would do: the one answer doctor, detection and the
// engine read the switch-off trap from.
type Assessment struct {
	// Plan is the restart as asked (Options.Mode).
	Plan *Result
	// Gaps is the gap pattern of offsets/ and commits/.
	Gaps Gaps
	// Sync is the normal engine's restart: Plan itself when Plan is of the sync engine, else a
	// sync plan with the same options; nil when the release has no sync engine (Spark 2.1).
	Sync *Result
	// Trap is set when the sync restart is blocked and the async one is not: the checkpoint
	// only restarts with async progress tracking still on, as after it was switched off
	// without Spark's procedure (§6.6).
	Trap *Trap
}

// Trap is the async switch-off trap: both engines' restarts of the same checkpoint.
type Trap struct {
	// Sync is the normal engine's restart: blocked (Reason says why, usually
	// ReasonMissingPreviousOffsets: offsets/L-1 is missing).
	Sync *Result
	// Async is the async engine's restart: not blocked.
	Async *Result
}

// SyncMissesPrevious reports whether the normal engine's restart fails because offsets/L-1 is
// missing (ReasonMissingPreviousOffsets), whatever the async engine would do.
func (a *Assessment) SyncMissesPrevious() bool {
	return a.Sync != nil && a.Sync.Reason == ReasonMissingPreviousOffsets
}

// Assess plans the restart with o and answers the questions around it: the gap pattern and the
// switch-off trap. A restart that fails only on a bug of the Spark release (Result.Blocked)
// counts as not blocked: the checkpoint is sound for it. Like Plan, it returns an error only
// for options the planner refuses or I/O failures.
func Assess(ctx context.Context, cp *checkpoint.Checkpoint, o Options) (*Assessment, error) {
	res, err := Plan(ctx, cp, o)
	if err != nil {
		return nil, err
	}
	a := &Assessment{Plan: res, Gaps: ClassifyGaps(cp.Offsets.IDs(), cp.Commits.IDs())}
	if res.Mode == ModeSync {
		a.Sync = res
	} else {
		s := o
		s.Mode = ModeSync
		if a.Sync, err = Plan(ctx, cp, s); err != nil {
			a.Sync = nil // no sync engine in this release (Spark 2.1)
		}
	}
	if a.Sync == nil || !a.Sync.Blocked() {
		return a, nil
	}
	async := res
	if res.Mode != ModeAsync {
		s := o
		s.Mode = ModeAsync
		if async, err = Plan(ctx, cp, s); err != nil {
			return a, nil // no async engine in this release (before 3.4)
		}
	}
	if !async.Blocked() {
		a.Trap = &Trap{Sync: a.Sync, Async: async}
	}
	return a, nil
}

// GapKind is the shape of the gaps in offsets/.
type GapKind string

const (
	// GapsNone: offsets/ is contiguous from its oldest file.
	GapsNone GapKind = ""
	// GapsAsync: sparse ids, or commits on the same sparse ids: async progress tracking.
	GapsAsync GapKind = "async"
	// GapsOrphan: one lone latest file after a gap, over a contiguous log with commits.
	GapsOrphan GapKind = "orphan"
	// GapsAmbiguous: one gap below the latest file, too few files or commits to tell.
	GapsAmbiguous GapKind = "ambiguous"
	// GapsHoles: isolated holes in an otherwise contiguous log.
	GapsHoles GapKind = "holes"
)

// MaxGapSpans bounds the missing spans Gaps lists: enough to print.
const MaxGapSpans = 1000

// Gaps classifies the gaps of a checkpoint's logs from their listings alone.
type Gaps struct {
	Kind GapKind
	// Missing are the ids missing between the first and the latest offsets file, as spans,
	// at most MaxGapSpans of them; Count is the number of gaps.
	Missing []Span
	Count   int
	// CommitsOnGaps: two consecutive commits sit on offsets ids with an offsets gap between
	// them, and every commit at or above the oldest offsets file has its offsets file. Async
	// progress tracking commits only batches whose offsets it persisted (§6.2), and the
	// normal engine never leaves such a gap, so this is the evidence that the async engine
	// wrote the logs. Sparse offsets alone (GapsAsync without it) look like async progress
	// tracking but may be damage.
	CommitsOnGaps bool
}

// WrittenByAsync reports whether the logs show async progress tracking's pattern with the
// commits' evidence: the one rule by which a command may take the async engine as its default.
func (g Gaps) WrittenByAsync() bool { return g.Kind == GapsAsync && g.CommitsOnGaps }

// ClassifyGaps classifies the gaps of offsets/ (ascending ids) with the help of commits/.
func ClassifyGaps(offsets, commits []int64) Gaps {
	var g Gaps
	for i := 1; i < len(offsets); i++ {
		if offsets[i] > offsets[i-1]+1 {
			g.Count++
			if len(g.Missing) < MaxGapSpans {
				g.Missing = append(g.Missing, Span{From: offsets[i-1] + 1, To: offsets[i] - 1})
			}
		}
	}
	if g.Count == 0 {
		return g
	}
	has := func(id int64) bool { _, ok := slices.BinarySearch(offsets, id); return ok }
	index := func(id int64) int { i, _ := slices.BinarySearch(offsets, id); return i }
	// Commits on the same sparse ids: two consecutive commits, both on offsets ids, with an
	// offsets gap between them. The normal engine never leaves that.
	straddle := false
	for i := 1; i < len(commits) && !straddle; i++ {
		a, b := commits[i-1], commits[i]
		if b > a+1 && has(a) && has(b) && int64(index(b)-index(a)) < b-a {
			straddle = true
		}
	}
	onOffsets := true
	for _, c := range commits {
		if c >= offsets[0] && !has(c) {
			onOffsets = false
			break
		}
	}
	g.CommitsOnGaps = straddle && onOffsets
	sparse := g.Count >= 2 && 2*g.Count >= len(offsets)-1
	L := offsets[len(offsets)-1]
	belowLatest := !has(L - 1)
	// An orphan needs evidence of a contiguous log below it: at least two consecutive files.
	contiguousBelow := len(offsets) >= 3 && offsets[len(offsets)-2] == offsets[len(offsets)-3]+1
	switch {
	case straddle || sparse:
		g.Kind = GapsAsync
	case g.Count == 1 && belowLatest && len(commits) > 0 && contiguousBelow:
		g.Kind = GapsOrphan
	case g.Count == 1 && belowLatest:
		g.Kind = GapsAmbiguous
	default:
		g.Kind = GapsHoles
	}
	return g
}

// AsyncSwitchOffBatches is how many micro-batches Spark's procedure for switching async
// progress tracking off runs with a checkpoint interval of 0 ("at least two micro-batches",
// Spark's performance tips): every batch is then persisted, so the latest two offsets files are
// consecutive and the normal engine restarts.
const AsyncSwitchOffBatches = 2

// AsyncSwitchOffProcedure is Spark's documented procedure for switching async progress tracking
// off (§6.6), as one sentence to follow "Spark's documented procedure: ".
const AsyncSwitchOffProcedure = "restart with asyncProgressTrackingEnabled=true and asyncProgressTrackingCheckpointIntervalMs=0, " +
	"let it process at least two micro-batches, stop it, then disable async progress tracking"
