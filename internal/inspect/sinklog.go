package inspect

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// SinkLogReport is `ckpt inspect <sink output dir>` (or its _spark_metadata directory).
type SinkLogReport struct {
	Kind      Kind      `json:"kind"` // always "file-sink-log"
	URI       string    `json:"uri"`
	SinkLog   SinkLog   `json:"sinkLog"`
	Leftovers Leftovers `json:"leftovers"`
	Problems  []Problem `json:"problems"`
}

// SinkLog is what a file sink log says; see sinklog.Summary for the rules.
type SinkLog struct {
	Dir string `json:"dir"`
	// Latest is the highest batch id; nil for an empty log.
	Latest  *int64  `json:"latest"`
	Batches []int64 `json:"batches"`
	Ranges  []Range `json:"ranges"`
	Gaps    []Range `json:"gaps"`
	// Compacts are the .compact batch ids.
	Compacts []int64 `json:"compacts"`
	// CompactInterval is the interval Spark would use; CompactIntervalSource is the rule that
	// gave it: "default", "derived" (one compact file) or "latest-two-compacts".
	CompactInterval       int    `json:"compactInterval"`
	CompactIntervalSource string `json:"compactIntervalSource"`
	// ValidBatches are what Spark's allFiles reads; Missing are those without a file (Spark's
	// allFiles then fails).
	// Both are runs, never expanded: a batch id may be 2^63-1.
	ValidBatches []Range `json:"validBatches"`
	Missing      []Range `json:"missing"`
	// Entries counts entries in ValidBatches; Deletes the delete actions among them.
	Entries int64 `json:"entries"`
	Deletes int64 `json:"deletes"`
	// Files and Bytes are the live files and their total size.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// SinkLogSummary inspects the file sink log in dir, streaming its compact file.
func SinkLogSummary(ctx context.Context, store storage.Store, dir string) (*SinkLogReport, error) {
	s, err := sinklog.Summarize(ctx, store, dir)
	if err != nil {
		return nil, err
	}
	r := &SinkLogReport{
		Kind: KindFileSinkLog,
		URI:  store.URI(),
		SinkLog: SinkLog{
			Dir:                   dir,
			Batches:               s.Batches,
			Ranges:                Ranges(s.Batches),
			Compacts:              s.Compacts,
			CompactInterval:       s.CompactInterval,
			CompactIntervalSource: s.IntervalSource,
			ValidBatches:          []Range{},
			Missing:               []Range{},
			Entries:               s.Entries,
			Deletes:               s.Deletes,
			Files:                 s.Files,
			Bytes:                 s.Bytes,
		},
		Leftovers: Leftovers{Temps: []Leftover{}, OrphanCRCs: []Leftover{}},
		Problems:  []Problem{},
	}
	r.SinkLog.Gaps = Gaps(r.SinkLog.Ranges)
	if s.HasLatest {
		r.SinkLog.Latest = ptr(s.Latest)
		if sp, ok := sinklog.ValidBatches(s.Latest, s.CompactInterval); ok {
			r.SinkLog.ValidBatches = append(r.SinkLog.ValidBatches, Range{sp.First, sp.Last})
		}
	}
	for _, m := range s.Missing {
		r.SinkLog.Missing = append(r.SinkLog.Missing, Range{m.First, m.Last})
	}
	for _, e := range s.Temps {
		r.Leftovers.Temps = append(r.Leftovers.Temps, Leftover{Path: e.Path, Size: e.Size})
	}
	for _, e := range s.OrphanCRCs {
		r.Leftovers.OrphanCRCs = append(r.Leftovers.OrphanCRCs, Leftover{Path: e.Path, Size: e.Size})
	}
	for _, err := range s.Errors {
		if p := asProblem(err); p != nil {
			r.Problems = append(r.Problems, *p)
		}
	}
	return r, nil
}
