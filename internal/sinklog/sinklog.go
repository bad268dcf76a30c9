// Package sinklog reads a file sink's `_spark_metadata` log (Spark's FileStreamSinkLog, a
// CompactibleFileStreamLog) the way Spark does: which batch is the latest, which compact interval
// Spark will use, and which files the log says are live (Spark's allFiles).
//
// Compact files can hold millions of entries, so entries are streamed and never kept: the only
// per-entry state is the set of paths named by "delete" actions, which are rare (a file sink
// writes "add" entries), so memory stays flat however large the log is.
package sinklog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// DefaultCompactInterval is spark.sql.streaming.fileSink.log.compactInterval's default. Spark
// uses it only when the log has no .compact file yet (§8.1).
const DefaultCompactInterval = 10

// Actions in a sink log entry.
const (
	ActionAdd    = "add"
	ActionDelete = "delete"
)

// Interval sources: how CompactInterval arrived at its answer, in Spark's three cases.
const (
	IntervalDefault = "default"             // no .compact file: the configured default
	IntervalDerived = "derived"             // one .compact file: deriveCompactInterval
	IntervalLatest2 = "latest-two-compacts" // two or more: the difference of the two latest
)

// Summary is what a sink log says, without its entries.
type Summary struct {
	// Dir is the log directory relative to the store root ("_spark_metadata", or "" when the
	// store root is the log itself).
	Dir string `json:"dir"`
	// Batches are the batch ids on disk, ascending, plain and compact alike.
	Batches []int64 `json:"batches"`
	// Compacts are the ids of the .compact files, ascending.
	Compacts []int64 `json:"compacts"`
	// Latest is the highest batch id (Spark's getLatestBatchId); HasLatest is false for an
	// empty log.
	Latest    int64 `json:"latest"`
	HasLatest bool  `json:"-"`
	// CompactInterval is the interval Spark would use for this log, and IntervalSource which of
	// Spark's rules gave it.
	CompactInterval int    `json:"compactInterval"`
	IntervalSource  string `json:"compactIntervalSource"`
	// Valid are the batches allFiles reads: the latest compact file at or below Latest and
	// every batch after it (zero for an empty log).
	Valid Span `json:"validBatches"`
	// Missing are the runs of valid batches with no file, ascending. Spark's allFiles fails on
	// the first of them. Runs, not ids: a file named 9223372036854775807 makes every batch
	// from 0 on valid, and there are at most one more runs than files.
	Missing []Span `json:"missing"`
	// Entries counts every entry read from ValidBatches, adds and deletes.
	Entries int64 `json:"entries"`
	// Deletes counts "delete" entries among them.
	Deletes int64 `json:"deletes"`
	// Files and Bytes cover the live files: adds whose path no delete names, as Spark's
	// FileStreamSinkLog.compactLogs filters them.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// Temps are leftover .tmp files of interrupted writes; OrphanCRCs are .N.crc checksum files
	// whose N is gone.
	Temps      []storage.Entry `json:"-"`
	OrphanCRCs []storage.Entry `json:"-"`
	// Errors are the files that could not be parsed (*logformat.Error); the totals then cover
	// only the entries read before each error.
	Errors []error `json:"-"`
}

// Latest returns the highest batch id in the log at dir, as Spark's getLatestBatchId: the
// maximum numeric name, with or without .compact, on one listing, reading nothing.
func Latest(ctx context.Context, store storage.Store, dir string) (int64, bool, error) {
	l, err := list(ctx, store, dir)
	if err != nil {
		return 0, false, err
	}
	if len(l.batches) == 0 {
		return 0, false, nil
	}
	return l.batches[len(l.batches)-1], true, nil
}

type listing struct {
	batches  []int64
	compacts []int64
	files    map[int64]string // batch id -> path
	names    map[string]bool
	temps    []storage.Entry
	crcs     []storage.Entry
}

