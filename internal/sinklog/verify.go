package sinklog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The codes of `ckpt sink verify`. doctor registers them (with their documentation in
// docs/doctor.md), so a runbook keys on the same code whichever command found the condition.
const (
	// CodeFileMissing: a file the log lists as live is not in the output.
	CodeFileMissing = "sink-file-missing"
	// CodeFileExtra: a data file in the output that no live entry lists.
	CodeFileExtra = "sink-file-extra"
	// CodeFileSizeMismatch: a live file whose size differs from the size the log records.
	CodeFileSizeMismatch = "sink-file-size-mismatch"
	// CodeLogBatchMissing: a log file Spark's allFiles reads is gone.
	CodeLogBatchMissing = "sink-log-batch-missing"
	// CodeEntryOutside: a live entry outside the output directory (doctor's sink-entry-outside).
	CodeEntryOutside = "sink-entry-outside"
	// CodeCorruptLogFile: a log file that does not parse (doctor's corrupt-log-file).
	CodeCorruptLogFile = "corrupt-log-file"
)

// Problem is one finding of Verify.
type Problem struct {
	Code string `json:"code"`
	// Path is the file relative to the output directory (a data file, or a log file such as
	// "_spark_metadata/19.compact").
	Path string `json:"path"`
	// Entry is the path as the log records it; LogFile the log file that lists it.
	Entry   string `json:"entry,omitempty"`
	LogFile string `json:"logFile,omitempty"`
	// LogSize is the size the log records and Size the size in the output (-1: not applicable).
	LogSize int64  `json:"logSize"`
	Size    int64  `json:"size"`
	Message string `json:"message"`
}

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// MaxProblems bounds the problems listed per code (counts stay exact); 0 means 1000.
	MaxProblems int
	// Retention is the file sink's "retention" option (Spark 3.1+): readers skip entries whose
	// modificationTime is older than Now minus Retention, so verify does too. 0: none (Spark's
	// default).
	Retention time.Duration
	// Now is the clock for Retention (nil: time.Now).
	Now func() time.Time
}

// Verification compares the files a sink log lists as live with the data files in the output.
type Verification struct {
	// Base is the output directory the log's entries were resolved against; BaseGuessed is true
	// when no entry lies below the store's own location (the output was copied or moved) and the
	// directory most entries share stands for it.
	Base        string `json:"base"`
	BaseGuessed bool   `json:"baseGuessed"`
	Latest      int64  `json:"latest"`
	// CompactInterval and ValidBatches are Spark's, as Summarize computes them.
	CompactInterval int   `json:"compactInterval"`
	ValidBatches    *Span `json:"validBatches"`
	// Expired counts add entries past Retention, which readers skip.
	Expired int64 `json:"expired"`
	// Live and LiveBytes count the live entries; Present and PresentBytes the data files found.
	Live         int64 `json:"live"`
	LiveBytes    int64 `json:"liveBytes"`
	Present      int64 `json:"present"`
	PresentBytes int64 `json:"presentBytes"`
	// Counts per code (exact), and the problems (at most MaxProblems per code).
	Counts   map[string]int64 `json:"counts"`
	Problems []Problem        `json:"problems"`
}

// OK reports whether verify found nothing.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// liveEntry is what Verify keeps per live file.
type liveEntry struct {
	entry   string
	logFile string
	size    int64
}

