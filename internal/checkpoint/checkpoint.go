// Package checkpoint is a lazily-read view of one Spark Structured Streaming
// checkpoint directory on a storage.Store.
//
// Load lists the root, offsets/ and commits/ (one listing each) and reads no
// batch file, so that opening a checkpoint with 100k batches costs what a
// directory listing costs. offsets/ and commits/ are listed by name only
// (storage.ListNames): no stat per batch file, so their entries carry no size
// or time; Stat the few files whose size or time matter. Individual files are read on request and cached,
// so the recovery planner, doctor and repair can share one Checkpoint without
// reading a file twice.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math/bits"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Directory and file names inside a checkpoint root (Spark's
// StreamingCheckpointConstants).
const (
	DirOffsets   = "offsets"
	DirCommits   = "commits"
	DirSources   = "sources"
	DirState     = "state"
	FileMetadata = "metadata"
)

// Checkpoint is one checkpoint root. It is safe for concurrent use.
type Checkpoint struct {
	// Store is where the checkpoint lives.
	Store storage.Store
	// Offsets and Commits are the listings of offsets/ and commits/.
	Offsets, Commits *Log
	// Root is the listing of the checkpoint root (files and directories).
	Root []storage.Entry

	mu       sync.Mutex
	offsets  map[int64]*offsetsEntry
	commits  map[int64]*commitEntry
	metadata *metadataEntry
	raw      map[string]*rawEntry
	// sizes are the sizes of files read or stat'ed (Size), by path.
	sizes map[string]int64
	// lists are the store's listings the overlays of c asked for (Overlay), by directory, and
	// walks its walks.
	lists, walks map[string][]storage.Entry
	// parent is set when c was loaded from over, an overlay made from parent
	// (Checkpoint.Overlay): the files over leaves alone are parent's, read once for both.
	parent *Checkpoint
	over   *Overlay
	// recent are the bytes of the small files c or its overlays read last, for the overlays of
	// c: a planner fills its actions' digests from files it read a moment before (each was read
	// again, a GET on S3). Bounded: recentFiles files of at most recentFileBytes, the same memory
	// at any number of batches (inspect --batches reads them all through c).
	recent      map[string][]byte
	recentOrder []string
}

const (
	recentFiles           = 64
	recentFileBytes int64 = 16 << 10 // at most 1 MiB in all
)

// remember keeps data as the content of rel for the overlays of c, if it is small.
func (c *Checkpoint) remember(rel string, data []byte) {
	if int64(len(data)) > recentFileBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recent == nil {
		c.recent = map[string][]byte{}
	}
	if _, ok := c.recent[rel]; !ok {
		if len(c.recentOrder) == recentFiles {
			delete(c.recent, c.recentOrder[0])
			c.recentOrder = append(c.recentOrder[:0], c.recentOrder[1:]...)
		}
		c.recentOrder = append(c.recentOrder, rel)
	}
	c.recent[rel] = data
}

// remembered is what remember kept of rel.
func (c *Checkpoint) remembered(rel string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.recent[rel]
	return d, ok
}

// shared is the checkpoint that reads rel for c: its parent when c's overlay leaves rel alone,
// else nil (c reads it itself).
func (c *Checkpoint) shared(rel string) *Checkpoint {
	if c.parent == nil || c.over.changed(rel) {
		return nil
	}
	return c.parent
}

// listing is the store's listing of dir (List, or Walk when walk) for the overlays of c: the
// root and the logs as c holds them, any other directory listed once and kept.
func (c *Checkpoint) listing(ctx context.Context, dir string, walk bool) ([]storage.Entry, error) {
	if !walk {
		switch dir {
		case "":
			return c.Root, nil
		case DirOffsets:
			return c.Offsets.entries(), nil
		case DirCommits:
			return c.Commits.entries(), nil
		}
	}
	memo := &c.lists
	if walk {
		memo = &c.walks
	}
	c.mu.Lock()
	es, ok := (*memo)[dir]
	c.mu.Unlock()
	if ok {
		return es, nil
	}
	var err error
	if walk {
		es, err = c.Store.Walk(ctx, dir)
	} else {
		es, err = c.Store.List(ctx, dir)
	}
	if err != nil {
		return nil, err // not kept: a retry may succeed
	}
	c.mu.Lock()
	if *memo == nil {
		*memo = map[string][]storage.Entry{}
	}
	(*memo)[dir] = es
	c.mu.Unlock()
	return es, nil
}

