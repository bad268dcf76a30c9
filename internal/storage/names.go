package storage

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"github.com/ckpt-dev/ckpt/internal/progress"
)

// NameLister is implemented by stores that can list a directory's names more
// cheaply than List (Local: no stat per entry, no sort, no slice of entries).
// Call ListNames or EachName, which fall back to List for the others.
type NameLister interface {
	// EachName has the contract of the function EachName.
	EachName(ctx context.Context, dir string, fn func(path string, isDir bool) error) error
}

// EachName calls fn for each direct child of dir, as s.List would list it (a
// missing dir, or a dir that is a file, calls fn never), but in no particular
// order and with only the path and kind: whatever the store knows, no size or
// time. path is only valid during the call (as bufio.Scanner.Bytes): fn
// copies it (strings.Clone) to keep it. An error from fn stops the listing and
// is returned. It is the listing
// of directories that grow with the number of batches (offsets/, commits/):
// Local reads names and kinds from the directory alone, in directory order,
// the cost of `ls -f`, instead of a stat per entry and a sort (sorting a
// million names costs more than reading them), and holds no entry itself, so
// a caller that keeps only batch ids lists a million files in little memory.
func EachName(ctx context.Context, s Store, dir string, fn func(path string, isDir bool) error) error {
	if nl, ok := s.(NameLister); ok {
		if m := progress.From(ctx); m != nil {
			inner := fn
			fn = func(path string, isDir bool) error {
				m.Add(progress.Listed, 1)
				return inner(path, isDir)
			}
		}
		return nl.EachName(ctx, dir, fn)
	}
	es, err := s.List(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := fn(e.Path, e.IsDir); err != nil {
			return err
		}
	}
	return nil
}

// ListNames collects EachName into entries whose Size and ModTime are zero
// on every store, so no caller can come to rely on one store's extras. The
// order is unspecified; sort what needs an order.
func ListNames(ctx context.Context, s Store, dir string) ([]Entry, error) {
	out := []Entry{}
	err := EachName(ctx, s, dir, func(p string, isDir bool) error {
		out = append(out, Entry{Path: strings.Clone(p), IsDir: isDir})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachName implements NameLister: one read of the directory (getdents64 on
// Linux, 64 KiB at a time), entry kinds from the directory itself (d_type);
// only a symlink, or an entry whose kind the file system does not record, is
// stat'ed, to learn whether it leads to a directory, as List follows
// symlinks.
func (l *Local) EachName(ctx context.Context, dir string, fn func(path string, isDir bool) error) error {
	c, p, err := l.resolve(OpList, dir, true)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return pathErr(OpList, l.uri, c, err)
	}
	prefix := ""
	if c != "" {
		prefix = c + "/"
	}
	var ferr error
	pathBuf := []byte(prefix)
	err = readDirTyped(p, func(name string, kind uint8) bool {
		isDir := kind == kindDir
		if kind == kindLink || kind == kindUnknown {
			fp := filepath.Join(p, name)
			_, _, d, err := statEntry(fp, true)
			if err != nil {
				if _, _, d, err = statEntry(fp, false); err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						return true // removed since the read
					}
					ferr = pathErr(OpList, l.uri, prefix+name, localErr(err))
					return false
				}
			}
			isDir = d
		}
		// The path is built in one reused buffer: nothing is allocated per
		// name (fn copies what it keeps).
		pathBuf = append(pathBuf[:len(prefix)], name...)
		ferr = fn(unsafe.String(&pathBuf[0], len(pathBuf)), isDir)
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return pathErr(OpList, l.uri, c, localErr(err))
	}
	return nil
}

// EachName implements NameLister, with the faults and counters of List
// (OpList): a fault-injecting store must not hide which listing ran.
func (f *Faulty) EachName(ctx context.Context, dir string, fn func(path string, isDir bool) error) error {
	if _, err := f.before(ctx, OpList, dir); err != nil {
		return err
	}
	f.mu.Lock()
	limited := f.listLimit >= 0 || f.listFilter != nil
	f.mu.Unlock()
	if !limited {
		return EachName(ctx, f.inner, dir, fn)
	}
	es, err := ListNames(ctx, f.inner, dir)
	if err != nil {
		return err
	}
	for _, e := range f.listing(OpList, dir, es) {
		if err := fn(e.Path, e.IsDir); err != nil {
			return err
		}
	}
	return nil
}
