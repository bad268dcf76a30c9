// Spark bugs of particular releases that stop a restart the checkpoint would allow.

package recovery

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// SparkBug is a bug of the Spark release that makes the restart fail although the checkpoint
// is sound (Result.SparkBug, with Reason ReasonSparkBug). It says what was done before the
// failure, so that nobody repairs a checkpoint that needs no repair.
type SparkBug struct {
	// ID is the Spark issue, "SPARK-55271".
	ID string `json:"id"`
	// Releases are the releases that have the bug, "4.1.0", "4.1.1".
	Releases []string `json:"releases"`
	// Summary says what goes wrong.
	Summary string `json:"summary"`
	// Batch is the batch that ran before the failure.
	Batch int64 `json:"batch"`
	// OutputWritten: the batch's output reached the sink before the failure (or the sink
	// already had it and skipped it, Result.Sink).
	OutputWritten bool `json:"outputWritten"`
	// CommitWritten: the batch's commit file was written before the failure (sync engine);
	// false when it may not be (async progress tracking writes it in the background).
	CommitWritten bool `json:"commitWritten"`
	// Fix says what makes the restart succeed.
	Fix string `json:"fix"`
}

// spark55271 is the NullPointerException of SPARK-55271, as the JVM words it.
const spark55271 = `Cannot invoke "scala.collection.IterableOps.map(scala.Function1)" because the return value of "scala.Option.get()" is null`

// rerunBugs applies the bugs that strike after the re-run batch ran (kafkaMetricsNPE).
func (p *planner) rerunBugs() error {
	if !p.cfg.kafkaMetricsNPE() || !p.rerunReadsKafka() {
		if p.cfg.rel == mkRelease(4, 1) && p.cfg.patch > newestPatch[p.cfg.rel] && p.rerunReadsKafka() {
			p.warn("ckpt models Spark 4.1 up to 4.1.%d; %s is predicted without SPARK-55271 (a re-run of a Kafka batch failing in progress reporting), which is fixed after 4.1.1: this was not checked against %s",
				newestPatch[p.cfg.rel], p.cfg.exact(), p.cfg.exact())
		}
		return nil
	}
	if p.cfg.mode == ModeSync && p.cp.Commits.Has(p.L) {
		return nil // the re-run's commit meets commits/L first (decide: commits ahead)
	}
	L := p.L
	bug := &SparkBug{
		ID:            "SPARK-55271",
		Releases:      []string{"4.1.0", "4.1.1"},
		Batch:         L,
		OutputWritten: true,
		CommitWritten: p.cfg.mode == ModeSync,
		Summary: fmt.Sprintf("a bug of Spark %s, not of the checkpoint: the restart re-runs batch %d, writes its output and its commit, and then fails in progress reporting "+
			"(KafkaMicroBatchStream.metrics reads the latest Kafka offsets, which only a new batch fetches)", p.cfg.exact(), L),
		Fix: fmt.Sprintf("upgrade Spark past 4.1.1 (SPARK-55271 is fixed after it), or simply restart again: batch %d is committed, so the next restart "+
			"resumes at batch %d with a new batch, which does not hit the bug; do not repair the checkpoint", L, L+1),
	}
	if p.cfg.mode == ModeAsync {
		bug.Summary = fmt.Sprintf("a bug of Spark %s, not of the checkpoint: the restart re-runs batch %d and writes its output, and then fails in progress reporting "+
			"(KafkaMicroBatchStream.metrics reads the latest Kafka offsets, which only a new batch fetches); asynchronous progress tracking may not have written the batch's commit yet", p.cfg.exact(), L)
		bug.Fix = fmt.Sprintf("upgrade Spark past 4.1.1 (SPARK-55271 is fixed after it); restarting again re-runs batch %d once more unless its commit was written, and hits the bug again each time the first batch is a re-run", L)
	}
	if sk := p.res.Sink; sk != nil && (sk.Status == SinkSkipsRerun || sk.Status == SinkAhead) {
		bug.Summary = fmt.Sprintf("a bug of Spark %s, not of the checkpoint: the restart re-runs batch %d (the sink already has it and skips it), writes its commit, and then fails in progress reporting "+
			"(KafkaMicroBatchStream.metrics reads the latest Kafka offsets, which only a new batch fetches)", p.cfg.exact(), L)
		if p.cfg.mode == ModeAsync {
			bug.Summary = fmt.Sprintf("a bug of Spark %s, not of the checkpoint: the restart re-runs batch %d (the sink already has it and skips it), and then fails in progress reporting; asynchronous progress tracking may not have written the batch's commit yet", p.cfg.exact(), L)
		}
	}
	if !p.cfg.patchGiven {
		p.warn("Spark %s is predicted as %s, the newest 4.1 release ckpt models; give --spark-version 4.1.N for another patch release", p.rel, p.cfg.exact())
	}
	p.res.SparkBug = bug
	return p.fail(ReasonSparkBug, p.cp.Offsets.Path(L), sparkFailure{exception: excNPE, message: spark55271, exact: true})
}

const excNPE = "java.lang.NullPointerException"

// rerunReadsKafka reports whether a source of the re-run batch is a Kafka source with an end
// offset (a KafkaMicroBatchStream that reports metrics for the batch).
func (p *planner) rerunReadsKafka() bool {
	if p.res.RerunBatch == nil || p.latest == nil {
		return false
	}
	for _, s := range p.latest.Sources {
		if s.Void {
			continue
		}
		if _, err := logformat.ParseKafkaOffsets("", s.JSON); err == nil {
			return true
		}
	}
	return false
}
