package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Overlay is a storage.Store that shows a base store with some files added,
// replaced or hidden, without touching the base. It lets the planner answer
// "what would a restart do if these files existed?" (replay --what-if, repair
// verification) through the same code path as a real checkpoint.
//
// Writes and deletes go to the overlay only. Safe for concurrent use.
type Overlay struct {
	base storage.Store
	// from is the checkpoint of base this overlay was made from (Checkpoint.Overlay), nil for
	// NewOverlay: its listings answer the base's, and a checkpoint loaded from the overlay
	// shares its reads of the files the overlay leaves alone.
	from *Checkpoint

	mu      sync.Mutex
	files   map[string][]byte
	deleted map[string]bool
}

// NewOverlay returns an overlay over base holding files (store-relative
// path → content); files may be nil.
func NewOverlay(base storage.Store, files map[string][]byte) *Overlay {
	o := &Overlay{base: base, files: map[string][]byte{}, deleted: map[string]bool{}}
	for p, d := range files {
		o.files[path.Clean(p)] = d
	}
	return o
}

// Set adds or replaces a file in the overlay.
func (o *Overlay) Set(p string, data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p = path.Clean(p)
	o.files[p] = data
	delete(o.deleted, p)
}

// Hide makes p look absent, whether or not the base has it.
func (o *Overlay) Hide(p string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p = path.Clean(p)
	delete(o.files, p)
	o.deleted[p] = true
}

// URI is the base's URI, so that messages name the real checkpoint.
func (o *Overlay) URI() string { return o.base.URI() }

func (o *Overlay) snapshot() (map[string][]byte, map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	files := make(map[string][]byte, len(o.files))
	for k, v := range o.files {
		files[k] = v
	}
	deleted := make(map[string]bool, len(o.deleted))
	for k := range o.deleted {
		deleted[k] = true
	}
	return files, deleted
}

func fileEntry(p string, data []byte) storage.Entry {
	return storage.Entry{Path: p, Size: int64(len(data)), ModTime: time.Time{}}
}

func cleanDir(dir string) string {
	if dir == "" || dir == "." || dir == "/" {
		return ""
	}
	return strings.Trim(path.Clean(dir), "/")
}

// Overlay returns an overlay over c's store, with files, whose base listings are c's: the root
// and the logs as c listed them, every other directory listed once for all the overlays of c.
// A planner that tries changes step after step (repair's strategies, a purge, a rewind) loads
// the overlay again at each step: those loads list nothing and read only what the overlay
// changed or c has not read yet (on S3 the root and each log directory were listed again, page
// by page, at every step).
func (c *Checkpoint) Overlay(files map[string][]byte) *Overlay {
	o := NewOverlay(c.Store, files)
	o.from = c
	return o
}

// baseList is the base's listing of dir: c's when the overlay was made from a checkpoint c,
// else a List of the base.
func (o *Overlay) baseList(ctx context.Context, dir string) ([]storage.Entry, error) {
	if o.from == nil {
		return o.base.List(ctx, dir)
	}
	return o.from.listing(ctx, cleanDir(dir), false)
}

