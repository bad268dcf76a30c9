//go:build linux

package storage

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// errNoUnnamed says that writeUnnamed cannot work here: the file system has
// no O_TMPFILE, or /proc is not mounted to link the file by.
var errNoUnnamed = errors.New("no unnamed temporary files here")

// openUnnamed and linkUnnamed are open(O_TMPFILE) and the linkat(2) that
// names the file; variables so that tests can fail them as a file system
// without O_TMPFILE, a system without /proc, or a concurrent writer do.
var (
	openUnnamed = func(dir string) (int, error) {
		return unix.Open(dir, unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
	}
	// Through /proc/self/fd: linkat's AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH.
	linkUnnamed = func(fd int, p string) error {
		return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
	}
)

// writeUnnamed writes the content (fill) to an unnamed file in dir, fsyncs it, waits for
// others (the fsyncs that must precede the name), and links it as p; linkat
// fails with EEXIST when p exists (fs.ErrExist), so nothing is replaced. It
// costs one directory change less than a named temporary file and a rename,
// and a crash leaves nothing: the kernel frees an unnamed file with its last
// descriptor. errNoUnnamed: nothing was written or named, use a named file.
func writeUnnamed(dir, p string, fill func(io.Writer) error, others func()) error {
	fd, err := openUnnamed(dir)
	if err != nil {
		// EISDIR: kernels before 3.11 read O_TMPFILE as O_DIRECTORY.
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			return errNoUnnamed
		}
		others()
		return err
	}
	// The name is given, or not, only after the fsync; a close error then
	// loses nothing, so it is not one.
	defer unix.Close(fd)
	err = fill(fdWriter(fd))
	if err == nil {
		err = fileSync(fd)
	}
	others()
	if err != nil {
		return err
	}
	switch err := linkUnnamed(fd, p); {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return fs.ErrExist
	case errors.Is(err, unix.ENOENT) && !procFD():
		return errNoUnnamed
	default:
		return err
	}
}

// procFD reports whether /proc/self/fd is there to link unnamed files by; a
// variable for the tests.
var procFD = func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
}

// journalless reports whether dir is on an ext4 (or ext2/ext3) file system
// mounted without a journal; false when anything is unknown.
func journalless(dir string) bool {
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil || sfs.Type != unix.EXT4_SUPER_MAGIC {
		return false
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return false
	}
	return ext4NoJournal("/sys", unix.Major(st.Dev), unix.Minor(st.Dev))
}

// ext4NoJournal reads, under the sysfs root sys, the journal_task of the ext4
// file system on device major:minor: "<none>" means no journal (ext4 shows it
// since Linux 5.x; absent, the answer is false).
func ext4NoJournal(sys string, major, minor uint32) bool {
	dev, err := os.Readlink(filepath.Join(sys, "dev", "block", strconv.FormatUint(uint64(major), 10)+":"+strconv.FormatUint(uint64(minor), 10)))
	if err != nil {
		return false
	}
	task, err := os.ReadFile(filepath.Join(sys, "fs", "ext4", filepath.Base(dev), "journal_task"))
	return err == nil && strings.TrimSpace(string(task)) == "<none>"
}
