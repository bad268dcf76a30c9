// Package transfer copies a checkpoint (and a file sink's output) to another location or store
// (`ckpt cp`): create-only, into an empty destination, resumable, never touching the source.
//
// Spark's compactible logs hold absolute paths: the file sink's _spark_metadata entries and a
// file source's sources/<i>/N entries. Copied elsewhere they still name the old place, so the
// copy rewrites their path prefixes as asked (Rewrite), through logformat's parser and writer so
// every other byte stays Spark's, and then checks that every rewritten path exists and runs
// doctor on the copy.
package transfer

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// OwnDir is ckpt's own directory (repair journals, locks, the liveness record of `ckpt run`). It
// is never copied: a lock or a liveness record would make the copy look busy or alive, and the
// journals belong to the source. The copy's own markers go there in the destination.
const OwnDir = "_ckpt"

// Marker files in the destination: StartedFile is written before the first copied file, naming
// the source and the rewrites (what --resume checks), DoneFile after the last.
const (
	StartedFile = OwnDir + "/cp/started.json"
	DoneFile    = OwnDir + "/cp/done.json"
)

// Rewrite replaces the prefix Old of a logged path with New.
type Rewrite struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// ParseRewrite reads OLD=NEW.
func ParseRewrite(s string) (Rewrite, error) {
	old, nw, ok := strings.Cut(s, "=")
	if !ok || old == "" || nw == "" {
		return Rewrite{}, fmt.Errorf("--rewrite-prefix %q: want OLD=NEW, both non-empty", s)
	}
	return Rewrite{Old: old, New: nw}, nil
}

// Pair is one tree to copy: the checkpoint, or a file sink's output.
type Pair struct {
	// Kind is KindCheckpoint or KindSink.
	Kind     string
	Src, Dst storage.Store
}

// Options configures Copy.
type Options struct {
	// Rewrites are applied to the paths of file sink and file source log entries, longest Old
	// first; none: logs are copied byte for byte.
	Rewrites []Rewrite
	// Resume continues into a destination that holds a partial copy made by Copy with the same
	// source and rewrites (default false: the destination must be empty).
	Resume bool
	// Parallelism bounds concurrent file copies within a phase (0: 4).
	Parallelism int
	// Progress, when set, is told after each file (the command draws it on a terminal).
	Progress func(Progress)
	// Exists says whether an absolute path as a log records it exists (the command opens the
	// store it names). nil: rewritten paths are not checked.
	Exists func(ctx context.Context, p string) (bool, error)
	// Now is the clock of the markers (nil: time.Now).
	Now func() time.Time
	// Tool names the ckpt build in the markers.
	Tool string
	// Location and SinkLocation are the destinations as the user typed them, for doctor's
	// commands (default: the stores' URIs).
	Location, SinkLocation string
}

// The kinds of Pair.
const (
	KindCheckpoint = "checkpoint"
	KindSink       = "sink"
)

// Progress is where a copy stands.
type Progress struct {
	Files, TotalFiles int
	Bytes, TotalBytes int64
	Path              string
}

// Result is what Copy did.
type Result struct {
	Trees []TreeResult `json:"trees"`
	// Files, Bytes count the files copied now; Skipped the files a resumed copy found done.
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	Skipped int   `json:"skipped"`
	// RewrittenFiles and RewrittenEntries count the log files and entries whose paths changed;
	// Unrewritten the entries no rewrite matched (they still name their old place).
	RewrittenFiles   int `json:"rewrittenFiles"`
	RewrittenEntries int `json:"rewrittenEntries"`
	Unrewritten      int `json:"unrewrittenEntries"`
	// ChecksumsDropped are Hadoop .crc files of rewritten logs, not copied: their checksums are
	// of the old bytes, and Hadoop would reject the new ones (it reads fine without them).
	ChecksumsDropped []string `json:"checksumsDropped"`
	// Checked counts rewritten paths checked for existence; Missing lists those that do not
	// exist (at most 100; MissingCount is exact).
	Checked int `json:"checked"`
	// Unchecked counts rewritten paths whose location could not be read (the first error is
	// among Warnings).
	Unchecked    int           `json:"unchecked"`
	Missing      []MissingPath `json:"missing"`
	MissingCount int           `json:"missingCount"`
	// Outside lists rewritten sink log entries that do not name a file in the sink's
	// destination (at most 100; OutsideCount is exact): readers of the copied log would look
	// for them elsewhere.
	Outside      []MissingPath `json:"outside"`
	OutsideCount int           `json:"outsideCount"`
	// Links are the symlinked source directories the copy followed (local sources), as doctor
	// and Spark read through them; the copy holds real directories there.
	Links []string `json:"followedLinks"`
	// TempsRemoved are temporary files of ckpt's own (storage.IsOwnTemp) that an earlier,
	// killed run of the copy left in the destination, removed by --resume.
	TempsRemoved []string `json:"tempsRemoved"`
	// Sink is `ckpt sink verify` of the copied sink (nil without one): its live files resolved
	// against the destination.
	Sink *sinklog.Verification `json:"sink"`
	// Doctor is doctor's report on the copied checkpoint (with the copied sink, --deep).
	Doctor *doctor.Report `json:"doctor"`
	// Warnings say what the copy could not vouch for (a source written while it was copied).
	Warnings []string `json:"warnings"`
}

