//go:build !linux

package storage

import (
	"os"
	"time"
)

// readFile is os.ReadFile, refusing a named pipe or a device (ErrNotRegular) before opening it.
func readFile(name string) ([]byte, error) {
	if fi, err := os.Stat(name); err == nil {
		if k := specialKind(fi.Mode()); k != "" {
			return nil, notRegular(k)
		}
	}
	return os.ReadFile(name)
}

func statEntry(name string, follow bool) (size int64, mod time.Time, isDir bool, err error) {
	var fi os.FileInfo
	if follow {
		fi, err = os.Stat(name)
	} else {
		fi, err = os.Lstat(name)
	}
	if err != nil {
		return 0, time.Time{}, false, err
	}
	return fi.Size(), fi.ModTime(), fi.IsDir(), nil
}
