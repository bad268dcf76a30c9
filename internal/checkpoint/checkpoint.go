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
type Log struct {
	// Dir is the directory name relative to the checkpoint root.
	Dir string
	// IDs are the batch ids that have a batch file, ascending. A batch file
	// is a plain file whose name Spark's isBatchFile accepts (a decimal
	// long); directories are excluded as Spark master does.
	IDs []int64
	// alt holds the path of a batch file whose name is not the canonical
	// spelling of its id (File); the others are Path(id). A million batches
	// cost their ids only.
	alt map[int64]string
	// Temps are leftovers of interrupted atomic writes (.N.<uuid>.tmp).
	Temps []storage.Entry
	// Checksums are Hadoop local-filesystem checksum files (.N.crc).
	Checksums []storage.Entry
	// Others are every other entry: unknown names, numeric directories.
	Others []storage.Entry
	// After Load, the entries above carry Path and IsDir only (Size and
	// ModTime are zero, see storage.ListNames): Stat those that matter.
}

// File returns the listing entry of batch id's file (its path; after Load no
// size or time), if the log has one.
func (l *Log) File(id int64) (storage.Entry, bool) {
	if l == nil {
		return storage.Entry{}, false
	}
	if _, ok := slices.BinarySearch(l.IDs, id); !ok {
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
	if l == nil || len(l.IDs) == 0 {
		return 0, false
	}
	return l.IDs[len(l.IDs)-1], true
}

// Earliest returns the smallest batch id on disk.
func (l *Log) Earliest() (int64, bool) {
	if l == nil || len(l.IDs) == 0 {
		return 0, false
	}
	return l.IDs[0], true
}

// Has reports whether the batch file for id exists.
func (l *Log) Has(id int64) bool {
	_, ok := l.File(id)
	return ok
}

// Prev returns the largest on-disk id below id (Spark's
// getPrevBatchFromStorage, used by async progress tracking).
func (l *Log) Prev(id int64) (int64, bool) {
	if l == nil {
		return 0, false
	}
	i := sort.Search(len(l.IDs), func(i int) bool { return l.IDs[i] >= id })
	if i == 0 {
		return 0, false
	}
	return l.IDs[i-1], true
}

// Next returns the smallest on-disk id at or above id.
func (l *Log) Next(id int64) (int64, bool) {
	if l == nil {
		return 0, false
	}
	i := sort.Search(len(l.IDs), func(i int) bool { return l.IDs[i] >= id })
	if i == len(l.IDs) {
		return 0, false
	}
	return l.IDs[i], true
}

// CountIn returns how many batch ids on disk lie in [from, to], by binary
// search: a span of 2^63 ids costs two searches.
func (l *Log) CountIn(from, to int64) int {
	if l == nil || from > to {
		return 0
	}
	lo := sort.Search(len(l.IDs), func(i int) bool { return l.IDs[i] >= from })
	hi := sort.Search(len(l.IDs), func(i int) bool { return l.IDs[i] > to })
	return hi - lo
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
func LoadAt(ctx context.Context, s storage.Store, loc *Location) (*Checkpoint, error) {
	var root []storage.Entry
	if loc != nil && loc.root != nil && loc.URI == s.URI() {
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
	return &Checkpoint{
		Store:   s,
		Offsets: offsets,
		Commits: commits,
		Root:    root,
		offsets: map[int64]*offsetsEntry{},
		commits: map[int64]*commitEntry{},
		raw:     map[string]*rawEntry{},
	}, nil
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

// logBuilder classifies entries one at a time, keeping of a batch file only
// its id (8 bytes) unless its name is not the canonical spelling of the id:
// a million-batch log costs 8 MB, not a million entries.
type logBuilder struct {
	l *Log
	// ids are collected in chunks of idChunk, then copied once into Log.IDs:
	// growing one slice would leave a trail of ever larger copies behind.
	ids [][]int64
	n   int
	alt map[int64][]string // non-canonical names of an id ("+5", "007")
	buf []byte
}

const idChunk = 1 << 15

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
		if len(b.ids) == 0 || len(b.ids[len(b.ids)-1]) == idChunk {
			b.ids = append(b.ids, make([]int64, 0, idChunk))
		}
		b.ids[len(b.ids)-1] = append(b.ids[len(b.ids)-1], n.Batch)
		b.n++
		b.buf = strconv.AppendInt(b.buf[:0], n.Batch, 10)
		if string(b.buf) != name || len(e.Path) != len(b.l.Dir)+1+len(name) || e.Path[:len(b.l.Dir)] != b.l.Dir {
			if b.alt == nil {
				b.alt = map[int64][]string{}
			}
			b.alt[n.Batch] = append(b.alt[n.Batch], strings.Clone(e.Path))
		}
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
	// Listings come in directory order (storage.EachName) or by name, not by
	// number ("10" < "9").
	ids := make([]int64, 0, b.n)
	for _, c := range b.ids {
		ids = append(ids, c...)
	}
	b.ids = nil
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	// Two spellings of one id ("5" and "+5"): keep the first by name, as one
	// file can back a batch id; the others are reported as oddities.
	for id, paths := range b.alt {
		if len(paths) == 1 && !canonicalToo(ids, id, paths) {
			if l.alt == nil {
				l.alt = map[int64]string{}
			}
			l.alt[id] = paths[0]
			continue
		}
		all := slices.Clone(paths)
		if canonicalToo(ids, id, paths) {
			all = append(all, l.Dir+"/"+strconv.FormatInt(id, 10))
		}
		slices.Sort(all)
		if all[0] != l.Dir+"/"+strconv.FormatInt(id, 10) {
			if l.alt == nil {
				l.alt = map[int64]string{}
			}
			l.alt[id] = all[0]
		}
		for _, p := range all[1:] {
			l.Others = append(l.Others, storage.Entry{Path: p})
		}
	}
	l.IDs = slices.Compact(ids)
	for _, es := range [][]storage.Entry{l.Temps, l.Checksums, l.Others} {
		if !slices.IsSortedFunc(es, byPath) {
			slices.SortFunc(es, byPath)
		}
	}
	return l
}

// canonicalToo reports whether id was also listed under its canonical name:
// it was added more times than its alternative names.
func canonicalToo(ids []int64, id int64, alt []string) bool {
	i, _ := slices.BinarySearch(ids, id)
	n := 0
	for ; i < len(ids) && ids[i] == id; i++ {
		n++
	}
	return n > len(alt)
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
