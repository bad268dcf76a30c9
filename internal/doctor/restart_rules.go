package doctor

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// plannerFailure reports the failures whose whole story is the planner's: the code is the reason,
// the message the planner's first warning (or its verdict), the fix per reason.
func (r *runner) plannerFailure() {
	res := r.res
	msg := res.Verdict()
	if len(res.Warnings) > 0 {
		msg = res.Warnings[len(res.Warnings)-1]
	}
	f := Finding{Code: res.Reason, Severity: Error, Path: res.FailedFile, Files: []string{}, Message: msg, SparkError: sparkError(res, false)}
	switch res.Reason {
	case recovery.ReasonNotEmptyOnStart:
		f.Explanation = "With no offsets entry Spark starts a new query at batch 0, and from 4.1 it first requires offsets/, state/ and commits/ to be empty."
		f.Fix = fmt.Sprintf("Start afresh in a new checkpoint location, or move the entries of %s/ out; if batches were lost, restore offsets/ from a backup instead.", res.FailedFile)
	case recovery.ReasonBatchPathTaken:
		f.Explanation = "Spark lists log files only, so the directory is not a batch, but writing the next log file finds its path taken, which Spark reports as a concurrent update."
		f.Fix = fmt.Sprintf("Move the directory %s out of the log before restarting.", res.FailedFile)
	case recovery.ReasonSparkBug:
		if b := res.SparkBug; b != nil {
			f.Batch = ptr(b.Batch)
			f.Message = fmt.Sprintf("%s (%s): %s", b.ID, joinVersions(b.Releases), b.Summary)
			f.Explanation = "The checkpoint is sound: the restart fails because of a bug of the Spark release, after batch " + fmt.Sprint(b.Batch) + " ran."
			f.Fix = b.Fix
		}
	case recovery.ReasonKafkaPrefetchMismatch:
		f.Explanation = "Spark 4.0.0 under Trigger.AvailableNow requires each batch's end offsets to cover the topic-partitions it fetched from the broker at start; the re-run's recorded offsets do not."
		f.Fix = "The recorded Kafka range of the re-run is damaged: restore the offsets file from a backup, or rewind the query before it (`ckpt rewind`)."
	}
	r.add(f)
}

func joinVersions(vs []string) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += v
	}
	return s
}
