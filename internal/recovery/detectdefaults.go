package recovery

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
)

// DetectDefaults fills the restart options the flags left unset (--mode, --spark-version,
// --commit-format-version: zero values) with what the checkpoint shows (Detect), and returns
// the detections it used, nil when it used none. A flag always wins: what it sets is neither
// detected nor reported. A detection that agrees with the default (Spark 3.5 for a 3.5-era
// checkpoint) changes nothing and is not reported either, so the header speaks only when the
// checkpoint moved a default.
func DetectDefaults(ctx context.Context, cp *checkpoint.Checkpoint, mode *Mode, sparkVersion *string, commitFormatVersion *int) *Detection {
	if *mode != "" && *sparkVersion != "" && *commitFormatVersion != 0 {
		return nil
	}
	d := Detect(ctx, cp)
	sparkFlag := *sparkVersion != ""
	switch {
	case sparkFlag || d.SparkMin == "" || (d.SparkVersion == DefaultSparkVersion && d.SparkMax == ""):
		// Given, unknown, or a checkpoint of the default release or newer: nothing to say.
		d.SparkVersion, d.SparkReason, d.SparkMin, d.SparkMax = "", "", "", ""
	case d.SparkVersion == DefaultSparkVersion:
		d.SparkVersion = "" // an older writer: said, the default stands
		if !detectLess(d.SparkMax, DefaultSparkVersion) {
			d.SparkReason, d.SparkMin, d.SparkMax = "", "", ""
		}
	default:
		*sparkVersion = d.SparkVersion
	}
	if sparkFlag || *commitFormatVersion != 0 || d.CommitFormatVersion == 0 {
		d.CommitFormatVersion, d.CommitReason = 0, ""
	} else {
		*commitFormatVersion = d.CommitFormatVersion
	}
	switch {
	case *mode != "" || d.Mode == "":
		d.Mode, d.ModeReason = "", ""
	case detectInSwitchOffTrap(ctx, cp, *sparkVersion, *commitFormatVersion):
		// The files show async progress tracking's gaps, not whether it is still on: when only
		// the sync restart fails, predicting the async one could call a query that will not
		// start healthy. The failure stays the verdict; the header says what async would do.
		d.AsyncNotApplied = d.ModeReason + "; a sync restart fails where an async one would not, so if async progress tracking is still on, pass --mode async"
		d.Mode, d.ModeReason = "", ""
	default:
		*mode = d.Mode
	}
	if d.Empty() {
		return nil
	}
	return d
}

// detectInSwitchOffTrap asks the planner whether the checkpoint is in the switch-off trap: the sync
// restart is blocked where the async one is not (Assessment.Trap).
func detectInSwitchOffTrap(ctx context.Context, cp *checkpoint.Checkpoint, sparkVersion string, commitFormatVersion int) bool {
	a, err := Assess(ctx, cp, Options{Mode: ModeSync, SparkVersion: sparkVersion, CommitFormatVersion: commitFormatVersion})
	return err == nil && a.Trap != nil
}