// Verify lists the live files of the sink log in store (the output directory; the log in
// Dir) as Spark's allFiles computes them (the latest compaction and the batches after it, adds
// minus deletes) and compares them with the data files in the output: missing, extra (hidden
// names, "_x" and ".x" as Spark's file index skips them, are not data), size mismatches, and
// log files allFiles cannot read.
func Verify(ctx context.Context, store storage.Store, opts VerifyOptions) (*Verification, error) {
	limit := opts.MaxProblems
	if limit <= 0 {
		limit = 1000
	}
	// One listing and one streamed read of the files allFiles reads, as Summarize, without
	// Summarize's second pass (Verify keeps the live set anyway).
	l, err := list(ctx, store, Dir)
	if err != nil {
		return nil, err
	}
	interval, _ := CompactInterval(l.compacts, DefaultCompactInterval)
	v := &Verification{Latest: -1, CompactInterval: interval,
		Counts: map[string]int64{}, Problems: []Problem{}}
	add := func(p Problem) {
		v.Counts[p.Code]++
		if v.Counts[p.Code] <= int64(limit) {
			v.Problems = append(v.Problems, p)
		}
	}
	if len(l.batches) > 0 {
		v.Latest = l.batches[len(l.batches)-1]
		if sp, ok := ValidBatches(v.Latest, interval); ok {
			v.ValidBatches = &sp
			_, missing := l.present(sp)
			for _, m := range missing {
				// One problem per id up to the limit, then the rest of the run is counted at
				// once: a run can hold 2^63 ids.
				var listed uint64
				for id := m.First; v.Counts[CodeLogBatchMissing] < int64(limit); id++ {
					name := fmt.Sprint(id)
					if IsCompactionBatch(id, interval) {
						name += CompactSuffix
					}
					add(Problem{Code: CodeLogBatchMissing, Path: path.Join(Dir, name), LogSize: -1, Size: -1,
						Message: fmt.Sprintf("log file %s is gone: Spark's allFiles fails (%s doesn't exist (latestId: %d, compactInterval: %d))",
							name, name, v.Latest, interval)})
					listed++
					if id == m.Last {
						break // m.Last may be 2^63-1, where id++ wraps
					}
				}
				rest := m.Len() - listed
				if c := uint64(v.Counts[CodeLogBatchMissing]); rest > math.MaxInt64-c {
					v.Counts[CodeLogBatchMissing] = math.MaxInt64
				} else {
					v.Counts[CodeLogBatchMissing] += int64(rest)
				}
			}
		}
	}

	var cutoff int64
	if opts.Retention > 0 {
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		cutoff = now().Add(-opts.Retention).UnixMilli()
	}
	// The live set: adds, minus every path a delete names, as compactLogs filters them.
	var order []string
	adds := map[string]liveEntry{}
	deleted := map[string]bool{}
	errs, err := Walk(ctx, store, Dir, func(file string, e *logformat.SinkFileStatus) {
		if e.Action == ActionDelete {
			deleted[e.Path] = true
			return
		}
		if e.IsDir {
			return
		}
		if cutoff != 0 && e.ModificationTime < cutoff {
			v.Expired++
			return
		}
		if _, dup := adds[e.Path]; !dup {
			order = append(order, e.Path)
		}
		adds[e.Path] = liveEntry{entry: e.Path, logFile: file, size: e.Size}
	})
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		add(Problem{Code: CodeCorruptLogFile, Path: errFile(e), LogSize: -1, Size: -1, Message: e.Error()})
	}
	var entries []string
	for _, p := range order {
		if !deleted[p] {
			entries = append(entries, p)
		}
	}
	res := NewResolver(store.URI(), entries)
	v.Base, v.BaseGuessed = res.Base(), res.Guessed()

	files, err := store.Walk(ctx, "")
	if err != nil {
		return nil, err
	}
	present := make(map[string]int64, len(files))
	for _, f := range files {
		if f.IsDir || Hidden(f.Path) {
			continue
		}
		present[f.Path] = f.Size
		v.Present++
		v.PresentBytes += f.Size
	}
	for _, p := range entries {
		le := adds[p]
		v.Live++
		v.LiveBytes += le.size
		rel, ok := res.Rel(p)
		if !ok {
			add(Problem{Code: CodeEntryOutside, Path: p, Entry: p, LogFile: le.logFile, LogSize: le.size, Size: -1,
				Message: fmt.Sprintf("%s lists %q, outside the output directory %s", le.logFile, p, v.Base)})
			continue
		}
		size, ok := present[rel]
		delete(present, rel) // what is left in present at the end is not listed
		switch {
		case !ok:
			add(Problem{Code: CodeFileMissing, Path: rel, Entry: p, LogFile: le.logFile, LogSize: le.size, Size: -1,
				Message: fmt.Sprintf("%s is listed as live by %s but is not in the output: readers fail with FileNotFoundException", rel, le.logFile)})
		case size != le.size:
			add(Problem{Code: CodeFileSizeMismatch, Path: rel, Entry: p, LogFile: le.logFile, LogSize: le.size, Size: size,
				Message: fmt.Sprintf("%s has %d bytes, the log (%s) records %d", rel, size, le.logFile, le.size)})
		}
	}
	extras := make([]string, 0, len(present))
	for p := range present {
		extras = append(extras, p)
	}
	slices.Sort(extras)
	for _, p := range extras {
		add(Problem{Code: CodeFileExtra, Path: p, LogSize: -1, Size: present[p],
			Message: fmt.Sprintf("%s is in the output but no live log entry lists it: readers of the sink do not see it (a failed or rewound batch)", p)})
	}
	return v, nil
}

