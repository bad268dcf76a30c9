//go:build unix

package storage

import (
	"io"
	"syscall"
)

// syncDir fsyncs a directory so a new or removed name survives a crash.
// Best-effort: the change is already visible, and some file systems refuse
// fsync on directories; Spark itself never does it. Plain system calls: the
// *os.File machinery (non-blocking mode, poller registration) costs more than
// the rest for a descriptor that lives for one fsync.
func syncDir(dir string) {
	fd, err := openRetry(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = syscall.Fsync(fd)
	_ = syscall.Close(fd)
}

// writeSynced creates name (it must not exist), writes its content with fill and fsyncs it,
// with plain system calls as syncDir.
// Errors are the bare errno, as localErr leaves them.
func writeSynced(name string, fill func(io.Writer) error) error {
	fd, err := openRetry(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	if err := fill(fdWriter(fd)); err != nil {
		syscall.Close(fd)
		return err
	}
	if err := fileSync(fd); err != nil {
		syscall.Close(fd)
		return err
	}
	return syscall.Close(fd)
}

// fileSync is fsync(2) of a new file's descriptor; tests replace it to see the
// order of the fsyncs.
var fileSync = syscall.Fsync

// fdWriter writes to a descriptor with writeAll.
type fdWriter int

func (w fdWriter) Write(b []byte) (int, error) {
	if err := writeAll(int(w), b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// writeAll writes data to fd, again after EINTR and short writes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		data = data[n:]
	}
	return nil
}

func openRetry(name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Open(name, flags, mode)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