// List merges the base listing of dir with the overlay's files and the
// directories they imply.
func (o *Overlay) List(ctx context.Context, dir string) ([]storage.Entry, error) {
	base, err := o.baseList(ctx, dir)
	if err != nil {
		return nil, err
	}
	dir = cleanDir(dir)
	files, deleted := o.snapshot()
	byPath := map[string]storage.Entry{}
	for _, e := range base {
		if deleted[e.Path] {
			continue
		}
		byPath[e.Path] = e
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	for p, d := range files {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		rest := p[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			child := prefix + rest[:i]
			if _, ok := byPath[child]; !ok {
				byPath[child] = storage.Entry{Path: child, IsDir: true}
			}
			continue
		}
		byPath[p] = fileEntry(p, d)
	}
	out := make([]storage.Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// EachName implements storage.NameLister. For a log of the checkpoint the overlay was made from
// it names that log's files (no listing, no slice of a hundred thousand entries) with the
// overlay's changes; for any other directory it is List's.
func (o *Overlay) EachName(ctx context.Context, dir string, fn func(path string, isDir bool) error) error {
	d := cleanDir(dir)
	var l *Log
	if o.from != nil {
		switch d {
		case DirOffsets:
			l = o.from.Offsets
		case DirCommits:
			l = o.from.Commits
		}
	}
	if l == nil {
		return storage.EachName(ctx, struct{ storage.Store }{o}, dir, fn) // through List
	}
	files, deleted := o.snapshot()
	// What the overlay adds directly below d, and the directories its deeper files imply.
	added := map[string]bool{} // path → isDir
	for p := range files {
		rest, ok := strings.CutPrefix(p, d+"/")
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			added[d+"/"+rest[:i]] = true
		} else {
			added[p] = false
		}
	}
	err := l.each(func(p string, isDir bool) error {
		if deleted[p] {
			return nil
		}
		if dirAdded, ok := added[p]; ok {
			if !dirAdded {
				return nil // the overlay's file, named below
			}
			delete(added, p) // a directory the base has: named once, as the base's
		}
		return fn(p, isDir)
	})
	if err != nil {
		return err
	}
	for p, isDir := range added {
		if err := fn(p, isDir); err != nil {
			return err
		}
	}
	return nil
}

// Walk merges the base walk of dir with the overlay's files below it.
func (o *Overlay) Walk(ctx context.Context, dir string) ([]storage.Entry, error) {
	var base []storage.Entry
	var err error
	if o.from != nil {
		base, err = o.from.listing(ctx, cleanDir(dir), true)
	} else {
		base, err = o.base.Walk(ctx, dir)
	}
	if err != nil {
		return nil, err
	}
	dir = cleanDir(dir)
	files, deleted := o.snapshot()
	byPath := map[string]storage.Entry{}
	for _, e := range base {
		if !deleted[e.Path] {
			byPath[e.Path] = e
		}
	}
	for p, d := range files {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			byPath[p] = fileEntry(p, d)
		}
	}
	out := make([]storage.Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// changed reports whether the overlay holds or hides p: a file it leaves alone reads as the
// base's.
func (o *Overlay) changed(p string) bool {
	_, in, hidden := o.lookup(p)
	return in || hidden
}

func (o *Overlay) lookup(p string) (data []byte, inOverlay, hidden bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p = path.Clean(p)
	if d, ok := o.files[p]; ok {
		return d, true, false
	}
	return nil, false, o.deleted[p]
}

func notExist(op, p string) error {
	return fmt.Errorf("%s %s: %w", op, p, fs.ErrNotExist)
}

// Stat describes p from the overlay, else from the base.
func (o *Overlay) Stat(ctx context.Context, p string) (storage.Entry, error) {
	d, in, hidden := o.lookup(p)
	switch {
	case in:
		return fileEntry(path.Clean(p), d), nil
	case hidden:
		return storage.Entry{}, notExist("stat", p)
	}
	return o.base.Stat(ctx, p)
}

// ReadFile reads p from the overlay, else from the base.
func (o *Overlay) ReadFile(ctx context.Context, p string) ([]byte, error) {
	d, in, hidden := o.lookup(p)
	switch {
	case in:
		return bytes.Clone(d), nil
	case hidden:
		return nil, notExist("read", p)
	}
	if o.from == nil {
		return o.base.ReadFile(ctx, p)
	}
	p = path.Clean(p)
	if d, ok := o.from.remembered(p); ok {
		return bytes.Clone(d), nil
	}
	d, err := o.base.ReadFile(ctx, p)
	if err == nil {
		o.from.remember(p, bytes.Clone(d))
	}
	return d, err
}

// Open streams p from the overlay, else from the base.
func (o *Overlay) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	d, in, hidden := o.lookup(p)
	switch {
	case in:
		return io.NopCloser(bytes.NewReader(d)), nil
	case hidden:
		return nil, notExist("open", p)
	}
	if o.from == nil {
		return o.base.Open(ctx, p)
	}
	p = path.Clean(p)
	if d, ok := o.from.remembered(p); ok {
		return io.NopCloser(bytes.NewReader(d)), nil
	}
	rc, err := o.base.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	// A small file is read here and remembered; a larger one streams on from what was read,
	// which is never more than the caller's cap on a file (logformat.MaxFileBytes) reads.
	limit := min(recentFileBytes, logformat.MaxFileBytes)
	head, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		rc.Close()
		return nil, err
	}
	if int64(len(head)) <= limit {
		rc.Close()
		o.from.remember(p, head)
		return io.NopCloser(bytes.NewReader(head)), nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), rc), rc}, nil
}

// WriteFile creates p in the overlay, refusing (fs.ErrExist) when p exists in
// the overlay or the base, like every Store.
func (o *Overlay) WriteFile(ctx context.Context, p string, data []byte) error {
	if _, err := o.Stat(ctx, p); err == nil {
		return fmt.Errorf("write %s: %w", p, fs.ErrExist)
	}
	o.Set(p, bytes.Clone(data))
	return nil
}

// Create is WriteFile of src's bytes: the overlay holds its files in memory.
func (o *Overlay) Create(ctx context.Context, p string, src storage.Source) error {
	if _, err := o.Stat(ctx, p); err == nil {
		return fmt.Errorf("write %s: %w", p, fs.ErrExist)
	}
	rc, err := src.Open(ctx)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, src.Size+1))
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if int64(len(data)) != src.Size {
		return fmt.Errorf("write %s: %w", p, storage.ErrSourceSize)
	}
	return o.WriteFile(ctx, p, data)
}

// Delete hides p; the base is not touched.
func (o *Overlay) Delete(_ context.Context, p string) error {
	o.Hide(p)
	return nil
}

var (
	_ storage.Store      = (*Overlay)(nil)
	_ storage.NameLister = (*Overlay)(nil)
)
