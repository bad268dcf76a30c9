package journal

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to to, failing with fs.ErrExist rather than replacing to
// (renameat2 RENAME_NOREPLACE, Linux 3.15+ on ext4, xfs, btrfs, tmpfs …). A file system that
// does not support the flag gives errNoReplaceUnsupported.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return errNoReplaceUnsupported
	}
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
}
