package engine

import (
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// atomicWriteB is storage.Local's create-only write, for BenchmarkBatchVsTwoFsyncs's protocol
// floor: an unnamed file (O_TMPFILE) written and fsync'd, other (the fsyncs it must follow) waited for, then linked.
func atomicWriteB(b *testing.B, dir, name string, data []byte, other func()) {
	fd, err := unix.Open(dir, unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, data); err != nil {
		b.Fatal(err)
	}
	if err := unix.Fsync(fd); err != nil {
		b.Fatal(err)
	}
	other()
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, filepath.Join(dir, name), unix.AT_SYMLINK_FOLLOW); err != nil {
		b.Fatal(err)
	}
}
