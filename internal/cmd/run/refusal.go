package run

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/engine"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// refusalText renders a start the engine refused: Spark's error, and the commands that help;
// for the switch-off trap, its cause and the ways out.
func refusalText(e *engine.RefusedError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Spark would refuse to restart this checkpoint, so ckpt does too:\n  %s\n", indentedError(e.Plan))
	t := e.Trap
	if t == nil {
		fmt.Fprintf(&b, "Diagnose with:  ckpt doctor %s\nRepair with:    ckpt repair %s", e.Checkpoint, e.Checkpoint)
		return b.String()
	}
	resumes := strings.TrimPrefix(strings.TrimSuffix(t.Async.Verdict(), "."), "Restart ")
	if l := t.Sync.LatestOffsets; t.Sync.Reason == recovery.ReasonMissingPreviousOffsets && l != nil {
		fmt.Fprintf(&b, "Cause: the checkpoint was written with async progress tracking (offsets %s, commits %s), which persists only some batches; "+
			"the normal engine needs offsets/%d to restart from batch %d. With async progress tracking the restart %s. Nothing was written.\n",
			idList(e.Offsets), idList(e.Commits), *l-1, *l, resumes)
	} else {
		fmt.Fprintf(&b, "Cause: the normal engine's restart fails (%s) where async progress tracking's %s. Nothing was written.\n", t.Sync.Reason, resumes)
	}
	fmt.Fprintf(&b, "Ways out:\n")
	if e.NoSwitchOff == "" {
		fmt.Fprintf(&b, "  - run the same command with --async-switch-off: ckpt runs the query with async progress tracking and an interval of 0 until %d batches have persisted their offsets and commits (Spark's documented procedure), then continues without it\n", recovery.AsyncSwitchOffBatches)
	} else {
		fmt.Fprintf(&b, "  - --async-switch-off (Spark's documented procedure, done by ckpt) needs a query that may use async progress tracking, and %s: run it once with a processing-time trigger\n", e.NoSwitchOff)
	}
	// The strategy is repair's to recommend: it plans every one and says which it would apply.
	fmt.Fprintf(&b, "  - or repair the checkpoint, then run again: ckpt repair %s (it shows the plan it recommends and the replay it causes; add --execute to apply it)\n", e.Checkpoint)
	fmt.Fprintf(&b, "  - or keep async progress tracking: --sink-option %s=true\n", "asyncProgressTrackingEnabled")
	fmt.Fprintf(&b, "Diagnose with:  ckpt doctor %s", e.Checkpoint)
	return b.String()
}

// indentedError is Spark's exception and message, continuation lines indented.
func indentedError(r *recovery.Result) string {
	msg := r.ErrorText()
	if r.Exception != "" {
		msg = r.Exception + ": " + msg
	}
	return strings.ReplaceAll(msg, "\n", "\n  ")
}

func idList(ids []int64) string {
	if len(ids) == 0 {
		return "none"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}