// setSize records the size of rel; c.mu is held.
func (c *Checkpoint) setSize(rel string, n int64) {
	if c.sizes == nil {
		c.sizes = map[string]int64{}
	}
	c.sizes[rel] = n
}

type offsetsEntry struct {
	seq *logformat.OffsetSeq
	err error
}

type commitEntry struct {
	c   *logformat.Commit
	err error
}

type metadataEntry struct {
	m   *logformat.StreamMetadata
	err error
}

type rawEntry struct {
	data []byte
	err  error
}

// Log is the listing of one HDFSMetadataLog directory (offsets/ or commits/).
//
// The batch ids are kept as runs of consecutive ids, not one by one: a log of a million
// contiguous batches costs one run, so that reading every batch file (inspect --batches) needs
// memory flat in the number of batches. Its methods answer by binary search over the runs.
type Log struct {
	// Dir is the directory name relative to the checkpoint root.
	Dir string
	// runs are the ids that have a batch file, ascending, disjoint and not adjacent. A batch
	// file is a plain file whose name Spark's isBatchFile accepts (a decimal long); directories
	// are excluded as Spark master does.
	runs []Run
	// before[i] is how many ids lie in runs[:i] (CountIn by binary search).
	before []int64
	n      int
	// alt holds the path of a batch file whose name is not the canonical
	// spelling of its id (File); the others are Path(id).
	alt map[int64]string
	// ids is IDs' slice, built on first use only.
	idsOnce sync.Once
	ids     []int64
	// Temps are leftovers of interrupted atomic writes (.N.<uuid>.tmp).
	Temps []storage.Entry
	// Checksums are Hadoop local-filesystem checksum files (.N.crc).
	Checksums []storage.Entry
	// Others are every other entry: unknown names, numeric directories.
	Others []storage.Entry
	// After Load, the entries above carry Path and IsDir only (Size and
	// ModTime are zero, see storage.ListNames): Stat those that matter.
}

// Run is an inclusive run of consecutive batch ids, First to Last.
type Run struct{ First, Last int64 }

// Len returns how many batch ids have a batch file.
func (l *Log) Len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// Runs returns the batch ids as maximal runs of consecutive ids, ascending. The slice is
// shared: do not modify it.
func (l *Log) Runs() []Run {
	if l == nil {
		return nil
	}
	return l.runs
}

// IDs returns the batch ids that have a batch file, ascending. The slice is built on the first
// call (8 bytes an id) and shared: do not modify it. Walk All or Runs where a million ids need
// not be held at once.
func (l *Log) IDs() []int64 {
	if l == nil {
		return nil
	}
	l.idsOnce.Do(func() {
		l.ids = make([]int64, 0, l.n)
		for id := range l.All() {
			l.ids = append(l.ids, id)
		}
	})
	return l.ids
}

// All yields the batch ids in ascending order.
func (l *Log) All() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for _, r := range l.Runs() {
			for id := r.First; ; id++ {
				if !yield(id) {
					return
				}
				if id == r.Last {
					break
				}
			}
		}
	}
}

// Backward yields the batch ids in descending order.
func (l *Log) Backward() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		rs := l.Runs()
		for i := len(rs) - 1; i >= 0; i-- {
			for id := rs[i].Last; ; id-- {
				if !yield(id) {
					return
				}
				if id == rs[i].First {
					break
				}
			}
		}
	}
}

// runAtOrAbove returns the index of the first run whose Last is at or above id.
func (l *Log) runAtOrAbove(id int64) int {
	return sort.Search(len(l.runs), func(i int) bool { return l.runs[i].Last >= id })
}

// File returns the listing entry of batch id's file (its path; after Load no
// size or time), if the log has one.
func (l *Log) File(id int64) (storage.Entry, bool) {
	if !l.Has(id) {
		return storage.Entry{}, false
	}
	if p, ok := l.alt[id]; ok {
		return storage.Entry{Path: p}, true
	}
	return storage.Entry{Path: l.Path(id)}, true
}

