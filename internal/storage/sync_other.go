//go:build !unix

package storage

import (
	"io"
	"os"
)

// syncDir is a no-op where directories cannot be fsynced (Windows: NTFS
// journals metadata itself).
func syncDir(string) {}

// writeSynced creates name (it must not exist), writes its content with fill and fsyncs it.
func writeSynced(name string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
