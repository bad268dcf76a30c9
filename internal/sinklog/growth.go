package sinklog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Growth is what `ckpt sink size` reports: how the log grows and what would bound it.
type Growth struct {
	Latest          int64  `json:"latest"`
	CompactInterval int    `json:"compactInterval"`
	IntervalSource  string `json:"compactIntervalSource"`
	// Compacts are the compaction files on disk, oldest first.
	Compacts []CompactSize `json:"compacts"`
	// Deltas count the plain batch files on disk and their bytes.
	Deltas     int   `json:"deltas"`
	DeltaBytes int64 `json:"deltaBytes"`
	// LogBytes is every log file's size together.
	LogBytes int64 `json:"logBytes"`
	// BytesPerBatch is the latest compaction file's growth per batch since the one before it
	// (0 with fewer than two compactions); EntriesPerBatch likewise.
	BytesPerBatch   float64 `json:"bytesPerBatch"`
	EntriesPerBatch float64 `json:"entriesPerBatch"`
	// OldestEntry is the modificationTime of the oldest live entry of the latest compaction
	// (nil without one): how far back the log reaches.
	OldestEntry *time.Time `json:"oldestEntry"`
	// Settings are the Spark settings that govern the log, with what each bounds.
	Settings []Setting `json:"settings"`
}

// CompactSize is one compaction file.
type CompactSize struct {
	Batch    int64     `json:"batch"`
	Path     string    `json:"path"`
	Bytes    int64     `json:"bytes"`
	Entries  int64     `json:"entries"`
	Modified time.Time `json:"modified"`
	// Error is set when the file does not parse; Entries then counts those read before it.
	Error string `json:"error,omitempty"`
}

// Setting is one Spark setting and what it does to the log.
type Setting struct {
	Key     string `json:"key"`
	Default string `json:"default"`
	Effect  string `json:"effect"`
}

// Settings lists the settings of a file sink's log (spark-semantics §8): only the sink's
// retention option bounds the compaction files; the others bound the number of files.
var Settings = []Setting{
	{Key: "retention (file sink option, Spark 3.1+)", Default: "none",
		Effect: "drops entries older than the given time from each new compaction file: the only bound on the compaction file's size (and on readers' listing time)"},
	{Key: "spark.sql.streaming.fileSink.log.compactInterval", Default: "10",
		Effect: "how often a compaction file is written: a larger interval means fewer, not smaller, compaction files"},
	{Key: "spark.sql.streaming.fileSink.log.deletion", Default: "true",
		Effect: "deletes log files older than the compaction before the newest minBatchesToRetain batches: bounds the number of files, not their size"},
	{Key: "spark.sql.streaming.fileSink.log.cleanupDelay", Default: "10m",
		Effect: "how long an expired log file is kept before deletion, for readers still using it"},
	{Key: "spark.sql.streaming.minBatchesToRetain", Default: "100",
		Effect: "the batches whose log files deletion keeps"},
}

// MeasureGrowth reads every compaction file of the log in store (the output directory) and
// lists the sizes of the others.
func MeasureGrowth(ctx context.Context, store storage.Store) (*Growth, error) {
	entries, err := store.List(ctx, Dir)
	if err != nil {
		return nil, err
	}
	l, err := list(ctx, store, Dir)
	if err != nil {
		return nil, err
	}
	g := &Growth{Latest: -1, Compacts: []CompactSize{}, Settings: Settings}
	g.CompactInterval, g.IntervalSource = CompactInterval(l.compacts, DefaultCompactInterval)
	if len(l.batches) > 0 {
		g.Latest = l.batches[len(l.batches)-1]
	}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		n := logformat.ParseName(baseName(e.Path))
		switch n.Kind {
		case logformat.NameCompact:
			g.LogBytes += e.Size
			c := CompactSize{Batch: n.Batch, Path: e.Path, Bytes: e.Size, Modified: e.ModTime}
			var oldest int64 = -1
			err := stream(ctx, store, e.Path, func(s *logformat.SinkFileStatus) {
				c.Entries++
				if oldest < 0 || s.ModificationTime < oldest {
					oldest = s.ModificationTime
				}
			})
			if err != nil {
				if !isFormatError(err) {
					return nil, err
				}
				c.Error = err.Error()
			}
			if oldest >= 0 && n.Batch == l.compacts[len(l.compacts)-1] {
				t := time.UnixMilli(oldest).UTC()
				g.OldestEntry = &t
			}
			g.Compacts = append(g.Compacts, c)
		case logformat.NameBatch:
			g.LogBytes += e.Size
			g.Deltas++
			g.DeltaBytes += e.Size
		}
	}
	sortCompacts(g.Compacts)
	if n := len(g.Compacts); n >= 2 {
		a, b := g.Compacts[n-2], g.Compacts[n-1]
		if d := float64(b.Batch - a.Batch); d > 0 {
			g.BytesPerBatch = float64(b.Bytes-a.Bytes) / d
			g.EntriesPerBatch = float64(b.Entries-a.Entries) / d
		}
	}
	return g, nil
}

func sortCompacts(cs []CompactSize) {
	slices.SortFunc(cs, func(a, b CompactSize) int { return cmp.Compare(a.Batch, b.Batch) })
}

// Projection says how big the latest compaction file will be after n more batches at the
// current growth, in one sentence; "" without a growth figure.
func (g *Growth) Projection(n int64) string {
	if len(g.Compacts) < 2 || g.BytesPerBatch <= 0 {
		return ""
	}
	last := g.Compacts[len(g.Compacts)-1]
	return fmt.Sprintf("at %.0f bytes per batch, the compaction file reaches %d bytes after %d more batches",
		g.BytesPerBatch, last.Bytes+int64(g.BytesPerBatch*float64(n)), n)
}

// LastWrite is the newest file of the log in store (the output directory), by modification
// time: a query writing the sink now shows there first. ok is false for an empty log.
func LastWrite(ctx context.Context, store storage.Store) (e storage.Entry, ok bool, err error) {
	es, err := store.List(ctx, Dir)
	if err != nil {
		return e, false, err
	}
	for _, x := range es {
		if !x.IsDir && (!ok || x.ModTime.After(e.ModTime)) {
			e, ok = x, true
		}
	}
	return e, ok, nil
}
