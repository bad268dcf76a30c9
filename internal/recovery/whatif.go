package recovery

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// What-if points: where in the next batch the query dies.
const (
	// CrashAfterOffsets: offsets/N is written, the batch has not run.
	CrashAfterOffsets = "crash-after-offsets"
	// CrashBeforeCommit: the batch ran and the sink wrote it (a file sink's
	// _spark_metadata/N exists), but commits/N is not written.
	CrashBeforeCommit = "crash-before-commit"
	// CrashAfterCommit: commits/N is written; the next batch has not started.
	CrashAfterCommit = "crash-after-commit"
)

// WhatIfPoints lists the points WhatIf accepts.
var WhatIfPoints = []string{CrashAfterOffsets, CrashBeforeCommit, CrashAfterCommit}

// NextBatch describes the hypothetical next batch for WhatIf.
type NextBatch struct {
	// Offsets are its end offsets, raw JSON per source in offsets-file
	// order. Nil means unknown: Spark records the latest offsets available
	// when it plans the batch, so the what-if reports the end as null.
	Offsets []string
	// TimestampMs is its batch timestamp; nil keeps the latest offsets
	// file's (only the clock at planning time knows the real one).
	TimestampMs *int64
}

// WhatIf predicts the restart after the query dies at point during the
// batch a restart now would run next (L+1, or the re-run batch). It builds
// a virtual checkpoint (the real store plus the files the batch would have
// written, in an overlay) and calls Plan on it, so it follows exactly the
// rules Plan follows.
func WhatIf(ctx context.Context, cp *checkpoint.Checkpoint, opts Options, point string, next NextBatch) (*Result, error) {
	switch point {
	case CrashAfterOffsets, CrashBeforeCommit, CrashAfterCommit:
	default:
		return nil, fmt.Errorf("unknown what-if point %q: want %s, %s or %s", point, CrashAfterOffsets, CrashBeforeCommit, CrashAfterCommit)
	}
	// The broker is checked once, against the restart after the crash (or, when the query never
	// gets there, the restart as it is now).
	broker, failOnDataLoss := opts.Broker, !opts.FailOnDataLossFalse
	opts.Broker = nil
	base, err := Plan(ctx, cp, opts)
	if err != nil {
		return nil, err
	}
	if base.Failed() {
		base.Warnings = append([]string{fmt.Sprintf("what-if %s: the restart fails before the next batch completes, so the query never reaches that point; this is the restart as it is now", point)}, base.Warnings...)
		return base, assessBroker(ctx, cp, broker, failOnDataLoss, base)
	}
	n := base.NextBatch
	files := map[string][]byte{}
	unknownEnd := false
	if base.RerunBatch == nil {
		// A new batch: Spark writes offsets/n before running it.
		seq, unknown, err := nextOffsets(ctx, cp, base, next)
		if err != nil {
			return nil, err
		}
		unknownEnd = unknown
		files[cp.Offsets.Path(n)] = seq.Marshal()
	} else if next.Offsets != nil {
		return nil, errors.New("the next batch re-runs offsets already in the log: its end offsets cannot be given")
	}
	opts2 := opts
	if point != CrashAfterOffsets && opts.SinkLatest != nil && *opts.SinkLatest < n {
		// The sink's addBatch finished before the crash.
		opts2.SinkLatest = ptr(n)
	}
	if point == CrashAfterCommit {
		data, err := nextCommit(ctx, cp, base, opts)
		if err != nil {
			return nil, err
		}
		files[cp.Commits.Path(n)] = data
	}
	vcp, err := checkpoint.Load(ctx, cp.Overlay(files)) // cp's listings and reads, no second load of the store
	if err != nil {
		return nil, err
	}
	res, err := Plan(ctx, vcp, opts2)
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("what-if: the query dies at %s of batch %d", point, n)
	if base.Mode == ModeSpark21 && point == CrashAfterCommit {
		note += "; Spark 2.1 has no commit log, so the batch re-runs anyway"
	}
	res.Warnings = append([]string{note}, res.Warnings...)
	if unknownEnd && res.RerunBatch != nil && *res.RerunBatch == n {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the end offsets of batch %d are the latest available when Spark plans it; ckpt cannot know them, so they are shown as null", n))
		for i := range res.RerunRange.End {
			res.RerunRange.End[i] = jsonNull
		}
		for i := range res.Kafka {
			res.Kafka[i].End, res.Kafka[i].Records = nil, nil
			res.Kafka[i].Note = "end: latest offset when the batch is planned"
		}
	}
	return res, assessBroker(ctx, vcp, broker, failOnDataLoss, res)
}

// nextOffsets builds the offsets file Spark would write for new batch n.
func nextOffsets(ctx context.Context, cp *checkpoint.Checkpoint, base *Result, next NextBatch) (*logformat.OffsetSeq, bool, error) {
	seq := &logformat.OffsetSeq{Version: 1, Metadata: &logformat.OffsetMetadata{}}
	if base.LatestOffsets != nil {
		latest, err := cp.ReadOffsets(ctx, *base.LatestOffsets)
		if err != nil {
			return nil, false, err
		}
		seq.Version = latest.Version
		if latest.Metadata != nil {
			md := *latest.Metadata
			seq.Metadata = &md
		}
		seq.Sources = append([]logformat.SourceOffset(nil), latest.Sources...)
	}
	seq.Metadata.BatchWatermarkMs = base.WatermarkMs
	if next.TimestampMs != nil {
		seq.Metadata.BatchTimestampMs = *next.TimestampMs
	}
	if next.Offsets == nil {
		return seq, true, nil
	}
	if base.LatestOffsets != nil && len(next.Offsets) != len(seq.Sources) {
		return nil, false, fmt.Errorf("the next batch has %d source offsets but offsets/%d lists %d sources", len(next.Offsets), *base.LatestOffsets, len(seq.Sources))
	}
	srcs := make([]logformat.SourceOffset, len(next.Offsets))
	for i, o := range next.Offsets {
		srcs[i] = logformat.SourceOffset{JSON: o, Void: o == logformat.SerializedVoidOffset}
		if srcs[i].Void {
			srcs[i].JSON = ""
		}
		if seq.Version >= 2 && i < len(seq.Sources) {
			srcs[i].SourceID = seq.Sources[i].SourceID
		}
	}
	seq.Sources = srcs
	return seq, false, nil
}

// nextCommit builds commits/n as Spark writes it after batch n: the latest
// commit's format with the batch's watermark.
func nextCommit(ctx context.Context, cp *checkpoint.Checkpoint, base *Result, opts Options) ([]byte, error) {
	c := &logformat.Commit{Version: 1}
	if opts.CommitFormatVersion > 1 {
		c.Version = opts.CommitFormatVersion
	}
	if base.LatestCommit != nil {
		latest, err := cp.ReadCommit(ctx, *base.LatestCommit)
		if err == nil {
			cc := *latest
			c = &cc
			c.IgnoredLines, c.TrailingNewline = nil, false
		}
	}
	c.NextBatchWatermarkMs, c.HasNextBatchWatermark, c.HeaderOnly = base.WatermarkMs, true, false
	return c.Marshal(), nil
}
