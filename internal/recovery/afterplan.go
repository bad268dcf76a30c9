// What does not change the outcome: the file sink verdict and leftovers in the restart's way.

package recovery

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
)

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

// Sink kinds (Options.SinkKind).
const (
	SinkKindFile  = ""      // FileStreamSink: _spark_metadata's latest batch
	SinkKindDelta = "delta" // Delta's DeltaSink: the txn action whose appId is the query id
)

// sinkVerdict compares the sink's latest batch with the restart. FileStreamSink skips a batch
// id at or below its log's latest; DeltaSink skips one at or below the txn version recorded for
// the query (DeltaSink.addBatch: "Skipping already complete epoch"), so one rule serves both.
func (p *planner) sinkVerdict() error {
	if p.cfg.sinkLatest == nil {
		return nil
	}
	s := *p.cfg.sinkLatest
	r := p.res
	v := &SinkVerdict{Latest: s, Kind: p.cfg.sinkKind}
	r.Sink = v
	name, skipLog := "FileStreamSink", func(b int64) string {
		return fmt.Sprintf("INFO FileStreamSink: Skipping already committed batch %d", b)
	}
	if p.cfg.sinkKind == SinkKindDelta {
		name, skipLog = "the Delta sink", func(b int64) string {
			return fmt.Sprintf("INFO DeltaSink: Skipping already complete epoch %d, in query %s", b, p.queryID())
		}
	}
	if r.RerunBatch != nil {
		b := *r.RerunBatch
		switch {
		case s > b:
			v.Status = SinkAhead
			v.Message = fmt.Sprintf("the sink already has batches up to %d: it skips the re-run of batch %d (no duplicates) and also %s, whose new data never reaches the sink", s, b, batchesText(b+1, s))
			r.DriverLog = append(r.DriverLog, skipLog(b))
		case s == b:
			v.Status = SinkSkipsRerun
			v.Message = fmt.Sprintf("the sink already has batch %d: %s skips the re-run, no duplicates", b, name)
			r.DriverLog = append(r.DriverLog, skipLog(b))
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
		switch {
		case s < 0 && p.cfg.sinkKind == SinkKindDelta:
			v.Message = "the Delta table holds no txn for this query, as the query is new"
		case s < 0:
			v.Message = "the sink log is empty, as the query is new"
		default:
			v.Message = fmt.Sprintf("the sink has every committed batch up to %d", s)
		}
	default:
		v.Status = SinkBehind
		v.Message = fmt.Sprintf("the sink lacks %s, which the commit log says finished: no restart writes them again", batchesText(s+1, next-1))
	}
	return nil
}

// queryID is the query id from the metadata file, for log lines; "<query id>" when unreadable.
func (p *planner) queryID() string {
	if m, err := p.cp.ReadMetadata(p.ctx); err == nil && m != nil {
		return m.ID
	}
	return "<query id>"
}
