package storage

import (
	"slices"
	"syscall"
)

// readFile is os.ReadFile with the same contents and errors (local.go strips
// the *fs.PathError layer from both), minus the *os.File machinery: a plain
// blocking descriptor skips the non-blocking mode switch and the poller
// registration os.Open attempts for every file, which cost more than the
// read itself for the small files of a checkpoint log.
func readFile(name string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	var statSize int64
	if syscall.Fstat(fd, &st) == nil {
		statSize = st.Size
	}
	// From here on the same sizing and loop as os.ReadFile.
	zeroSize := statSize == 0
	var size int
	if int64(int(statSize)) == statSize {
		size = int(statSize)
	}
	size++ // one byte for the final read at EOF
	const minBuf = 512
	if size < minBuf {
		size = minBuf
	}
	const maxRW = 1 << 30 // as internal/poll: larger reads fail on some systems
	data := make([]byte, 0, size)
	for {
		buf := data[len(data):cap(data)]
		if len(buf) > maxRW {
			buf = buf[:maxRW]
		}
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return data, err
		}
		if n <= 0 {
			return data, nil // EOF
		}
		data = data[:len(data)+n]
		capRemain := cap(data) - len(data)
		if capRemain == 0 || (zeroSize && capRemain < minBuf) {
			data = slices.Grow(data, minBuf)
		}
	}
}
