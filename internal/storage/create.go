package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
)

// NewFile is a file being written as a stream by CreateWriter.
type NewFile interface {
	io.Writer
	// Commit makes the bytes written durable and gives them the file's name; it fails with an
	// error wrapping fs.ErrExist when the name exists (nothing is replaced).
	Commit() error
	// Abort drops what was written; after Commit it does nothing.
	Abort()
	// Rename gives the file, before Commit, the name path instead, in the same directory: a
	// file named by a digest of what it holds is streamed once and named when written. It
	// fails with an error wrapping fs.ErrExist when path exists.
	Rename(path string) error
}

// CreateWriter starts a new file at path in s for a writer that produces it as a stream (an
// encoder), so that a file of a gigabyte costs no gigabyte of memory. On local disk the bytes go
// to a temporary file beside the target; on every other store they are spooled to a local
// temporary file that Commit hands to s.Create (which may read it more than once to retry). The
// file gets its name only at Commit, with WriteFile's guarantees (atomic, create-only, durable).
func CreateWriter(ctx context.Context, s Store, path string) (NewFile, error) {
	if l, ok := s.(*Local); ok {
		return l.createWriter(ctx, path)
	}
	f, err := os.CreateTemp("", "ckpt-spool-*")
	if err != nil {
		return nil, fmt.Errorf("storage: spool %s: %w", path, err)
	}
	return &spooledFile{ctx: ctx, s: s, path: path, f: f}, nil
}

// spooledFile is CreateWriter for a store other than local disk.
type spooledFile struct {
	ctx  context.Context
	s    Store
	path string
	f    *os.File
	size int64
	done bool
}

func (b *spooledFile) Write(p []byte) (int, error) {
	n, err := b.f.Write(p)
	b.size += int64(n)
	return n, err
}

func (b *spooledFile) Commit() error {
	if b.done {
		return errors.New("storage: file committed or aborted already")
	}
	defer b.Abort()
	return b.s.Create(b.ctx, b.path, ReaderAtSource(b.f, b.size))
}

func (b *spooledFile) Rename(p string) error {
	if b.done {
		return errors.New("storage: file committed or aborted already")
	}
	if pathpkg.Dir(p) != pathpkg.Dir(b.path) {
		return fmt.Errorf("storage: rename %s to %s: not the same directory", b.path, p)
	}
	if _, err := b.s.Stat(b.ctx, p); err == nil {
		return pathErr(OpWrite, b.s.URI(), p, fs.ErrExist)
	}
	b.path = p
	return nil
}

func (b *spooledFile) Abort() {
	b.done = true
	if b.f == nil {
		return
	}
	b.f.Close()
	os.Remove(b.f.Name())
	b.f = nil
}

// createWriter is CreateWriter on local disk: the bytes go to a temporary file (TempName) in
// the target's directory, which Commit fsyncs and publishes under the name without replacing
// one (as WriteFile's fallback does), then fsyncs the directory.
func (l *Local) createWriter(ctx context.Context, path string) (NewFile, error) {
	c, p, err := l.resolve(OpWrite, path, false)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, pathErr(OpWrite, l.uri, c, err)
	}
	dir, name := filepath.Split(p)
	dir = filepath.Clean(dir)
	if err := l.prepareDir(dir); err != nil {
		return nil, pathErr(OpWrite, l.uri, c, err)
	}
	if _, err := os.Lstat(p); err == nil {
		return nil, pathErr(OpWrite, l.uri, c, fs.ErrExist)
	}
	tmp := filepath.Join(dir, TempName(name))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, pathErr(OpWrite, l.uri, c, localErr(err))
	}
	return &localFile{l: l, rel: c, p: p, dir: dir, tmp: tmp, f: f}, nil
}

// localFile is a Local file being written by CreateWriter.
type localFile struct {
	l            *Local
	rel, p, dir  string
	tmp          string
	f            *os.File
	done, failed bool
}

func (lf *localFile) Write(b []byte) (int, error) {
	n, err := lf.f.Write(b)
	if err != nil {
		lf.failed = true
		return n, pathErr(OpWrite, lf.l.uri, lf.rel, localErr(err))
	}
	return n, nil
}

func (lf *localFile) Commit() (err error) {
	if lf.done {
		return errors.New("storage: file committed or aborted already")
	}
	lf.done = true
	defer func() {
		if err != nil {
			err = pathErr(OpWrite, lf.l.uri, lf.rel, err)
		}
	}()
	if lf.failed {
		lf.f.Close()
		os.Remove(lf.tmp)
		return errors.New("an earlier write failed")
	}
	if err := lf.f.Sync(); err != nil {
		lf.f.Close()
		os.Remove(lf.tmp)
		return localErr(err)
	}
	if err := lf.f.Close(); err != nil {
		os.Remove(lf.tmp)
		return localErr(err)
	}
	// Earlier deferred changes must be durable before this name can be.
	lf.l.syncUnsynced(lf.dir)
	tmpLeft, err := publish(lf.tmp, lf.p)
	if tmpLeft {
		if rerr := os.Remove(lf.tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove temp file %s: %w", lf.tmp, localErr(rerr))
		}
	}
	if err != nil {
		return err
	}
	lf.l.changed(lf.dir, false)
	return nil
}

func (lf *localFile) Rename(path string) error {
	if lf.done {
		return errors.New("storage: file committed or aborted already")
	}
	c, p, err := lf.l.resolve(OpWrite, path, false)
	if err != nil {
		return err
	}
	if filepath.Dir(p) != lf.dir {
		return pathErr(OpWrite, lf.l.uri, c, fmt.Errorf("not in the directory of %s", lf.rel))
	}
	if _, err := os.Lstat(p); err == nil {
		return pathErr(OpWrite, lf.l.uri, c, fs.ErrExist)
	}
	lf.rel, lf.p = c, p
	return nil
}

func (lf *localFile) Abort() {
	if lf.done {
		return
	}
	lf.done = true
	lf.f.Close()
	os.Remove(lf.tmp)
}