// LiveWindow is how recent a source's newest log file must be for the copy to warn that the
// query may still be running (repair's default active window).
const LiveWindow = 2 * time.Minute

// TreeResult is one tree's source and destination.
type TreeResult struct {
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Files       int    `json:"files"`
	Bytes       int64  `json:"bytes"`
}

// MissingPath is a rewritten path that does not exist.
type MissingPath struct {
	Path    string `json:"path"`
	LogFile string `json:"logFile"`
}

// ErrNotEmpty is returned when the destination holds files and Resume is not set.
var ErrNotEmpty = errors.New("the destination is not empty")

// ErrOverlap is returned when a destination lies inside a source, a source inside a
// destination, or one destination inside a log directory of the other: the copy would write
// into what it reads, or into the logs it writes.
var ErrOverlap = errors.New("the locations overlap")

// marker is the content of StartedFile and DoneFile.
type marker struct {
	Tool     string    `json:"tool"`
	Kind     string    `json:"kind"`
	Source   string    `json:"source"`
	Rewrites []Rewrite `json:"rewrites"`
	Time     time.Time `json:"time"`
}

// file is one file to copy, with the bytes to write when they differ from the source's.
type file struct {
	path  string
	size  int64
	phase int
}

// Copy copies every pair. The source is only read. Files are written in phases so that a
// partial copy is never mistaken for a complete one: data and state first, then the logs in the
// order Spark writes them (offsets, commits), then the checkpoint's metadata; in a sink, the
// data files before _spark_metadata.
func Copy(ctx context.Context, pairs []Pair, opts Options) (*Result, error) {
	rw := slices.Clone(opts.Rewrites)
	sort.SliceStable(rw, func(i, j int) bool { return len(rw[i].Old) > len(rw[j].Old) })
	if opts.Parallelism <= 0 {
		opts.Parallelism = 4
	}
	c := &copier{opts: opts, rewrites: rw, res: &Result{ChecksumsDropped: []string{}, Missing: []MissingPath{}, Outside: []MissingPath{},
		Links: []string{}, TempsRemoved: []string{}, Warnings: []string{}}}
	if err := CheckLayout(pairs); err != nil {
		return nil, err
	}
	plans := make([][]file, len(pairs))
	resumed := make([]bool, len(pairs))
	for i, p := range pairs {
		var err error
		if resumed[i], err = c.checkDestination(ctx, p); err != nil {
			return nil, err
		}
		files, err := c.list(ctx, p)
		if err != nil {
			return nil, err
		}
		plans[i] = files
		for _, f := range files {
			c.total.Files++
			c.total.Bytes += f.size
		}
	}
	for i, p := range pairs {
		if !resumed[i] {
			continue
		}
		if err := c.cleanDestination(ctx, p, plans[i]); err != nil {
			return nil, err
		}
	}
	for _, p := range pairs {
		if w := c.liveWarning(ctx, p); w != "" {
			c.res.Warnings = append(c.res.Warnings, w)
		}
	}
	for i, p := range pairs {
		if err := c.mark(ctx, p, StartedFile); err != nil {
			return nil, err
		}
		before := *c.res
		if err := c.copyTree(ctx, p, plans[i]); err != nil {
			return c.res, err
		}
		c.res.Trees = append(c.res.Trees, TreeResult{Kind: p.Kind, Source: p.Src.URI(), Destination: p.Dst.URI(),
			Files: c.res.Files - before.Files, Bytes: c.res.Bytes - before.Bytes})
		if err := c.mark(ctx, p, DoneFile); err != nil {
			return c.res, err
		}
	}
	// Parallel copies find them in any order; the list is the logs' order.
	slices.SortFunc(c.res.Outside, func(a, b MissingPath) int {
		return cmp.Or(strings.Compare(a.LogFile, b.LogFile), strings.Compare(a.Path, b.Path))
	})
	return c.res, c.verify(ctx, pairs)
}

