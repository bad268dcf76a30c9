//go:build !linux

package storage

import (
	"io/fs"
	"os"
)

const (
	kindUnknown = 0
	kindDir     = 4
	kindLink    = 10
)

// readDirTyped is the portable form of the Linux reader: os.File.ReadDir,
// whose entry kinds come from the directory where the OS gives them.
func readDirTyped(p string, fn func(name string, kind uint8) bool) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	list, err := f.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, de := range list {
		kind := uint8(8) // a regular file
		switch t := de.Type(); {
		case t.IsDir():
			kind = kindDir
		case t&fs.ModeSymlink != 0:
			kind = kindLink
		}
		if !fn(de.Name(), kind) {
			return nil
		}
	}
	return nil
}