// FilePath returns the path of batch id's file as listed ("offsets/7"), ""
// if the log has none.
func (l *Log) FilePath(id int64) string {
	e, _ := l.File(id)
	return e.Path
}

// Latest returns the largest batch id, as Spark's getLatestBatchId does.
func (l *Log) Latest() (int64, bool) {
	if l == nil || len(l.runs) == 0 {
		return 0, false
	}
	return l.runs[len(l.runs)-1].Last, true
}

// Earliest returns the smallest batch id on disk.
func (l *Log) Earliest() (int64, bool) {
	if l == nil || len(l.runs) == 0 {
		return 0, false
	}
	return l.runs[0].First, true
}

// Has reports whether the batch file for id exists.
func (l *Log) Has(id int64) bool {
	if l == nil {
		return false
	}
	i := l.runAtOrAbove(id)
	return i < len(l.runs) && l.runs[i].First <= id
}

// Prev returns the largest on-disk id below id (Spark's
// getPrevBatchFromStorage, used by async progress tracking).
func (l *Log) Prev(id int64) (int64, bool) {
	if l == nil {
		return 0, false
	}
	i := l.runAtOrAbove(id)
	if i < len(l.runs) && l.runs[i].First < id {
		return id - 1, true
	}
	if i == 0 {
		return 0, false
	}
	return l.runs[i-1].Last, true
}

// Next returns the smallest on-disk id at or above id.
func (l *Log) Next(id int64) (int64, bool) {
	if l == nil {
		return 0, false
	}
	i := l.runAtOrAbove(id)
	if i == len(l.runs) {
		return 0, false
	}
	return max(id, l.runs[i].First), true
}

// CountIn returns how many batch ids on disk lie in [from, to], by binary
// search: a span of 2^63 ids costs two searches.
func (l *Log) CountIn(from, to int64) int {
	if l == nil || from > to {
		return 0
	}
	return int(l.countBelow(to, true) - l.countBelow(from, false))
}

// countBelow counts the ids below x (at or below x when inclusive).
func (l *Log) countBelow(x int64, inclusive bool) int64 {
	i := l.runAtOrAbove(x)
	if i == len(l.runs) {
		return int64(l.n)
	}
	n := l.before[i]
	if r := l.runs[i]; r.First <= x {
		n += x - r.First
		if inclusive {
			n++
		}
	}
	return n
}

// each calls fn with every entry of the listing the log was built from: its batch files (as
// listed), then Temps, Checksums and Others; the order is unspecified, as storage.EachName's.
func (l *Log) each(fn func(path string, isDir bool) error) error {
	for id := range l.All() {
		p, ok := l.alt[id]
		if !ok {
			p = l.Path(id)
		}
		if err := fn(p, false); err != nil {
			return err
		}
	}
	for _, es := range [][]storage.Entry{l.Temps, l.Checksums, l.Others} {
		for _, e := range es {
			if err := fn(e.Path, e.IsDir); err != nil {
				return err
			}
		}
	}
	return nil
}

// entries is the listing the log was built from, sorted by path, with no size or time.
func (l *Log) entries() []storage.Entry {
	out := make([]storage.Entry, 0, l.n+len(l.Temps)+len(l.Checksums)+len(l.Others))
	_ = l.each(func(p string, isDir bool) error {
		out = append(out, storage.Entry{Path: p, IsDir: isDir})
		return nil
	})
	slices.SortFunc(out, byPath)
	return out
}

// Path returns the store-relative path of batch id ("offsets/7").
func (l *Log) Path(id int64) string {
	return l.Dir + "/" + strconv.FormatInt(id, 10)
}

// ChecksumFor returns the .crc entry that belongs to batch file name (e.g.
// "7" → ".7.crc"), if the listing has one.
func (l *Log) ChecksumFor(name string) (storage.Entry, bool) {
	if l == nil {
		return storage.Entry{}, false
	}
	want := l.Dir + "/." + name + ".crc"
	for _, e := range l.Checksums {
		if e.Path == want {
			return e, true
		}
	}
	return storage.Entry{}, false
}