// verify checks the copy: the sink's live files against the destination (sinklog.Verify) and
// doctor on the checkpoint, with the copied sink and --deep.
func (c *copier) verify(ctx context.Context, pairs []Pair) error {
	var ck, sink storage.Store
	for _, p := range pairs {
		switch p.Kind {
		case KindCheckpoint:
			ck = p.Dst
		case KindSink:
			sink = p.Dst
		}
	}
	if sink != nil {
		v, err := sinklog.Verify(ctx, sink, sinklog.VerifyOptions{MaxProblems: 100})
		if err != nil {
			return fmt.Errorf("verify the copied sink: %w", err)
		}
		c.res.Sink = v
	}
	if ck == nil {
		return nil
	}
	cp, err := checkpoint.Load(ctx, ck)
	if err != nil {
		return fmt.Errorf("doctor on the copy: %w", err)
	}
	rep, err := doctor.Run(ctx, cp, doctor.Options{Sink: sink, Deep: true, Location: c.opts.Location, SinkLocation: c.opts.SinkLocation})
	if err != nil {
		return fmt.Errorf("doctor on the copy: %w", err)
	}
	c.res.Doctor = rep
	return nil
}

type copier struct {
	opts     Options
	rewrites []Rewrite
	res      *Result
	mu       sync.Mutex
	total    Progress
	done     Progress
	// newest is the newest log file of each source (by URI) its walk found, for liveWarning.
	newest map[string]storage.Entry
}

// liveWarning says when the source's newest log file (offsets/ of a checkpoint, _spark_metadata
// of a sink) was written within LiveWindow: a running query goes on writing while the copy is
// made, so the copy may end between two of its writes.
func (c *copier) liveWarning(ctx context.Context, p Pair) string {
	newest, ok := c.newest[p.Src.URI()] // from the walk of list: no listing of its own
	if !ok {
		es, err := p.Src.List(ctx, logDir(p.Kind))
		if err != nil {
			return ""
		}
		newest = newestFile(es, logDir(p.Kind))
	}
	now := time.Now
	if c.opts.Now != nil {
		now = c.opts.Now
	}
	if newest.ModTime.IsZero() || now().Sub(newest.ModTime) >= LiveWindow {
		return ""
	}
	return fmt.Sprintf("%s/%s was written %s ago: if the query is running, the copy may stop between two of its writes; copy a stopped query, or check the copy with ckpt doctor",
		p.Src.URI(), newest.Path, now().Sub(newest.ModTime).Round(time.Second))
}

