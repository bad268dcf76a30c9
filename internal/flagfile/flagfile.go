// Package flagfile reads the files that flags name (--kafka-option-file, --from-file, run -f):
// small regular files, read whole, with a size limit.
//
// A flag may name anything: /dev/zero grew ckpt to 23.5 GB before the kernel killed it, and a
// named pipe without a writer blocked it where no signal could stop it. So the file is opened
// without waiting (O_NONBLOCK: a pipe opens at once), refused unless it is a regular file, and
// read to at most MaxBytes.
package flagfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxBytes bounds a flag file (16 MiB). The files flags read are Kafka client properties, query
// YAML and offsets CSV or JSON: an offsets file for 100,000 partitions is about 4 MB.
const MaxBytes = 16 << 20

// Read reads the file at path named by flag (for messages, e.g. "--from-file"), refusing
// anything but a regular file of at most MaxBytes.
func Read(flag, path string) ([]byte, error) {
	return read(flag, path, MaxBytes)
}

func read(flag, path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%s reads regular files only, this is %s", flag, kind(fi.Mode()))}
	}
	if fi.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge(flag, fi.Size(), limit)}
	}
	// The size can change while reading: one byte past the limit tells.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: tooLarge(flag, int64(len(data)), limit)}
	}
	return data, nil
}

// ErrTooLarge is wrapped by the error for a file over the limit.
var ErrTooLarge = errors.New("file too large")

func tooLarge(flag string, size, limit int64) error {
	return fmt.Errorf("%w: %s reads files of at most %d MiB, this one has %d bytes or more", ErrTooLarge, flag, limit>>20, size)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}
