package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Local is a Store on the local file system.
//
// WriteFile, on Linux, writes an unnamed file in the target directory
// (open(2) with O_TMPFILE) and fsyncs it, so that the content is on disk
// before any name points to it, then gives it the final name with linkat(2),
// which fails with EEXIST when the name exists: no overwrite, and nothing for
// a crash to leave behind. Where the file system has no O_TMPFILE (or /proc
// is not mounted) it writes ".<name>.<uuid>.tmp" (TempName) instead, fsyncs it, and
// gives it the final name without ever replacing one: on Linux with
// renameat2(RENAME_NOREPLACE), which fails with EEXIST when the name exists
// and leaves no temporary file behind; elsewhere, or where the file system
// lacks the flag (EINVAL, ENOSYS), with a hard link (link(2) fails with EEXIST
// too) and the removal of the temporary file. Then it fsyncs the directory
// (best-effort: some file systems refuse), which makes the new name survive a
// power loss. File systems with neither renameat2's flag nor hard links (FAT,
// some FUSE mounts) make WriteFile fail rather than fall back to a rename that
// could overwrite. Delete fsyncs the directory after the unlink.
//
// The deferred variants (DeferredSyncer) skip the directory fsync; the
// directories they changed are fsynced before the next write's (deferred or
// not) or Delete's own change in another directory, so changes survive a
// power loss in order.
//
// Symlinks: reads follow them. WriteFile and Delete refuse (ErrInvalidPath)
// when the directory they would modify resolves, through symlinks, to a place
// outside the root; Delete of a symlink removes the link, never its target.
// The check is made just before the change, so it protects against stray
// links, not against a concurrent adversary swapping directories. Walk does
// not descend into symlinked directories; WalkLinks does, as the reads see
// them (ckpt cp copies what doctor and Spark read).
type Local struct {
	root string // absolute, OS separators
	uri  string

	mu sync.Mutex
	// unsynced holds the directories (OS paths) changed by deferred writes
	// and deletes and not fsynced since.
	unsynced map[string]struct{}
	// rootReal is the root with symlinks resolved, once known. A root moved
	// or re-linked later only makes checkInside refuse more, never less.
	rootReal string
	// inside holds the directories checkInside found inside the root, by
	// the identity (device, inode) their path had then: while the path still
	// names that directory the check is one lstat, not one per path
	// component (a batch writes and purges four files).
	inside map[string]fileID
	// named is set once the file system (or a missing /proc) refused an
	// unnamed temporary file: writes use a named one from then on.
	named atomic.Bool
	// concurrent, set once by orderOnce, says that the directory fsyncs a
	// new name waits for run alongside its file's (syncBeforeName).
	orderOnce  sync.Once
	concurrent bool
}

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

// NewLocal returns a Local rooted at root, made absolute against the working
// directory now. The root need not exist yet (WriteFile creates it, mode
// 0o755); if it exists it must be a directory.
func NewLocal(root string) (*Local, error) {
	if root == "" {
		return nil, fmt.Errorf("storage: empty local path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("storage: local path %q: %w", root, err)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("storage: %s is a file, not a checkpoint directory", root)
	}
	return &Local{root: abs, uri: root}, nil
}

// URI returns the root as given to NewLocal or Open.
func (l *Local) URI() string { return l.uri }

// Root returns the absolute root directory in OS form.
func (l *Local) Root() string { return l.root }

// resolve validates rel and returns its cleaned form and OS path.
func (l *Local) resolve(op Op, rel string, allowRoot bool) (string, string, error) {
	c, err := cleanPath(rel, allowRoot)
	if err != nil {
		return "", "", pathErr(op, l.uri, rel, err)
	}
	if c == "" {
		return c, l.root, nil
	}
	// Localize rejects names the OS would read differently (on Windows:
	// backslashes, drive letters, reserved names), which could otherwise
	// escape the root.
	lp, err := filepath.Localize(c)
	if err != nil {
		return "", "", pathErr(op, l.uri, rel, fmt.Errorf("%w: %q is not a valid local name: %v", ErrInvalidPath, rel, err))
	}
	return c, filepath.Join(l.root, lp), nil
}

// localErr strips the *fs.PathError layer (PathError names the location
// already) and maps "a parent is a file" to not-exist, as object stores do.
func localErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w (a parent is a file)", fs.ErrNotExist)
	}
	return err
}