// checkDestination refuses a destination with files, unless Resume finds a copy of the same
// source with the same rewrites there; resumed reports that.
func (c *copier) checkDestination(ctx context.Context, p Pair) (resumed bool, err error) {
	es, err := p.Dst.Walk(ctx, "")
	if err != nil {
		return false, err
	}
	n := 0
	for _, e := range es {
		if !e.IsDir {
			n++
		}
	}
	if n == 0 {
		return false, nil
	}
	data, err := p.Dst.ReadFile(ctx, StartedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%w: %s holds %d file(s) and no partial copy of ckpt cp (%s); copy into an empty location", ErrNotEmpty, p.Dst.URI(), n, StartedFile)
	}
	if err != nil {
		return false, err
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil {
		return false, fmt.Errorf("%s/%s: %w", p.Dst.URI(), StartedFile, err)
	}
	if !c.opts.Resume {
		what := "a partial copy"
		if _, err := p.Dst.Stat(ctx, DoneFile); err == nil {
			what = "a complete copy"
		}
		return false, fmt.Errorf("%w: %s holds %s of %s made by ckpt cp; continue it with --resume, or copy into an empty location", ErrNotEmpty, p.Dst.URI(), what, m.Source)
	}
	if m.Source != p.Src.URI() || m.Kind != p.Kind || !slices.Equal(m.Rewrites, c.sortedRewrites()) {
		return false, fmt.Errorf("--resume: %s holds a copy of %s (%s) with rewrites %v, not of %s with %v", p.Dst.URI(), m.Source, m.Kind, m.Rewrites, p.Src.URI(), c.sortedRewrites())
	}
	return true, nil
}

// cleanDestination readies a partial copy for --resume: a temporary file of ckpt's own
// writes (storage.IsOwnTemp: a write killed between creating its temporary file and renaming
// it, as on HDFS) is removed; any other file the copy would not write is refused, since the
// finished copy would not equal the source. ckpt's own directory is left alone.
func (c *copier) cleanDestination(ctx context.Context, p Pair, plan []file) error {
	es, err := p.Dst.Walk(ctx, "")
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(plan))
	for _, f := range plan {
		want[f.path] = true
	}
	for _, e := range es {
		if e.IsDir || want[e.Path] || e.Path == OwnDir || strings.HasPrefix(e.Path, OwnDir+"/") {
			continue
		}
		if !storage.IsOwnTemp(path.Base(e.Path)) {
			return fmt.Errorf("--resume: %s/%s is not in the source %s, so the copy would not equal it; it was not written by this copy (remove it, or copy into an empty location)", p.Dst.URI(), e.Path, p.Src.URI())
		}
		if err := p.Dst.Delete(ctx, e.Path); err != nil {
			return fmt.Errorf("--resume: remove the temporary file an earlier run left: %w", err)
		}
		c.res.TempsRemoved = append(c.res.TempsRemoved, e.Path)
	}
	return nil
}

func (c *copier) sortedRewrites() []Rewrite {
	if c.rewrites == nil {
		return []Rewrite{}
	}
	return c.rewrites
}