func errFile(err error) string {
	var fe *logformat.Error
	if errors.As(err, &fe) {
		return fe.File
	}
	return ""
}

// Hidden reports whether Spark's file listing skips p: an element starting with "_" (unless it
// holds "=", a partition directory) or ".", or a name ending in "._COPYING_" (Hadoop's
// shouldFilterOutPathName). The log, ckpt's own _ckpt and checksum files are all hidden.
func Hidden(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if (strings.HasPrefix(el, "_") && !strings.Contains(el, "=")) || strings.HasPrefix(el, ".") || strings.HasSuffix(el, "._COPYING_") {
			return true
		}
	}
	return false
}

// CompactSuffix ends the name of a compaction file.
const CompactSuffix = ".compact"

// IsCompactionBatch is Spark's isCompactionBatch: (id+1) % interval == 0.
func IsCompactionBatch(id int64, interval int) bool {
	return interval > 0 && (id+1)%int64(interval) == 0
}

// Location is a file location split so that the spellings Spark writes compare alike: scheme
// "file" for local paths ("file:/out/part-0", "file:///out/part-0" and "/out/part-0"), "s3" for
// s3, s3a and s3n; others as written (gs, abfss, hdfs, mem).
type Location struct {
	Scheme, Host, Path string
}

// ParseLocation splits a path as a sink log or a user writes it. A path without a scheme is a
// local path, made absolute.
func ParseLocation(p string) Location {
	if i := strings.Index(p, ":"); i > 1 && !strings.ContainsAny(p[:i], `/\`) {
		if u, err := url.Parse(p); err == nil && u.Scheme != "" {
			scheme := strings.ToLower(u.Scheme)
			switch scheme {
			case "s3a", "s3n":
				scheme = "s3"
			}
			up := u.Path
			if up == "" {
				up = u.Opaque
			}
			host := u.Host
			if u.User != nil { // abfss://container@account...
				host = u.User.String() + "@" + host
			}
			return Location{Scheme: scheme, Host: host, Path: path.Clean("/" + up)}
		}
	}
	if !strings.HasPrefix(p, "/") {
		if abs, err := filepath.Abs(p); err == nil {
			p = filepath.ToSlash(abs)
		}
	}
	return Location{Scheme: "file", Path: path.Clean("/" + p)}
}

// String is the location as a URI ("/out" for local paths).
func (l Location) String() string {
	if l.Scheme == "file" {
		return l.Path
	}
	return l.Scheme + "://" + l.Host + l.Path
}

// under returns p relative to l, and whether p is below l.
func (l Location) rel(p Location) (string, bool) {
	if l.Scheme != p.Scheme || l.Host != p.Host {
		return "", false
	}
	prefix := strings.TrimSuffix(l.Path, "/") + "/"
	if !strings.HasPrefix(p.Path, prefix) || len(p.Path) == len(prefix) {
		return "", false
	}
	return p.Path[len(prefix):], true
}

// Resolver turns the absolute paths of sink log entries into paths relative to the output
// directory.
type Resolver struct {
	base    Location
	guessed bool
}

// NewResolver resolves against outputURI (the output directory's store URI). When no entry is
// below it (the output was copied or moved, so its log still names the old place), the
// directory most entries share, partition directories ("k=v") removed, stands for it.
func NewResolver(outputURI string, entries []string) *Resolver {
	r := &Resolver{base: ParseLocation(outputURI)}
	if len(entries) == 0 {
		return r
	}
	counts := map[Location]int{}
	for _, e := range entries {
		loc := ParseLocation(e)
		if _, ok := r.base.rel(loc); ok {
			return r
		}
		counts[partitionBase(loc)]++
	}
	best, n := Location{}, 0
	for d, c := range counts {
		if c > n || (c == n && d.String() < best.String()) {
			best, n = d, c
		}
	}
	r.base, r.guessed = best, true
	return r
}

// Base is the output location entries resolve against.
func (r *Resolver) Base() string { return r.base.String() }

// Guessed reports whether Base was guessed from the entries.
func (r *Resolver) Guessed() bool { return r.guessed }

// Rel is entry relative to the output directory; false when it is outside it or climbs out.
func (r *Resolver) Rel(entry string) (string, bool) {
	for _, el := range strings.Split(entry, "/") {
		if el == ".." {
			return "", false
		}
	}
	return r.base.rel(ParseLocation(entry))
}

func partitionBase(l Location) Location {
	d := path.Dir(l.Path)
	for d != "/" && strings.Contains(path.Base(d), "=") {
		d = path.Dir(d)
	}
	l.Path = d
	return l
}
