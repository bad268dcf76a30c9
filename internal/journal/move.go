// Moving files into the backup by rename on a local file system, and linking them back on undo.

package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// mover moves a deleted file into the backup with one rename when the file and the backup are on
// the same local file system: no bytes are copied and no file is written, which is what makes a
// purge of 40,000 files take seconds instead of minutes. The directories it touched are synced
// once each at the end (sync), not once per file. Anywhere else (an object store, a --backup-dir
// on another device) the copy and delete of the store interface do the same job.
type mover struct {
	st     stores
	loc    Location
	backup string // the repair directory on local disk, "" when not local
	roots  map[storage.Store]string
	local  bool
	dirs   map[string]bool // directories whose entries changed since the last sync
	// crossDevice is set once a rename failed with EXDEV: the rest use copies.
	crossDevice bool
	// noReplaceUnsupported is set once the file system refused a rename that does not replace.
	noReplaceUnsupported bool
	// made are the directories known to exist (created or seen by this mover).
	made map[string]bool
}

func newMover(st stores, loc Location) *mover {
	m := &mover{st: st, loc: loc, roots: map[storage.Store]string{}, dirs: map[string]bool{}, made: map[string]bool{}}
	root, ok := localRoot(loc.Store)
	if !ok {
		return m
	}
	m.backup = filepath.Join(root, filepath.FromSlash(loc.Dir))
	for _, s := range []storage.Store{st.cp, st.sink} {
		if s == nil {
			continue
		}
		if r, ok := localRoot(s); ok {
			m.roots[s] = r
		}
	}
	m.local = len(m.roots) > 0 && m.roots[st.cp] != ""
	return m
}

// can reports whether a's file can be moved (and linked back) rather than copied.
func (m *mover) can(a Action) bool {
	if m.backup == "" || m.crossDevice || a.Before.Absent() || a.Op == OpReplace {
		return false
	}
	_, ok := m.roots[m.st.of(a)]
	return ok
}

func (m *mover) paths(ja *Entry) (file, backup string) {
	root := m.roots[m.st.of(ja.Action)]
	return filepath.Join(root, filepath.FromSlash(ja.Path)), filepath.Join(m.backup, filepath.FromSlash(ja.Backup))
}

// moveInto renames ja's file into its backup. A backup already there (an earlier run copied or
// moved it, and the file came back or was never removed) must be the original; the file is then
// deleted. A rename across devices falls back to copy and delete, for this file and the rest.
func (m *mover) moveInto(ctx context.Context, ja *Entry) error {
	file, backup := m.paths(ja)
	if err := m.mkdirAll(filepath.Dir(backup)); err != nil {
		return err
	}
	var err error
	switch {
	case m.crossDevice || crossDeviceForTest:
		err = syscall.EXDEV
	case !m.noReplaceUnsupported && !noReplaceUnsupportedForTest:
		// One system call that never replaces a backup (no Lstat of it first).
		err = renameNoReplace(file, backup)
		if errors.Is(err, errNoReplaceUnsupported) {
			m.noReplaceUnsupported = true
			err = m.renameChecked(file, backup)
		}
	default:
		err = m.renameChecked(file, backup)
	}
	if errors.Is(err, fs.ErrExist) {
		if _, d, err := readDigest(ctx, m.loc.Store, storage.Join(m.loc.Dir, ja.Backup)); err != nil || d != ja.Before {
			return fmt.Errorf("the backup %s is not the original %s of %s (%v); refusing to continue", backup, ja.Before.Short(), ja.Path, err)
		}
		return del(ctx, m.st.of(ja.Action), ja.Path)
	}
	if errors.Is(err, syscall.EXDEV) {
		m.crossDevice = true
		data, d, rerr := readDigest(ctx, m.st.of(ja.Action), ja.Path)
		if rerr != nil {
			return rerr
		}
		if d != ja.Before {
			return fmt.Errorf("%w: %s is now %s, expected %s", ErrChanged, ja.Path, d.Short(), ja.Before.Short())
		}
		if err := ensureBackup(ctx, m.loc, *ja, data); err != nil {
			return err
		}
		return del(ctx, m.st.of(ja.Action), ja.Path)
	}
	if err != nil {
		return err
	}
	m.dirs[filepath.Dir(file)] = true
	m.dirs[filepath.Dir(backup)] = true
	return nil
}

// renameChecked renames file to backup where the system cannot refuse to replace: an existing
// backup gives fs.ErrExist (a check and a rename, two system calls, under the repair lock).
func (m *mover) renameChecked(file, backup string) error {
	if _, err := os.Lstat(backup); err == nil {
		return fs.ErrExist
	}
	return os.Rename(file, backup)
}

// noReplaceUnsupportedForTest makes the mover check and rename, as where renameat2 is missing
// (tests).
var noReplaceUnsupportedForTest bool

// crossDeviceForTest makes every rename fail as across devices (tests).
var crossDeviceForTest bool

// linkBack restores ja's file as a hard link to its backup (linked): the link fails rather than
// replace a file, and the backup stays. Where links are refused it writes the bytes (data)
// instead.
func (m *mover) linkBack(ctx context.Context, ja *Entry, data []byte) (linked bool, err error) {
	file, backup := m.paths(ja)
	if err := m.mkdirAll(filepath.Dir(file)); err != nil {
		return false, err
	}
	err = os.Link(backup, file)
	if err == nil {
		m.dirs[filepath.Dir(file)] = true
		return true, nil
	}
	if errors.Is(err, fs.ErrExist) {
		return false, err
	}
	return false, put(ctx, m.st.of(ja.Action), ja.Path, data)
}

// mkdirAll creates dir and the directories above it that are missing, remembering each new one's
// parent for the sync.
func (m *mover) mkdirAll(dir string) error {
	if m.made[dir] {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		m.made[dir] = true
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := m.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	m.dirs[parent] = true
	m.made[dir] = true
	return nil
}

// sync makes every rename and link durable: one fsync per directory whose entries changed.
func (m *mover) sync() error {
	for d := range m.dirs {
		f, err := os.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
		delete(m.dirs, d)
	}
	return nil
}

// errNoReplaceUnsupported is renameNoReplace's answer where the system has no such rename.
var errNoReplaceUnsupported = errors.New("rename without replacing is not supported here")
