package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// LinkWalker is a Store whose Walk leaves out what lies behind symlinked directories (Local),
// with a walk that follows them as its reads do.
type LinkWalker interface {
	// WalkLinks is Walk, descending into symlinked directories as List and ReadFile see them;
	// links lists the paths (below the root) of the symlinked directories it followed. A link
	// back to one of its own ancestors is an error wrapping ErrSymlinkCycle.
	WalkLinks(ctx context.Context, dir string) (entries []Entry, links []string, err error)
}

// ErrSymlinkCycle marks a symlinked directory that leads back to a directory above it: a walk
// that followed it would never end.
var ErrSymlinkCycle = errors.New("symlink cycle")

// WalkReadable is every file below dir that the store's reads see: WalkLinks where the store
// has it, else Walk (object stores have no links). A copy made from it holds what doctor and
// Spark read, not what Walk's narrower view shows.
func WalkReadable(ctx context.Context, st Store, dir string) (entries []Entry, links []string, err error) {
	if lw, ok := st.(LinkWalker); ok {
		return lw.WalkLinks(ctx, dir)
	}
	es, err := st.Walk(ctx, dir)
	return es, nil, err
}

// WalkLinks implements LinkWalker. Reads of Local follow symlinks anywhere (only writes and
// deletes are confined to the root), so the walk does too; a dangling link is listed as a
// file, as Walk lists it.
func (l *Local) WalkLinks(ctx context.Context, dir string) ([]Entry, []string, error) {
	c, p, err := l.resolve(OpWalk, dir, true)
	if err != nil {
		return nil, nil, err
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return []Entry{}, []string{}, nil
		}
		return nil, nil, pathErr(OpWalk, l.uri, c, localErr(err))
	}
	w := &linkWalk{l: l, out: []Entry{}, links: []string{}}
	var above []fileID
	if id, ok := identity(fi); ok {
		above = append(above, id)
	}
	if err := w.dir(ctx, c, p, above); err != nil {
		return nil, nil, err
	}
	sortEntries(w.out)
	slices.Sort(w.links)
	return w.out, w.links, nil
}

// maxLinkDepth bounds WalkLinks where directories have no identity to tell a cycle by; a
// checkpoint is a few levels deep (state/<op>/<part>/…).
const maxLinkDepth = 64

type linkWalk struct {
	l     *Local
	out   []Entry
	links []string
}

// dir walks directory p (rel below the root); above holds the identities of p and the
// directories it lies in along this walk.
func (w *linkWalk) dir(ctx context.Context, rel, p string, above []fileID) error {
	if err := ctx.Err(); err != nil {
		return pathErr(OpWalk, w.l.uri, rel, err)
	}
	names, err := readDirNames(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && len(above) > 1 {
			return nil // removed while walking
		}
		return pathErr(OpWalk, w.l.uri, rel, localErr(err))
	}
	for i, name := range names {
		// A directory of 300,000 batch files takes seconds to stat: a signal must not wait.
		if i%1024 == 0 && ctx.Err() != nil {
			return pathErr(OpWalk, w.l.uri, rel, ctx.Err())
		}
		r, fp := Join(rel, name), filepath.Join(p, name)
		fi, err := os.Stat(fp) // follow links
		if err != nil {
			if fi, err = os.Lstat(fp); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return pathErr(OpWalk, w.l.uri, r, localErr(err))
			}
		}
		if !fi.IsDir() {
			w.out = append(w.out, w.l.entry(r, fi))
			continue
		}
		if lfi, err := os.Lstat(fp); err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			w.links = append(w.links, r)
		}
		id, ok := identity(fi)
		if ok && slices.Contains(above, id) {
			target, _ := filepath.EvalSymlinks(fp)
			return pathErr(OpWalk, w.l.uri, r, fmt.Errorf("%w: it leads back to %s, a directory it lies in", ErrSymlinkCycle, target))
		}
		next := append(slices.Clip(above), id)
		if !ok && len(next) > maxLinkDepth {
			// No identities on this system: depth is the only sign of a cycle.
			return pathErr(OpWalk, w.l.uri, r, fmt.Errorf("%w: more than %d directories deep", ErrSymlinkCycle, maxLinkDepth))
		}
		if err := w.dir(ctx, r, fp, next); err != nil {
			return err
		}
	}
	return nil
}
