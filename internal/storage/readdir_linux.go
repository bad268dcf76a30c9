package storage

import (
	"syscall"
	"unsafe"
)

const (
	kindUnknown = syscall.DT_UNKNOWN
	kindDir     = syscall.DT_DIR
	kindLink    = syscall.DT_LNK
)

// readDirTyped reads directory p with getdents64, 64 KiB at a time as ls
// does (os.File reads 8 KiB), and calls fn with each name (without "." and
// "..") and its d_type, until fn returns false. name is only valid during the
// call: it points into the read buffer, so listing a million names allocates
// nothing per name here.
func readDirTyped(p string, fn func(name string, kind uint8) bool) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(*(*uint16)(unsafe.Pointer(&b[16])))
			if reclen < 20 || reclen > len(b) {
				return syscall.EIO
			}
			kind := b[18]
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			b = b[reclen:]
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if !fn(unsafe.String(&name[0], len(name)), kind) {
				return nil
			}
		}
	}
}