func (c *copier) mark(ctx context.Context, p Pair, name string) error {
	now := time.Now
	if c.opts.Now != nil {
		now = c.opts.Now
	}
	data, err := json.MarshalIndent(marker{Tool: c.opts.Tool, Kind: p.Kind, Source: p.Src.URI(), Rewrites: c.sortedRewrites(), Time: now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	err = p.Dst.WriteFile(ctx, name, append(data, '\n'))
	if errors.Is(err, fs.ErrExist) && c.opts.Resume {
		return nil
	}
	return err
}

// list walks the source and orders its files by phase.
//
// A symlinked directory in a local source is followed (storage.WalkReadable), not skipped:
// Local's reads follow links (only its writes and deletes are confined to the root), so doctor
// and Spark read commits/ through a link, and a copy that left it out would lose every commit.
// A link back to a directory above it is refused (storage.ErrSymlinkCycle).
func (c *copier) list(ctx context.Context, p Pair) ([]file, error) {
	es, links, err := storage.WalkReadable(ctx, p.Src, "")
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if l != OwnDir && !strings.HasPrefix(l, OwnDir+"/") {
			c.res.Links = append(c.res.Links, p.Src.URI()+"/"+l)
		}
	}
	c.mu.Lock()
	if c.newest == nil {
		c.newest = map[string]storage.Entry{}
	}
	c.newest[p.Src.URI()] = newestFile(es, logDir(p.Kind))
	c.mu.Unlock()
	var out []file
	for _, e := range es {
		if e.IsDir || e.Path == OwnDir || strings.HasPrefix(e.Path, OwnDir+"/") {
			continue
		}
		out = append(out, file{path: e.Path, size: e.Size, phase: phase(p.Kind, e.Path)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].phase < out[j].phase })
	return out, nil
}

// logDir is the log directory whose newest file tells whether a query still writes.
func logDir(kind string) string {
	if kind == KindSink {
		return sinklog.Dir
	}
	return "offsets"
}

// newestFile is the most recently modified file directly below dir among es.
func newestFile(es []storage.Entry, dir string) storage.Entry {
	var newest storage.Entry
	for _, e := range es {
		rest, ok := strings.CutPrefix(e.Path, dir+"/")
		if ok && !e.IsDir && !strings.Contains(rest, "/") && e.ModTime.After(newest.ModTime) {
			newest = e
		}
	}
	return newest
}

func phase(kind, p string) int {
	if kind == KindSink {
		if strings.HasPrefix(p, sinklog.Dir+"/") {
			return 1
		}
		return 0
	}
	switch {
	case strings.HasPrefix(p, "offsets/"):
		return 1
	case strings.HasPrefix(p, "commits/"):
		return 2
	case p == "metadata":
		return 3
	}
	return 0
}

// copyTree copies the files phase by phase, each phase with up to Parallelism files at once.
func (c *copier) copyTree(ctx context.Context, p Pair, files []file) error {
	// A .crc beside a log file that gets rewritten is dropped; it is known only after the
	// rewrite, so checksums of log directories wait for the rest of their phase.
	rewritten := map[string]bool{}
	var crcs []file
	for start := 0; start < len(files); {
		end := start
		for end < len(files) && files[end].phase == files[start].phase {
			end++
		}
		var batch []file
		for _, f := range files[start:end] {
			if c.isLogChecksum(p.Kind, f.path) {
				crcs = append(crcs, f)
				continue
			}
			batch = append(batch, f)
		}
		if err := c.parallel(ctx, batch, func(f file) error {
			changed, err := c.copyFile(ctx, p, f)
			if changed {
				c.mu.Lock()
				rewritten[f.path] = true
				c.mu.Unlock()
			}
			return err
		}); err != nil {
			return err
		}
		var keep []file
		for _, f := range crcs {
			if target := crcTarget(f.path); rewritten[target] {
				c.mu.Lock()
				c.res.ChecksumsDropped = append(c.res.ChecksumsDropped, f.path)
				c.mu.Unlock()
				c.tick(f, 0)
				continue
			}
			keep = append(keep, f)
		}
		if err := c.parallel(ctx, keep, func(f file) error { _, err := c.copyFile(ctx, p, f); return err }); err != nil {
			return err
		}
		crcs = nil
		start = end
	}
	return nil
}

func (c *copier) parallel(ctx context.Context, files []file, fn func(file) error) error {
	if len(files) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan file)
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	for range min(c.opts.Parallelism, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if err := fn(f); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		work <- f
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// isLogChecksum reports whether p is the Hadoop checksum of a file that may be rewritten.
func (c *copier) isLogChecksum(kind, p string) bool {
	if len(c.rewrites) == 0 {
		return false
	}
	name := path.Base(p)
	if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".crc") {
		return false
	}
	return logKind(kind, crcTarget(p)) != ""
}

func crcTarget(p string) string {
	name := path.Base(p)
	return path.Join(path.Dir(p), strings.TrimSuffix(strings.TrimPrefix(name, "."), ".crc"))
}

// logKind says which compactible log p is a file of: "sink" for _spark_metadata/N[.compact] in
// a sink, "source" for sources/<i>/N[.compact] in a checkpoint, "" otherwise.
func logKind(kind, p string) string {
	dir, name := path.Split(p)
	n := logformat.ParseName(name)
	if n.Kind != logformat.NameBatch && n.Kind != logformat.NameCompact {
		return ""
	}
	switch {
	case kind == KindSink && dir == sinklog.Dir+"/":
		return "sink"
	case kind == KindCheckpoint && strings.HasPrefix(dir, "sources/") && strings.Count(dir, "/") == 2:
		return "source"
	}
	return ""
}

// copyFile copies one file, rewriting a log's paths. changed reports a rewrite. Files are
// streamed (storage.Store.Create): a data or state file, or a compact log, costs a copy buffer,
// not its size; the log files Spark reads whole are read capped (ReadCapped) first.
func (c *copier) copyFile(ctx context.Context, p Pair, f file) (changed bool, err error) {
	src := storage.FileSource(p.Src, f.path, f.size)
	if capped(p.Kind, f.path) {
		// A log file Spark reads whole costs at most logformat.MaxFileBytes, as in every other
		// command: a corrupt offsets file of one 1 GiB line cost cp over 1 GiB.
		data, err := checkpoint.ReadCapped(ctx, p.Src, f.path)
		if err != nil {
			return false, err
		}
		src = storage.BytesSource(data)
	}
	orig := src
	lk := logKind(p.Kind, f.path)
	if lk != "" && len(c.rewrites) > 0 {
		n, un, size, ok, err := c.rewriteScan(ctx, lk, f.path, src)
		if err != nil {
			return false, fmt.Errorf("read %s/%s: %w", p.Src.URI(), f.path, err)
		}
		if ok {
			c.mu.Lock()
			c.res.Unrewritten += un
			if n > 0 {
				c.res.RewrittenFiles++
				c.res.RewrittenEntries += n
			}
			c.mu.Unlock()
			if n > 0 {
				src, changed = c.rewritten(lk, f.path, orig, size), true
			}
		}
	}
	skipped, err := c.write(ctx, p.Dst, f.path, src)
	if err != nil {
		return changed, err
	}
	if changed {
		err := c.eachRewritten(ctx, lk, f.path, orig, func(batch []MissingPath) error {
			if p.Kind == KindSink {
				c.checkInside(p.Dst, batch)
				return nil
			}
			return c.check(ctx, batch)
		})
		if err != nil {
			return changed, err
		}
	}
	c.mu.Lock()
	if skipped {
		c.res.Skipped++
	} else {
		c.res.Files++
		c.res.Bytes += src.Size
	}
	c.mu.Unlock()
	c.tick(f, f.size)
	return changed, nil
}

// capped reports whether p is a file of a log that Spark and ckpt read whole, whose read is
// capped at logformat.MaxFileBytes (checkpoint.ReadCapped): metadata, offsets/ and commits/, and
// the batch files of a file source's or sink's log. Data and state files, and compact files of
// the logs (a sink's may hold millions of entries), may legitimately be large: they are
// streamed, uncapped.
func capped(kind, p string) bool {
	if kind == KindCheckpoint && (p == "metadata" || strings.HasPrefix(p, "offsets/") || strings.HasPrefix(p, "commits/")) {
		return true
	}
	return logKind(kind, p) != "" && logformat.ParseName(path.Base(p)).Kind == logformat.NameBatch
}

// holds reports whether dst holds p with exactly src's bytes, streaming both through a hash
// (a resumed copy of a large file must not cost its size); exists is false when p is missing.
func holds(ctx context.Context, dst storage.Store, p string, src storage.Source) (exists, equal bool, err error) {
	rc, err := dst.Open(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer rc.Close()
	got, n, err := digest(rc, src.Size)
	if err != nil {
		return true, false, fmt.Errorf("read %s/%s: %w", dst.URI(), p, err)
	}
	if n != src.Size {
		return true, false, nil
	}
	sr, err := src.Open(ctx)
	if err != nil {
		return true, false, err
	}
	defer sr.Close()
	want, m, err := digest(sr, src.Size)
	if err != nil {
		return true, false, err
	}
	return true, m == src.Size && bytes.Equal(got, want), nil
}

// digest is the SHA-256 of r's first size+1 bytes and how many there were.
func digest(r io.Reader, size int64) ([]byte, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, size+1))
	return h.Sum(nil), n, err
}