// Load lists the checkpoint root (List), offsets/ and commits/ (ListNames):
// exactly three listings, no stat per batch file, no file read.
func Load(ctx context.Context, s storage.Store) (*Checkpoint, error) {
	return LoadAt(ctx, s, nil)
}

// LoadAt is Load reusing the root listing of loc, what Detect or Require found at s a moment
// before, so that checking the location and loading it list the root once (on S3 a request
// fewer per command). A nil loc, or one of another location, lists the root as Load does.
//
// On an overlay made from a checkpoint (Checkpoint.Overlay) nothing is listed: the listings are
// that checkpoint's with the overlay's changes, and the files the overlay leaves alone are read
// through it, once for every checkpoint loaded from its overlays.
func LoadAt(ctx context.Context, s storage.Store, loc *Location) (*Checkpoint, error) {
	var root []storage.Entry
	ov, _ := s.(*Overlay)
	if ov != nil && ov.from != nil {
		var err error
		if root, err = ov.List(ctx, ""); err != nil {
			return nil, fmt.Errorf("list checkpoint root: %w", err)
		}
	} else if loc != nil && loc.root != nil && loc.URI == s.URI() {
		root = loc.root
	} else {
		var err error
		if root, err = s.List(ctx, ""); err != nil {
			return nil, fmt.Errorf("list checkpoint root: %w", err)
		}
	}
	offsets, err := loadLog(ctx, s, DirOffsets)
	if err != nil {
		return nil, err
	}
	commits, err := loadLog(ctx, s, DirCommits)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{
		Store:   s,
		Offsets: offsets,
		Commits: commits,
		Root:    root,
		offsets: map[int64]*offsetsEntry{},
		commits: map[int64]*commitEntry{},
		raw:     map[string]*rawEntry{},
	}
	if ov != nil && ov.from != nil {
		c.parent, c.over = ov.from, ov
	}
	return c, nil
}