func (l *Local) entry(rel string, fi fs.FileInfo) Entry {
	e := Entry{Path: rel, ModTime: fi.ModTime(), IsDir: fi.IsDir()}
	if !e.IsDir {
		e.Size = fi.Size()
	}
	return e
}

// listStatParallel is the listing size from which List stats entries
// concurrently: one stat is a few microseconds, so only large directories
// (a 100k-batch offsets/) gain from spreading them over the CPUs.
const listStatParallel = 2048

// List implements Store.
func (l *Local) List(ctx context.Context, dir string) ([]Entry, error) {
	c, p, err := l.resolve(OpList, dir, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpList, l.uri, c, err)
	}
	names, err := readDirNames(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return []Entry{}, nil
		}
		return nil, pathErr(OpList, l.uri, c, localErr(err))
	}
	// Sorted names give entries sorted by path: every path is c + "/" + name,
	// which is Join(c, name) as c is clean and a name is never "", "." or
	// ".." and has no "/".
	slices.Sort(names)
	prefix := ""
	if c != "" {
		prefix = c + "/"
	}
	out := make([]Entry, len(names))
	gone := make([]bool, len(names)) // removed since the directory was read
	// stat fills out[lo:hi] and returns the first error in that range.
	stat := func(lo, hi int) (int, error) {
		for i := lo; i < hi; i++ {
			// A directory of 300,000 batch files takes seconds to stat: a signal must not wait.
			if (i-lo)%1024 == 0 && ctx.Err() != nil {
				return i, ctx.Err()
			}
			fp := filepath.Join(p, names[i])
			size, mod, isDir, err := statEntry(fp, true) // follow symlinks
			if err != nil {
				if size, mod, isDir, err = statEntry(fp, false); err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						gone[i] = true
						continue
					}
					return i, err
				}
			}
			out[i] = Entry{Path: prefix + names[i], ModTime: mod, IsDir: isDir}
			if !isDir {
				out[i].Size = size
			}
		}
		return hi, nil
	}
	var (
		errAt  = len(names)
		errVal error
	)
	if workers := min(runtime.GOMAXPROCS(0), 8); len(names) < listStatParallel || workers < 2 {
		errAt, errVal = stat(0, len(names))
	} else {
		// Contiguous ranges, one per worker; the first error by position wins,
		// as in a sequential listing.
		per := (len(names) + workers - 1) / workers
		var mu sync.Mutex
		var wg sync.WaitGroup
		for lo := 0; lo < len(names); lo += per {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				if i, err := stat(lo, hi); err != nil {
					mu.Lock()
					if i < errAt {
						errAt, errVal = i, err
					}
					mu.Unlock()
				}
			}(lo, min(lo+per, len(names)))
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpList, l.uri, c, err)
	}
	if errVal != nil {
		return nil, pathErr(OpList, l.uri, Join(c, names[errAt]), localErr(errVal))
	}
	n := 0
	for i := range out {
		if !gone[i] {
			out[n] = out[i]
			n++
		}
	}
	clear(out[n:])
	return out[:n], nil
}

// readDirNames returns the names in directory p, unsorted, without "." and
// "..": what os.ReadDir lists, without building a DirEntry per name.
func readDirNames(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	return names, nil
}