// write creates p in dst with src's bytes. A resumed copy accepts a file that already holds
// exactly these bytes (stores write atomically, so a file there is whole) and refuses any other.
func (c *copier) write(ctx context.Context, dst storage.Store, p string, src storage.Source) (skipped bool, err error) {
	if c.opts.Resume {
		exists, equal, err := holds(ctx, dst, p, src)
		if err != nil {
			return false, err
		}
		if equal {
			return true, nil
		}
		if exists {
			return false, fmt.Errorf("--resume: %s/%s exists with other bytes than the copy would write; it was not written by this copy", dst.URI(), p)
		}
	}
	err = dst.Create(ctx, p, src)
	if err != nil {
		// A write whose acknowledgement was lost: the bytes may be there.
		if _, equal, rerr := holds(ctx, dst, p, src); rerr == nil && equal {
			return false, nil
		}
		return false, fmt.Errorf("write %s/%s: %w", dst.URI(), p, err)
	}
	return false, nil
}

func (c *copier) check(ctx context.Context, paths []MissingPath) error {
	if c.opts.Exists == nil {
		return nil
	}
	for _, m := range paths {
		ok, err := c.opts.Exists(ctx, m.Path)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A location ckpt cannot open or read (another store, no credentials) leaves the
			// path unchecked; the copy itself is fine.
			c.mu.Lock()
			if c.res.Unchecked == 0 {
				c.res.Warnings = append(c.res.Warnings, fmt.Sprintf("cannot check %s (rewritten in %s): %v", m.Path, m.LogFile, err))
			}
			c.res.Unchecked++
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		c.res.Checked++
		if !ok {
			c.res.MissingCount++
			if len(c.res.Missing) < 100 {
				c.res.Missing = append(c.res.Missing, m)
			}
		}
		c.mu.Unlock()
	}
	return nil
}

