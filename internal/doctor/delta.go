package doctor

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/shell"
)

// delta reports what the planner found on the query's Delta source tables (Options.Delta):
// delta-table-replaced and delta-versions-expired, one finding per table. The planner decided
// (recovery.Plan with Options.Delta); this only names it, with the fix.
func (r *runner) delta() {
	for i := range r.res.Delta {
		v := r.res.Delta[i]
		if v.Status != CodeDeltaTableReplaced && v.Status != CodeDeltaVersionsExpired {
			continue
		}
		f := Finding{
			Code:       v.Status,
			Severity:   Error,
			Path:       "delta:" + v.Location,
			Message:    fmt.Sprintf("Delta source %d: %s", v.Source, v.Message),
			SparkError: ptr(deltaSparkError(v)),
			Delta:      &v,
		}
		if v.OffsetFile != "" {
			f.Files = []string{v.OffsetFile}
		}
		if v.Status == CodeDeltaTableReplaced {
			f.Fix = "If the table was recreated on purpose, the checkpoint's Delta offsets mean nothing for the new table: start the query on a new " +
				"checkpoint (it reads the new table from its latest snapshot, or from startingVersion), with a new sink location or a sink that tolerates " +
				"the replay. If the query should read the old table, point it (and --delta-table) back at it."
		} else {
			f.Fix = fmt.Sprintf("The versions the query has not read are gone from the table's log (log cleanup after delta.logRetentionDuration). "+
				"Start the query on a new checkpoint with startingVersion %d (the earliest version the log holds) to read on from there, or restart once "+
				"with the source option failOnDataLoss=false and accept the skipped versions. Keep delta.logRetentionDuration above the longest time the query "+
				"can be stopped or behind (the command below shows how far behind it is).", v.EarliestCommit)
			f.Commands = []string{r.cmd("lag", "--delta-table", shell.Quote(fmt.Sprintf("%d=%s", v.Source, v.Location)))}
		}
		r.add(f)
	}
}

// deltaSparkError is the exception delta-spark stops the query with (both codes: the class
// Spark 3.5 with delta-spark 3.3 printed for the fixtures).
func deltaSparkError(v recovery.DeltaVerdict) string {
	return recovery.DeltaException + ": " + v.SparkError
}