// Walk implements Store.
func (l *Local) Walk(ctx context.Context, dir string) ([]Entry, error) {
	c, p, err := l.resolve(OpWalk, dir, true)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpWalk, l.uri, c, err)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return []Entry{}, nil
		}
		return nil, pathErr(OpWalk, l.uri, c, localErr(err))
	}
	var out []Entry
	err = filepath.WalkDir(p, func(fp string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && fp != p {
				return nil // removed while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if de.IsDir() {
			return nil
		}
		fi, err := os.Stat(fp) // follow file symlinks
		if err != nil {
			if fi, err = de.Info(); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
		}
		if fi.IsDir() {
			return nil // symlink to a directory: not descended
		}
		r, err := filepath.Rel(l.root, fp)
		if err != nil {
			return err
		}
		out = append(out, l.entry(filepath.ToSlash(r), fi))
		return nil
	})
	if err != nil {
		return nil, pathErr(OpWalk, l.uri, c, localErr(err))
	}
	if out == nil {
		out = []Entry{}
	}
	sortEntries(out)
	return out, nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, path string) (Entry, error) {
	c, p, err := l.resolve(OpStat, path, true)
	if err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, pathErr(OpStat, l.uri, c, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Entry{}, pathErr(OpStat, l.uri, c, localErr(err))
	}
	return l.entry(c, fi), nil
}

// ReadFile implements Store.
func (l *Local) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c, p, err := l.resolve(OpRead, path, false)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpRead, l.uri, c, err)
	}
	b, err := readFile(p)
	if err != nil {
		return nil, pathErr(OpRead, l.uri, c, localErr(err))
	}
	return b, nil
}

// Open implements Store; the reader is the *os.File.
func (l *Local) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	c, p, err := l.resolve(OpOpen, path, false)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpOpen, l.uri, c, err)
	}
	// O_NONBLOCK: opening a named pipe must not wait for a writer; the mode check refuses it.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, pathErr(OpOpen, l.uri, c, localErr(err))
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, pathErr(OpOpen, l.uri, c, errors.New("is a directory"))
	} else if err == nil && specialKind(fi.Mode()) != "" {
		f.Close()
		return nil, pathErr(OpOpen, l.uri, c, notRegular(specialKind(fi.Mode())))
	}
	return &ctxFile{f: f, ctx: ctx}, nil
}

// ctxFile is a local file whose reads stop once the context of Open is done, as a remote
// store's body does: a state read of a 1 GiB snapshot is a long loop of reads, and a signal
// must not wait for its end. It offers what callers use of an *os.File (ReadAt and Stat for
// SST files read a block at a time), and not WriteTo, which would read past the check.
type ctxFile struct {
	f   *os.File
	ctx context.Context
}

func (c *ctxFile) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.f.Read(b)
}

func (c *ctxFile) ReadAt(b []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.f.ReadAt(b, off)
}

func (c *ctxFile) Stat() (fs.FileInfo, error) { return c.f.Stat() }

func (c *ctxFile) Close() error { return c.f.Close() }

// checkInside returns an ErrInvalidPath error if dir (an OS path lexically
// under the root, existing or not) resolves through symlinks to a place
// outside the root. It checks the deepest existing ancestor, since what does
// not exist yet will be created as a plain directory below it.
func (l *Local) checkInside(dir string) error {
	fi, err := os.Lstat(dir)
	return l.checkInsideStat(dir, fi, err)
}

// checkInsideStat is checkInside given dir's Lstat.
func (l *Local) checkInsideStat(dir string, fi fs.FileInfo, lerr error) error {
	id, known := fileID{}, false
	if lerr == nil && fi.IsDir() {
		if id, known = identity(fi); known {
			l.mu.Lock()
			ok := l.inside[dir] == id
			l.mu.Unlock()
			if ok {
				return nil
			}
		}
	}
	l.mu.Lock()
	rootReal := l.rootReal
	l.mu.Unlock()
	if rootReal == "" {
		r, err := filepath.EvalSymlinks(l.root)
		if err != nil {
			return err
		}
		rootReal = r
		l.mu.Lock()
		l.rootReal = r
		l.mu.Unlock()
	}
	p := dir
	for {
		if _, err := os.Lstat(p); err == nil || p == l.root {
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s is a dangling symlink", ErrInvalidPath, p)
		}
		return err
	}
	rel, err := filepath.Rel(rootReal, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%w: %s resolves through a symlink to %s, outside the root %s", ErrInvalidPath, p, real, rootReal)
	}
	if known && p == dir {
		l.mu.Lock()
		if l.inside == nil {
			l.inside = make(map[string]fileID)
		}
		l.inside[dir] = id
		l.mu.Unlock()
	}
	return nil
}