func list(ctx context.Context, store storage.Store, dir string) (*listing, error) {
	entries, err := store.List(ctx, dir)
	if err != nil {
		return nil, err
	}
	l := &listing{files: map[int64]string{}, names: map[string]bool{}}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		base := baseName(e.Path)
		l.names[base] = true
		n := logformat.ParseName(base)
		switch n.Kind {
		case logformat.NameBatch, logformat.NameCompact:
			if _, dup := l.files[n.Batch]; dup {
				// Both "9" and "9.compact": Spark's listing yields 9 twice and reads the
				// path its compact interval names; keep the compact file, which is what
				// a log with that interval holds.
				if n.Kind != logformat.NameCompact {
					continue
				}
			} else {
				l.batches = append(l.batches, n.Batch)
			}
			l.files[n.Batch] = e.Path
			if n.Kind == logformat.NameCompact {
				l.compacts = append(l.compacts, n.Batch)
			}
		case logformat.NameTemp:
			l.temps = append(l.temps, e)
		case logformat.NameChecksum:
			l.crcs = append(l.crcs, e)
		}
	}
	slices.Sort(l.batches)
	slices.Sort(l.compacts)
	l.compacts = slices.Compact(l.compacts)
	return l, nil
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// CompactInterval is the interval Spark's CompactibleFileStreamLog settles on (SPARK-18187):
// the default with no compact file, the difference between the two latest compact ids with two or
// more, and DeriveCompactInterval with exactly one. compacts must be ascending.
func CompactInterval(compacts []int64, defaultInterval int) (int, string) {
	switch n := len(compacts); {
	case n >= 2:
		return int(compacts[n-1] - compacts[n-2]), IntervalLatest2
	case n == 1:
		return DeriveCompactInterval(defaultInterval, int(compacts[0])), IntervalDerived
	}
	return defaultInterval, IntervalDefault
}

// DeriveCompactInterval is Spark's CompactibleFileStreamLog.deriveCompactInterval: the interval
// must divide latestCompact+1 (so the existing compact file stays a compaction batch) and be as
// close to the configured default as possible from above.
func DeriveCompactInterval(defaultInterval, latestCompact int) int {
	n := latestCompact + 1
	if n <= defaultInterval {
		return n
	}
	if defaultInterval >= n/2 || n > math.MaxInt32 {
		// Past Int.MaxValue Spark's toInt has already truncated the id; ckpt does not search
		// divisors of an id Spark cannot hold (a search sized by a batch id).
		return n
	}
	// The least divisor in [defaultInterval, n/2], found among the pairs (d, n/d) with d*d <= n:
	// the same answer as Spark's scan from defaultInterval, in sqrt(n) steps.
	best := n
	for d := 1; d*d <= n; d++ {
		if n%d != 0 {
			continue
		}
		for _, c := range [2]int{d, n / d} {
			if c >= defaultInterval && c <= n/2 && c < best {
				best = c
			}
		}
	}
	return best
}

// Span is an inclusive run of batch ids, First to Last. A run is never expanded into its ids:
// a batch id may be as large as 2^63-1, so no id may size an allocation or a loop.
type Span struct {
	First int64 `json:"first"`
	Last  int64 `json:"last"`
}

// Len is the number of ids in s (as uint64: 0 to 2^63-1 holds 2^63 of them).
func (s Span) Len() uint64 { return uint64(s.Last-s.First) + 1 }

// ValidBatches is Spark's getAllValidBatches: the batches allFiles reads for latest, as a span
// (ok is false for an empty log or an interval Spark's assertion refuses). The arithmetic wraps
// as the JVM's Long does, so latest 2^63-1 reads from batch 0, as Spark would try to.
func ValidBatches(latest int64, interval int) (Span, bool) {
	if latest < 0 || interval <= 0 {
		return Span{}, false
	}
	iv := int64(interval)
	return Span{First: max(0, (latest+1)/iv*iv-1), Last: latest}, true
}

// present returns the ids of l's files inside sp, ascending, and the runs of sp without a
// file. Both are bounded by the number of files, whatever the span.
func (l *listing) present(sp Span) (ids []int64, missing []Span) {
	i, _ := slices.BinarySearch(l.batches, sp.First)
	next := sp.First // the first id not yet accounted for
	for ; i < len(l.batches) && l.batches[i] <= sp.Last; i++ {
		id := l.batches[i]
		if id > next {
			missing = append(missing, Span{next, id - 1})
		}
		ids = append(ids, id)
		next = id + 1
	}
	// next wraps past 2^63-1 only when Last is that id and has a file.
	if len(ids) == 0 || (ids[len(ids)-1] < sp.Last) {
		missing = append(missing, Span{next, sp.Last})
	}
	return ids, missing
}

