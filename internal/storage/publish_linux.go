//go:build linux

package storage

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// renameNoReplace is renameat2(RENAME_NOREPLACE): it renames oldpath to
// newpath in one step and fails with EEXIST if newpath exists. A variable so
// that tests can make it fail as a file system without the flag does.
var renameNoReplace = func(oldpath, newpath string) error {
	return unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
}

// publish gives the fsync'd temporary file tmp the name p unless p exists
// (fs.ErrExist). It reports whether tmp is still there for the caller to
// remove: after the rename it is not, so the write has no temporary file to
// delete. Where the file system or the kernel lacks RENAME_NOREPLACE (EINVAL,
// ENOSYS, EOPNOTSUPP: older kernels, some FUSE and network file systems) it
// falls back to a hard link, which also refuses an existing name.
func publish(tmp, p string) (tmpLeft bool, err error) {
	err = renameNoReplace(tmp, p)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, unix.EEXIST):
		return true, fs.ErrExist
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return linkPublish(tmp, p)
	}
	return true, err
}