// WriteFile implements Store (see the type's doc for the recipe).
func (l *Local) WriteFile(ctx context.Context, path string, data []byte) error {
	return l.write(ctx, path, writeBytes(data), false)
}

// WriteFileDeferred implements DeferredSyncer: WriteFile without the fsync
// of the directory.
func (l *Local) WriteFileDeferred(ctx context.Context, path string, data []byte) error {
	return l.write(ctx, path, writeBytes(data), true)
}

// Create implements Store: WriteFile's recipe, the content copied from src through one buffer.
func (l *Local) Create(ctx context.Context, path string, src Source) error {
	// An early answer before copying a large file; linkat or rename is what refuses.
	if c, p, err := l.resolve(OpWrite, path, false); err == nil {
		if _, err := os.Lstat(p); err == nil {
			return pathErr(OpWrite, l.uri, c, fs.ErrExist)
		}
	}
	return l.write(ctx, path, func(w io.Writer) error { return copySource(ctx, w, src) }, false)
}

// writeBytes is the fill of a write of data.
func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(data); return err }
}

// copySource writes src to w through a pooled buffer, stopping when ctx is done.
func copySource(ctx context.Context, w io.Writer, src Source) error {
	rc, err := src.Open(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	r := newExact(rc, src.Size)
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(*bp)
		if n > 0 {
			if _, werr := w.Write((*bp)[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (l *Local) write(ctx context.Context, path string, fill func(io.Writer) error, deferred bool) error {
	c, p, err := l.resolve(OpWrite, path, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpWrite, l.uri, c, err)
	}
	if err := l.writeFile(p, fill, deferred); err != nil {
		return pathErr(OpWrite, l.uri, c, err)
	}
	return nil
}

// writeFile publishes a new file p whose content fill writes to its descriptor.
func (l *Local) writeFile(p string, fill func(io.Writer) error, deferred bool) (err error) {
	dir, name := filepath.Split(p)
	dir = filepath.Clean(dir)
	if err := l.prepareDir(dir); err != nil {
		return err
	}
	// The directories of earlier deferred changes must be durable before this
	// name can be, deferred or not (so that changes survive in order); others
	// makes them so, and may be called again.
	others := func() {}
	if dirs := l.takeUnsynced(dir); len(dirs) > 0 {
		others = l.syncBeforeName(dir, dirs)
	}
	if !l.named.Load() {
		err := writeUnnamed(dir, p, fill, others)
		if !errors.Is(err, errNoUnnamed) {
			if err != nil {
				return localErr(err)
			}
			l.changed(dir, deferred)
			return nil
		}
		l.named.Store(true)
	}
	// Cheap early answer; publish is what guarantees no overwrite.
	if _, err := os.Lstat(p); err == nil {
		others()
		return fs.ErrExist
	}
	tmp := filepath.Join(dir, TempName(name))
	werr := writeSynced(tmp, fill)
	others()
	if werr != nil {
		if !errors.Is(werr, fs.ErrExist) {
			_ = os.Remove(tmp)
		}
		return localErr(werr)
	}
	tmpLeft, err := publish(tmp, p)
	if tmpLeft {
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove temp file %s: %w", tmp, localErr(rerr))
		}
	}
	if err != nil {
		return err
	}
	l.changed(dir, deferred)
	return nil
}

// Journalless reports whether dir is on a file system where Local runs the
// directory fsyncs a new name waits for alongside the new file's own: ext4
// without a journal (syncBeforeName). BenchmarkBatchVsTwoFsyncs's protocol
// floor follows it.
func Journalless(dir string) bool { return journalless(dir) }

// syncBeforeName returns the wait for the fsyncs of dirs that a new name in
// dir must follow. Where each fsync is its own cache flush (ext4 without a
// journal) they start now, alongside the new file's, and the wait receives
// their end. On a journaling file system that would cost a commit more: the
// directories' fsync would commit the journal before the new file's blocks
// are in it, and the file's fsync would wait for that commit and then make
// its own. There they run when the wait is first called, after the file's
// fsync, whose commit holds their changes already: each costs a flush, no
// commit.
func (l *Local) syncBeforeName(dir string, dirs []string) func() {
	l.orderOnce.Do(func() { l.concurrent = journalless(dir) })
	syncAll := func() {
		for _, d := range dirs {
			dirSync(d)
		}
	}
	if !l.concurrent {
		return sync.OnceFunc(syncAll)
	}
	c := make(chan struct{})
	go func() {
		defer close(c)
		syncAll()
	}()
	return func() { <-c }
}

// prepareDir creates dir (and the root) if needed and checks that it does
// not resolve outside the root. An existing directory, the common case, costs
// one lstat and one check.
func (l *Local) prepareDir(dir string) error {
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		return l.checkInsideStat(dir, fi, nil)
	}
	if err := os.MkdirAll(l.root, 0o755); err != nil {
		return localErr(err)
	}
	if err := l.checkInside(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return localErr(err)
	}
	// Re-check: MkdirAll follows any symlink that appeared meanwhile.
	return l.checkInside(dir)
}

// linkPublish is publish by a hard link: link(2) fails with EEXIST when the
// name exists, which makes it an atomic rename that never replaces; the
// temporary file stays for the caller to remove.
func linkPublish(tmp, p string) (tmpLeft bool, err error) {
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return true, fs.ErrExist
		}
		return true, fmt.Errorf("%w (atomic no-overwrite writes need renameat2's RENAME_NOREPLACE or hard links, which this file system may not support)", localErr(err))
	}
	return true, nil
}

