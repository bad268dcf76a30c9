//go:build !unix

package storage

import "os"

// syncDir is a no-op where directories cannot be fsynced (Windows: NTFS
// journals metadata itself).
func syncDir(string) {}

// writeSynced creates name (it must not exist), writes data and fsyncs it.
func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
