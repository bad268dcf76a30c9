// Findings for restarts that fail on a log's names and ids (latest-not-readable,
// batch-span-too-large), and the releases that read a commit file.

package doctor

import (
	"fmt"
	"math"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/shell"
)

// latestNotReadable reports the planner's unreadable newest entry of a log.
func (r *runner) latestNotReadable() {
	p := r.res.FailedFile
	dir, name, _ := strings.Cut(p, "/")
	n := logformat.ParseName(name)
	canonical := dir + "/" + fmt.Sprint(n.Batch)
	f := Finding{
		Code: CodeLatestNotReadable, Severity: Error, Path: p, Batch: ptr(n.Batch),
		Message: fmt.Sprintf("%s is the newest entry of %s/ as Spark %s lists it (batch %d), but Spark opens %s, which is not a file it can read",
			p, dir, r.res.SparkVersion, n.Batch, canonical),
		Explanation: "Spark parses every name of the log as a long (\"007\" and \"+7\" are 7) and then opens the canonical name; up to 3.5 it lists directories too. " +
			"Spark never writes such a name: it was copied in, renamed or restored by hand.",
		SparkError: sparkError(r.res, false),
		Fix:        fmt.Sprintf("If %s holds batch %d's content, rename it to %s; otherwise move it out of %s/.", p, n.Batch, canonical, dir),
	}
	if p == canonical { // a directory
		f.Fix = fmt.Sprintf("Move the directory %s out of %s/: Spark 3.5 and older take it for batch %d.", p, dir, n.Batch)
	}
	r.add(f)
}

// batchSpanTooLarge reports the log whose ids Spark cannot list as a range.
func (r *runner) batchSpanTooLarge() {
	log := r.cp.Offsets
	if r.res.FailedFile == checkpoint.DirCommits {
		log = r.cp.Commits
	}
	lo, _ := log.Earliest()
	hi, _ := log.Latest()
	if r.res.NextBatch == math.MinInt64 {
		// The planner's wrap: the batch after 2^63-1 ran, and the listing after it failed.
		r.add(Finding{
			Code: CodeBatchSpanTooLarge, Severity: Error, Path: log.Dir, Batch: ptr(hi),
			Files: []string{log.Path(hi)},
			Message: fmt.Sprintf("batch %d is committed and is the largest id a long holds: the restart runs batch %d, and then Spark %s lists %s/ as every id from %d to %d and stops",
				hi, r.res.NextBatch, r.res.SparkVersion, log.Dir, r.res.NextBatch, hi),
			Explanation: "Spark's next batch id is the latest plus one on a Scala Long, which wraps past 2^63-1; Spark 3.4 and later list a log as every id from its oldest to its newest file, " +
				"and Scala refuses a range of more than Int.MaxValue ids. Ids this large were copied in or renamed by hand; no id inside this checkpoint can follow them.",
			SparkError: sparkError(r.res, false),
			Fix: "Start a new checkpoint where this one stands: the command below prints the startingOffsets of the latest committed batch for the new query " +
				"(a stateless query; state cannot move). Keep this checkpoint until the new query runs.",
			Commands: []string{"ckpt offsets export " + shell.Quote(r.loc)},
		})
		return
	}
	// The widest jump between neighbouring ids is where the outlier starts.
	below := lo
	var jump uint64
	for i := 1; i < len(log.IDs()); i++ {
		if d := uint64(log.IDs()[i] - log.IDs()[i-1]); d > jump {
			jump, below = d, log.IDs()[i-1]
		}
	}
	f := Finding{
		Code: CodeBatchSpanTooLarge, Severity: Error, Path: log.Dir,
		Files: []string{log.Path(lo), log.Path(hi)},
		Message: fmt.Sprintf("%s/ holds batch ids %d to %d, %d ids apart: Spark %s lists every id between them and fails before reading a batch",
			log.Dir, lo, hi, uint64(hi-lo), r.res.SparkVersion),
		Explanation: "Spark 3.4 and later list a log as every id from its oldest to its newest file; Scala refuses a range of more than Int.MaxValue ids. " +
			"Batch ids grow by one, so the outlying file was copied in or renamed by hand.",
		SparkError: sparkError(r.res, false),
		Fix:        "Move the outlying file aside.",
	}
	if below != hi {
		f.Fix = fmt.Sprintf("Move the files above batch %d aside: the command below plans it (offsets and commits above %d go into a backup) and applies it with --execute.", below, below)
		f.Commands = []string{r.cmd("rewind", "--to-batch", fmt.Sprint(below))}
	}
	r.add(f)
}

// readersOf says which releases read a commit file of header v, from recovery.CheckVersion: the
// releases that need spark.sql.streaming.stateStore.checkpointFormatVersion=v (4.0 and 4.1 read
// only the configured version) and the oldest that reads it with the default. It returns the
// text, and the release and setting of the first way, for a doctor command that checks it; ""
// for other logs (readableBy covers them).
func (r *runner) readersOf(p string, v int) (string, string, int) {
	dir, _, _ := strings.Cut(p, "/")
	if dir != checkpoint.DirCommits || v < 1 {
		return "", "", 0
	}
	var withConf []string
	plain := ""
	for _, ver := range recovery.SparkVersions {
		if ver == "2.1" {
			continue // no commit log
		}
		if recovery.CheckVersion(ver, recovery.LogCommits, v, 1) == nil {
			if v > 1 && plain == "" {
				plain = ver
			}
			continue
		}
		// Only v2 has a release that writes it under a setting and reads it only so (4.0, 4.1);
		// v3 (sinkMetadataMap) is 4.2's.
		if v == 2 && recovery.CheckVersion(ver, recovery.LogCommits, v, v) == nil {
			withConf = append(withConf, ver)
		}
	}
	var parts []string
	first, cf := "", 0
	if len(withConf) > 0 {
		parts = append(parts, fmt.Sprintf("Spark %s and spark.sql.streaming.stateStore.checkpointFormatVersion=%d (the setting the checkpoint was written with)", strings.Join(withConf, " or "), v))
		first, cf = withConf[0], v
	}
	if plain != "" {
		parts = append(parts, fmt.Sprintf("Spark %s or later, which reads every commit format up to v%d", plain, logformat.CommitsMaxVersion))
		if first == "" {
			first = plain
		}
	}
	return strings.Join(parts, ", or "), first, cf
}