// changed records a change of a name in dir: fsynced now, or, deferred, left
// for the next durable change or SyncDeferred.
func (l *Local) changed(dir string, deferred bool) {
	if deferred {
		l.mu.Lock()
		if l.unsynced == nil {
			l.unsynced = make(map[string]struct{})
		}
		l.unsynced[dir] = struct{}{}
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	delete(l.unsynced, dir) // the fsync below covers every earlier change in dir
	l.mu.Unlock()
	dirSync(dir)
}

// dirSync is syncDir; tests replace it to see the order of the fsyncs.
var dirSync = syncDir

// takeUnsynced returns the directories of the deferred changes, except
// except (whose fsync follows the caller's change), and forgets them: the
// caller fsyncs them.
func (l *Local) takeUnsynced(except string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var dirs []string
	for d := range l.unsynced {
		if d != except {
			dirs = append(dirs, d)
			delete(l.unsynced, d)
		}
	}
	return dirs
}

// syncUnsynced fsyncs the directories of the deferred changes, except except.
func (l *Local) syncUnsynced(except string) {
	for _, d := range l.takeUnsynced(except) {
		dirSync(d)
	}
}

// SyncDeferred implements DeferredSyncer.
func (l *Local) SyncDeferred(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return pathErr(OpWrite, l.uri, "", err)
	}
	l.syncUnsynced("")
	return nil
}

// Delete implements Store.
func (l *Local) Delete(ctx context.Context, path string) error {
	return l.remove(ctx, path, false)
}

// DeleteDeferred implements DeferredSyncer: Delete without the fsync of the
// directory.
func (l *Local) DeleteDeferred(ctx context.Context, path string) error {
	return l.remove(ctx, path, true)
}

func (l *Local) remove(ctx context.Context, path string, deferred bool) error {
	c, p, err := l.resolve(OpDelete, path, false)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpDelete, l.uri, c, err)
	}
	if _, err := os.Lstat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return pathErr(OpDelete, l.uri, c, localErr(err))
	}
	dir := filepath.Dir(p)
	if err := l.checkInside(dir); err != nil {
		return pathErr(OpDelete, l.uri, c, err)
	}
	if !deferred {
		l.syncUnsynced(dir)
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return pathErr(OpDelete, l.uri, c, localErr(err))
	}
	l.changed(dir, deferred)
	return nil
}
