package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Creator is a Store that can write a new file as a stream, so that a file of a gigabyte costs
// no gigabyte of memory. The file gets its name only at Commit, with WriteFile's guarantees
// (atomic, create-only, durable).
type Creator interface {
	Create(ctx context.Context, path string) (NewFile, error)
}

// NewFile is a file being written by Create.
type NewFile interface {
	io.Writer
	// Commit makes the bytes written durable and gives them the file's name; it fails with an
	// error wrapping fs.ErrExist when the name exists (nothing is replaced).
	Commit() error
	// Abort drops what was written; after Commit it does nothing.
	Abort()
}

// Create starts a new file at path in s: streamed to the store where s is a Creator, else held
// in memory and written with WriteFile at Commit (every store works, the memory bound is the
// Creator's).
func Create(ctx context.Context, s Store, path string) (NewFile, error) {
	if c, ok := s.(Creator); ok {
		return c.Create(ctx, path)
	}
	return &bufferedFile{ctx: ctx, s: s, path: path}, nil
}

// bufferedFile is Create for a store without streaming writes.
type bufferedFile struct {
	ctx  context.Context
	s    Store
	path string
	buf  bytes.Buffer
}

func (b *bufferedFile) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *bufferedFile) Commit() error               { return b.s.WriteFile(b.ctx, b.path, b.buf.Bytes()) }
func (b *bufferedFile) Abort()                      { b.buf = bytes.Buffer{} }

// Create implements Creator: the bytes go to a temporary file (TempName) in the target's
// directory, which Commit fsyncs and publishes under the name without replacing one (as
// WriteFile's fallback does), then fsyncs the directory.
func (l *Local) Create(ctx context.Context, path string) (NewFile, error) {
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

// localFile is a Local file being written by Create.
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

func (lf *localFile) Abort() {
	if lf.done {
		return
	}
	lf.done = true
	lf.f.Close()
	os.Remove(lf.tmp)
}
