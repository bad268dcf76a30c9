//go:build unix

package storage

import (
	"io/fs"
	"syscall"
)

// identity returns fi's device and inode; ok is false where the system does not say.
func identity(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