// Summarize lists the log at dir and streams the batches Spark's allFiles would read, counting
// entries, live files and bytes. It fails only on I/O errors; a corrupt file is recorded in
// Summary.Errors and the rest is still read.
func Summarize(ctx context.Context, store storage.Store, dir string) (*Summary, error) {
	l, err := list(ctx, store, dir)
	if err != nil {
		return nil, err
	}
	s := &Summary{
		Dir:      dir,
		Batches:  nonNil(l.batches),
		Compacts: nonNil(l.compacts),
		Missing:  []Span{},
		Temps:    l.temps,
	}
	for _, c := range l.crcs {
		// ".N.crc" guards "N"; without "N" it is a leftover.
		name := baseName(c.Path)
		target := name[1 : len(name)-len(".crc")]
		if !l.names[target] {
			s.OrphanCRCs = append(s.OrphanCRCs, c)
		}
	}
	s.CompactInterval, s.IntervalSource = CompactInterval(l.compacts, DefaultCompactInterval)
	if len(l.batches) == 0 {
		s.Latest = -1
		return s, nil
	}
	s.Latest, s.HasLatest = l.batches[len(l.batches)-1], true
	var paths []string
	if sp, ok := ValidBatches(s.Latest, s.CompactInterval); ok {
		s.Valid = sp
		ids, missing := l.present(sp)
		s.Missing = append(s.Missing, missing...)
		for _, id := range ids {
			paths = append(paths, l.files[id])
		}
	}
	deleted := map[string]struct{}{}
	for _, p := range paths {
		err := stream(ctx, store, p, func(e *logformat.SinkFileStatus) {
			s.Entries++
			if e.Action == ActionDelete {
				s.Deletes++
				deleted[e.Path] = struct{}{}
				return
			}
			s.Files++
			s.Bytes += e.Size
		})
		if err != nil {
			if !isFormatError(err) {
				return nil, err
			}
			s.Errors = append(s.Errors, err)
		}
	}
	if len(deleted) == 0 {
		return s, nil
	}
	// A delete removes every add of its path, wherever it is in the valid batches, so a second
	// pass takes those adds back out. Only logs with deletes pay for it.
	for _, p := range paths {
		err := stream(ctx, store, p, func(e *logformat.SinkFileStatus) {
			if e.Action == ActionDelete {
				return
			}
			if _, gone := deleted[e.Path]; gone {
				s.Files--
				s.Bytes -= e.Size
			}
		})
		if err != nil && !isFormatError(err) {
			return nil, err
		}
	}
	return s, nil
}

// Walk calls fn for every entry of the log files Spark's allFiles reads (the latest compaction
// and the batches after it), in order, with the log file that holds it. Like Summarize it fails
// only on I/O errors: the *logformat.Error of a corrupt file is returned in errs and the other
// files are still read. Entries are streamed, so memory does not grow with the log.
func Walk(ctx context.Context, store storage.Store, dir string, fn func(file string, e *logformat.SinkFileStatus)) (errs []error, err error) {
	l, err := list(ctx, store, dir)
	if err != nil || len(l.batches) == 0 {
		return nil, err
	}
	interval, _ := CompactInterval(l.compacts, DefaultCompactInterval)
	sp, ok := ValidBatches(l.batches[len(l.batches)-1], interval)
	if !ok {
		return nil, nil
	}
	ids, _ := l.present(sp)
	for _, id := range ids {
		p := l.files[id]
		err := stream(ctx, store, p, func(e *logformat.SinkFileStatus) { fn(p, e) })
		if err != nil {
			if !isFormatError(err) {
				return errs, err
			}
			errs = append(errs, err)
		}
	}
	return errs, nil
}

// stream calls fn for each entry of the log file at p, one at a time.
func stream(ctx context.Context, store storage.Store, p string, fn func(*logformat.SinkFileStatus)) error {
	rc, err := store.Open(ctx, p)
	if err != nil {
		return err
	}
	defer rc.Close()
	r, err := logformat.NewSinkLogReader(p, rc)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(&e)
	}
}

func isFormatError(err error) bool {
	var fe *logformat.Error
	return errors.As(err, &fe)
}

func nonNil(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

// String describes the summary in one line, for logs.
func (s *Summary) String() string {
	if !s.HasLatest {
		return fmt.Sprintf("sink log %s: empty", s.Dir)
	}
	return fmt.Sprintf("sink log %s: latest %d, interval %d, %d files, %d bytes", s.Dir, s.Latest, s.CompactInterval, s.Files, s.Bytes)
}
