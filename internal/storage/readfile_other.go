//go:build !linux

package storage

import (
	"os"
	"time"
)

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

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