func (c *copier) tick(f file, n int64) {
	c.mu.Lock()
	c.done.Files++
	c.done.Bytes += n
	pr := Progress{Files: c.done.Files, TotalFiles: c.total.Files, Bytes: c.done.Bytes, TotalBytes: c.total.Bytes, Path: f.path}
	c.mu.Unlock()
	if c.opts.Progress != nil {
		c.opts.Progress(pr)
	}
}

// apply rewrites one path; ok is false when no rewrite matches.
func (c *copier) apply(p string) (string, bool) {
	for _, r := range c.rewrites {
		if strings.HasPrefix(p, r.Old) {
			return r.New + p[len(r.Old):], true
		}
	}
	return p, false
}

// checkInside counts the rewritten sink entries that do not name a file in the sink's
// destination: a rewrite to another place (file:// to s3a:// in a local copy) would make every
// reader of the copied log look there, while verify, which guesses the base from the entries,
// still found the files.
func (c *copier) checkInside(dst storage.Store, paths []MissingPath) {
	loc := c.opts.SinkLocation
	if loc == "" {
		loc = dst.URI()
	}
	if l, ok := dst.(*storage.Local); ok {
		loc = l.Root()
	}
	res := sinklog.NewResolver(loc, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range paths {
		if _, ok := res.Rel(m.Path); ok {
			continue
		}
		c.res.OutsideCount++
		if len(c.res.Outside) < 100 {
			c.res.Outside = append(c.res.Outside, m)
		}
	}
}

// logDirs are the directories of a tree that hold what Spark reads as the query's own: a copy's
// other tree written there would be read as part of it.
var logDirs = map[string][]string{
	KindCheckpoint: {"offsets", "commits", "sources", "state", "metadata", OwnDir},
	KindSink:       {sinklog.Dir, OwnDir},
}

// CheckLayout refuses pairs that would write into what the copy reads or into the other
// tree's logs: a destination inside a source or a source inside a destination (any pair's,
// not only its own: `--sink-dst ck/offsets/x` wrote 92 files into the source checkpoint), two
// destinations at one place, or a destination inside a log directory of the other destination
// (a sink copied into the checkpoint copy's offsets/). A sink output holding its checkpoint
// (out/_checkpoint, a common layout) stays possible. Local locations are compared with their
// symlinks resolved.
func CheckLayout(pairs []Pair) error {
	type loc struct {
		at   sinklog.Location
		name string
		kind string
	}
	var srcs, dsts []loc
	for _, p := range pairs {
		srcs = append(srcs, loc{location(p.Src), p.Src.URI(), p.Kind})
		dsts = append(dsts, loc{location(p.Dst), p.Dst.URI(), p.Kind})
	}
	for _, d := range dsts {
		for _, s := range srcs {
			if within(d.at, s.at) || within(s.at, d.at) {
				return fmt.Errorf("%w: the destination %s and the source %s: copy to a separate location", ErrOverlap, d.name, s.name)
			}
		}
	}
	for i, a := range dsts {
		for j, b := range dsts {
			if i == j {
				continue
			}
			if a.at == b.at {
				return fmt.Errorf("%w: the destinations %s and %s are one place", ErrOverlap, a.name, b.name)
			}
			for _, dir := range logDirs[a.kind] {
				in := a.at
				in.Path = path.Join(in.Path, dir)
				if within(b.at, in) {
					return fmt.Errorf("%w: the %s destination %s lies in %s, a directory of the %s copy %s; Spark would read it as part of that %s",
						ErrOverlap, b.kind, b.name, dir, a.kind, a.name, a.kind)
				}
			}
		}
	}
	return nil
}

// within reports whether a is b or lies below it.
func within(a, b sinklog.Location) bool {
	if a.Scheme != b.Scheme || a.Host != b.Host {
		return false
	}
	return a.Path == b.Path || strings.HasPrefix(a.Path, strings.TrimSuffix(b.Path, "/")+"/")
}

// location is where a store's root is, for CheckLayout: a local root with the symlinks of its
// longest existing part resolved, so a link into the source is seen for what it is.
func location(st storage.Store) sinklog.Location {
	l, ok := st.(*storage.Local)
	if !ok {
		return sinklog.ParseLocation(st.URI())
	}
	p, rest := l.Root(), ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return sinklog.ParseLocation(filepath.Join(real, rest))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return sinklog.ParseLocation(l.Root())
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
