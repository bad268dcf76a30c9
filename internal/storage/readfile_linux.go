package storage

import (
	"slices"
	"syscall"
	"time"
)

// readFile is os.ReadFile with the same contents and errors (local.go strips
// the *fs.PathError layer from both), minus the *os.File machinery: a plain
// blocking descriptor skips the non-blocking mode switch and the poller
// registration os.Open attempts for every file, which cost more than the
// read itself for the small files of a checkpoint log. A file that fits in
// a small stack buffer is read without the fstat os.ReadFile sizes its
// buffer with; like os.ReadFile, reading always goes on to end of file.
//
// A named pipe or a device is refused (ErrNotRegular): it is opened without blocking, and its mode
// is checked whenever the first read does not end a small file (nothing read, a full buffer or an
// error), which is where a FIFO or a device shows, so a regular small file costs no fstat.
func readFile(name string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)

	var small [4096]byte
	n := 0
	for n < len(small) {
		m, err := syscall.Read(fd, small[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			if serr := checkRegularFd(fd, nil); serr != nil {
				return nil, serr
			}
			return nil, err
		}
		if m <= 0 { // end of file
			if n == 0 {
				if err := checkRegularFd(fd, nil); err != nil {
					return nil, err
				}
			}
			out := make([]byte, n) // never nil, like os.ReadFile's
			copy(out, small[:n])
			return out, nil
		}
		n += m
	}

	// A larger file: os.ReadFile's sizing and loop, starting with what was read.
	var st syscall.Stat_t
	var statSize int64
	if err := checkRegularFd(fd, &st); err != nil {
		return nil, err
	}
	statSize = st.Size
	zeroSize := statSize == 0
	var size int
	if int64(int(statSize)) == statSize {
		size = int(statSize)
	}
	size++ // one byte for the final read at EOF
	const minBuf = 512
	size = max(size, n+minBuf)
	const maxRW = 1 << 30 // as internal/poll: larger reads fail on some systems
	data := append(make([]byte, 0, size), small[:n]...)
	for {
		capRemain := cap(data) - len(data)
		if capRemain == 0 || (zeroSize && capRemain < minBuf) {
			data = slices.Grow(data, minBuf)
		}
		buf := data[len(data):cap(data)]
		if len(buf) > maxRW {
			buf = buf[:maxRW]
		}
		m, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m <= 0 {
			return data, nil // end of file
		}
		data = data[:len(data)+m]
	}
}

// checkRegularFd returns ErrNotRegular when fd is a named pipe, a device or a socket; st, when
// set, receives the stat. A failing fstat is not an error here: the read reports its own.
func checkRegularFd(fd int, st *syscall.Stat_t) error {
	var s syscall.Stat_t
	if st == nil {
		st = &s
	}
	if syscall.Fstat(fd, st) != nil {
		return nil
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return notRegular("a named pipe (FIFO)")
	case syscall.S_IFCHR:
		return notRegular("a character device")
	case syscall.S_IFBLK:
		return notRegular("a block device")
	case syscall.S_IFSOCK:
		return notRegular("a socket")
	}
	return nil
}

// statEntry is os.Stat (follow) or os.Lstat reduced to what an Entry keeps,
// without allocating a FileInfo.
func statEntry(name string, follow bool) (size int64, mod time.Time, isDir bool, err error) {
	var st syscall.Stat_t
	for {
		if follow {
			err = syscall.Stat(name, &st)
		} else {
			err = syscall.Lstat(name, &st)
		}
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, time.Time{}, false, err
	}
	return st.Size, time.Unix(st.Mtim.Unix()), st.Mode&syscall.S_IFMT == syscall.S_IFDIR, nil
}