func loadLog(ctx context.Context, s storage.Store, dir string) (*Log, error) {
	b := newLogBuilder(dir)
	progress.Stage(ctx, "listing "+dir+"/")
	err := storage.EachName(ctx, s, dir, func(p string, isDir bool) error {
		b.add(storage.Entry{Path: p, IsDir: isDir}) // copies what it keeps
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return b.done(), nil
}

// NewLog classifies a directory listing the way Spark's HDFSMetadataLog does.
// It is exported so that callers holding a listing (tests, the engine) can
// build a Log without another List call.
func NewLog(dir string, entries []storage.Entry) *Log {
	b := newLogBuilder(dir)
	for _, e := range entries {
		b.add(e)
	}
	return b.done()
}

// logBuilder classifies entries one at a time, keeping of a batch file only its id, in an id set
// of a bit per id where ids are dense (a million contiguous batches cost 128 KB while they are
// listed, in whatever order the store lists them), and its path only when its name is not the
// canonical spelling of the id.
type logBuilder struct {
	l   *Log
	ids idSet
	alt map[int64][]string // non-canonical names of an id ("+5", "007")
	buf []byte
}

func newLogBuilder(dir string) *logBuilder {
	return &logBuilder{l: &Log{Dir: dir}}
}

// kept copies an entry's path, which storage.EachName lends only for the call.
func kept(e storage.Entry) storage.Entry {
	e.Path = strings.Clone(e.Path)
	return e
}

func (b *logBuilder) add(e storage.Entry) {
	name := e.Path
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	n := logformat.ParseName(name)
	switch {
	case e.IsDir:
		b.l.Others = append(b.l.Others, kept(e))
	case n.Kind == logformat.NameBatch:
		b.buf = strconv.AppendInt(b.buf[:0], n.Batch, 10)
		if string(b.buf) == name && len(e.Path) == len(b.l.Dir)+1+len(name) && e.Path[:len(b.l.Dir)] == b.l.Dir {
			b.ids.add(n.Batch)
			return
		}
		// Not in the set yet: done tells whether the canonical name was listed too.
		if b.alt == nil {
			b.alt = map[int64][]string{}
		}
		b.alt[n.Batch] = append(b.alt[n.Batch], strings.Clone(e.Path))
	case n.Kind == logformat.NameTemp:
		b.l.Temps = append(b.l.Temps, kept(e))
	case n.Kind == logformat.NameChecksum:
		b.l.Checksums = append(b.l.Checksums, kept(e))
	default:
		b.l.Others = append(b.l.Others, kept(e))
	}
}

func (b *logBuilder) done() *Log {
	l := b.l
	// Two spellings of one id ("5" and "+5"): keep the first by name, as one
	// file can back a batch id; the others are reported as oddities.
	for id, paths := range b.alt {
		canonical := l.Dir + "/" + strconv.FormatInt(id, 10)
		all := slices.Clone(paths)
		if b.ids.has(id) {
			all = append(all, canonical)
		}
		slices.Sort(all)
		if all[0] != canonical {
			if l.alt == nil {
				l.alt = map[int64]string{}
			}
			l.alt[id] = all[0]
		}
		for _, p := range all[1:] {
			l.Others = append(l.Others, storage.Entry{Path: p})
		}
	}
	for id := range b.alt {
		b.ids.add(id)
	}
	l.runs, l.n = b.ids.runs()
	l.before = make([]int64, len(l.runs))
	var n int64
	for i, r := range l.runs {
		l.before[i] = n
		n += r.Last - r.First + 1
	}
	b.ids = idSet{}
	for _, es := range [][]storage.Entry{l.Temps, l.Checksums, l.Others} {
		if !slices.IsSortedFunc(es, byPath) {
			slices.SortFunc(es, byPath)
		}
	}
	return l
}

// idSet is a set of int64 in blocks of 2^16 consecutive ids, each a list of its low 16 bits
// (unsorted) while it holds few ids and a bitmap (8 KB) once it holds many. Listings come in
// directory order (hash order on ext4, "10" before "9" on object stores), so runs cannot be
// built as names arrive, and a plain slice of ids costs 8 bytes an id.
type idSet struct {
	blocks map[int64]*idBlock
}

type idBlock struct {
	low  []uint16 // possibly repeated, while bits is nil
	bits *[1 << 10]uint64
}

// blockList is the length at which a block turns into a bitmap: 4096 uint16 are as large.
const blockList = 1 << 12

func (s *idSet) add(id int64) {
	if s.blocks == nil {
		s.blocks = map[int64]*idBlock{}
	}
	k, lo := id>>16, uint16(id)
	b := s.blocks[k]
	if b == nil {
		b = &idBlock{}
		s.blocks[k] = b
	}
	if b.bits != nil {
		b.bits[lo>>6] |= 1 << (lo & 63)
		return
	}
	b.low = append(b.low, lo)
	if len(b.low) == blockList {
		b.bits = new([1 << 10]uint64)
		for _, v := range b.low {
			b.bits[v>>6] |= 1 << (v & 63)
		}
		b.low = nil
	}
}

func (s *idSet) has(id int64) bool {
	b := s.blocks[id>>16]
	if b == nil {
		return false
	}
	lo := uint16(id)
	if b.bits != nil {
		return b.bits[lo>>6]&(1<<(lo&63)) != 0
	}
	return slices.Contains(b.low, lo)
}

// runs returns the set as maximal runs of consecutive ids, ascending, and how many ids it holds.
func (s *idSet) runs() ([]Run, int) {
	keys := make([]int64, 0, len(s.blocks))
	for k := range s.blocks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Run
	n := 0
	emit := func(id int64) {
		n++
		if len(out) > 0 && out[len(out)-1].Last == id-1 {
			out[len(out)-1].Last = id
			return
		}
		out = append(out, Run{id, id})
	}
	for _, k := range keys {
		b, base := s.blocks[k], k<<16
		if b.bits == nil {
			slices.Sort(b.low)
			for i, v := range b.low {
				if i == 0 || v != b.low[i-1] {
					emit(base + int64(v))
				}
			}
			continue
		}
		for w, word := range b.bits {
			for word != 0 {
				emit(base + int64(w*64+bits.TrailingZeros64(word)))
				word &= word - 1
			}
		}
	}
	return out, n
}

func byPath(a, b storage.Entry) int { return strings.Compare(a.Path, b.Path) }

// HasMetadata reports whether the root listing has the metadata file.
func (c *Checkpoint) HasMetadata() bool {
	for _, e := range c.Root {
		if e.Path == FileMetadata && !e.IsDir {
			return true
		}
	}
	return false
}

// ReadOffsets reads and parses offsets/id. A missing file gives an error
// wrapping fs.ErrNotExist; a parse failure is a *logformat.Error whose File
// is the store-relative path ("offsets/7"). Results are cached.
func (c *Checkpoint) ReadOffsets(ctx context.Context, id int64) (*logformat.OffsetSeq, error) {
	c.mu.Lock()
	e, ok := c.offsets[id]
	c.mu.Unlock()
	if ok {
		return e.seq, e.err
	}
	p := c.Offsets.Path(id)
	if sh := c.shared(p); sh != nil {
		return sh.ReadOffsets(ctx, id)
	}
	data, err := c.readLog(ctx, c.Offsets, id)
	if err != nil && !isTooLarge(err) {
		// I/O errors are not cached: a retry may succeed.
		return nil, err
	}
	var seq *logformat.OffsetSeq
	if err == nil {
		seq, err = logformat.ParseOffsets(p, data)
	}
	c.mu.Lock()
	c.offsets[id] = &offsetsEntry{seq: seq, err: err}
	c.mu.Unlock()
	return seq, err
}

// ReadCommit reads and parses commits/id, with the same conventions as
// ReadOffsets.
func (c *Checkpoint) ReadCommit(ctx context.Context, id int64) (*logformat.Commit, error) {
	c.mu.Lock()
	e, ok := c.commits[id]
	c.mu.Unlock()
	if ok {
		return e.c, e.err
	}
	p := c.Commits.Path(id)
	if sh := c.shared(p); sh != nil {
		return sh.ReadCommit(ctx, id)
	}
	data, err := c.readLog(ctx, c.Commits, id)
	if err != nil && !isTooLarge(err) {
		return nil, err
	}
	var cm *logformat.Commit
	if err == nil {
		cm, err = logformat.ParseCommit(p, data)
	}
	c.mu.Lock()
	c.commits[id] = &commitEntry{c: cm, err: err}
	c.mu.Unlock()
	return cm, err
}

// readLog reads log file id of l with readCapped.
func (c *Checkpoint) readLog(ctx context.Context, l *Log, id int64) ([]byte, error) {
	return c.readCapped(ctx, l.Path(id))
}

// readCapped is ReadCapped that remembers the size it read (Size answers without a request).
func (c *Checkpoint) readCapped(ctx context.Context, p string) ([]byte, error) {
	data, err := ReadCapped(ctx, c.Store, p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.setSize(p, int64(len(data)))
	c.mu.Unlock()
	c.remember(p, data)
	return data, nil
}

// ReadCapped reads p whole, refusing (logformat.TooLarge) a file over logformat.MaxFileBytes
// after reading at most one byte more: a corrupt file of hundreds of megabytes must not be read
// whole, and listings no longer carry sizes (no stat per batch file).
func ReadCapped(ctx context.Context, s storage.Store, p string) ([]byte, error) {
	rc, err := s.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, logformat.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > logformat.MaxFileBytes {
		return nil, logformat.TooLarge(p, int64(len(data)))
	}
	return data, nil
}

// Size is the size of the file rel as this view knows it: the length of what ReadOffsets,
// ReadCommit or ReadFile read, else a Stat (whose answer is kept). A check that needs the size of
// a file the restart planner already read costs no request (doctor's empty-file check sent a
// HEAD for offsets/L, offsets/L-1 and commits/C on S3). A missing file gives an error wrapping
// fs.ErrNotExist.
func (c *Checkpoint) Size(ctx context.Context, rel string) (int64, error) {
	c.mu.Lock()
	n, ok := c.sizes[rel]
	if !ok {
		if e, hit := c.raw[rel]; hit && e.err == nil {
			n, ok = int64(len(e.data)), true
		}
	}
	c.mu.Unlock()
	if ok {
		return n, nil
	}
	if sh := c.shared(rel); sh != nil {
		return sh.Size(ctx, rel)
	}
	e, err := c.Store.Stat(ctx, rel)
	if err != nil {
		return 0, err
	}
	if e.IsDir {
		return 0, fmt.Errorf("%s is a directory", rel)
	}
	c.mu.Lock()
	c.setSize(rel, e.Size)
	c.mu.Unlock()
	return e.Size, nil
}

func isTooLarge(err error) bool {
	var le *logformat.Error
	return errors.As(err, &le) && le.Kind == logformat.KindLineTooLong
}

// ReadMetadata reads and parses the root metadata file. A missing file gives
// an error wrapping fs.ErrNotExist.
func (c *Checkpoint) ReadMetadata(ctx context.Context) (*logformat.StreamMetadata, error) {
	c.mu.Lock()
	e := c.metadata
	c.mu.Unlock()
	if e != nil {
		return e.m, e.err
	}
	if sh := c.shared(FileMetadata); sh != nil {
		return sh.ReadMetadata(ctx)
	}
	data, err := c.readCapped(ctx, FileMetadata)
	if err != nil && !isTooLarge(err) {
		return nil, err
	}
	var m *logformat.StreamMetadata
	if err == nil {
		m, err = logformat.ParseStreamMetadata(FileMetadata, data)
	}
	c.mu.Lock()
	c.metadata = &metadataEntry{m: m, err: err}
	c.mu.Unlock()
	return m, err
}

// ReadFile reads any file below the root (e.g. "sources/0/0"), cached. A
// missing file gives an error wrapping fs.ErrNotExist, and the absence is
// cached too, since a checkpoint view describes one moment.
func (c *Checkpoint) ReadFile(ctx context.Context, rel string) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.raw[rel]
	c.mu.Unlock()
	if ok {
		return e.data, e.err
	}
	if sh := c.shared(rel); sh != nil {
		return sh.ReadFile(ctx, rel)
	}
	data, err := c.readCapped(ctx, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !isTooLarge(err) {
		return nil, err
	}
	c.mu.Lock()
	c.raw[rel] = &rawEntry{data: data, err: err}
	c.mu.Unlock()
	return data, err
}

// SparkPath renders a store-relative path the way Spark prints it in its
// messages: Hadoop qualifies local paths as "file:/abs/path" and keeps the
// scheme of other file systems ("s3a://bucket/prefix/offsets/7").
func (c *Checkpoint) SparkPath(rel string) string {
	return SparkPath(c.Store.URI(), rel)
}

// SparkPath renders rel below the checkpoint location uri as Spark prints it.
func SparkPath(uri, rel string) string {
	root := strings.TrimRight(uri, "/")
	switch {
	case strings.HasPrefix(root, "file:"):
		if u, err := url.Parse(root); err == nil && u.Path != "" {
			root = "file:" + u.Path
		}
	case strings.Contains(root, "://"):
		// s3://, s3a://, mem://: Hadoop keeps the URI as given.
	default:
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		root = "file:" + filepath.ToSlash(root)
	}
	if rel == "" {
		return root
	}
	return root + "/" + rel
}

// ReadManyCapped is storage.ReadMany with each file read by ReadCapped: a file over
// logformat.MaxFileBytes costs at most that much, and does not stop the others. Its
// *logformat.Error is in tooLarge[i] (tooLarge is nil when no file was over the limit) and
// data[i] is nil.
func ReadManyCapped(ctx context.Context, s storage.Store, paths []string, parallelism int) (data [][]byte, tooLarge []error, err error) {
	c := &cappedReads{Store: s, errs: map[string]error{}}
	if data, err = storage.ReadMany(ctx, c, paths, parallelism); err != nil {
		return nil, nil, err
	}
	if len(c.errs) > 0 {
		tooLarge = make([]error, len(paths))
		for i, p := range paths {
			tooLarge[i] = c.errs[p]
		}
	}
	return data, tooLarge, nil
}

// cappedReads reads files with ReadCapped and keeps the refusals aside, for ReadManyCapped.
type cappedReads struct {
	storage.Store
	mu   sync.Mutex
	errs map[string]error
}

func (c *cappedReads) ReadFile(ctx context.Context, p string) ([]byte, error) {
	data, err := ReadCapped(ctx, c.Store, p)
	if err != nil && isTooLarge(err) {
		c.mu.Lock()
		c.errs[p] = err
		c.mu.Unlock()
		return nil, nil
	}
	return data, err
}
