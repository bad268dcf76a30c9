//go:build !linux

package engine

import "os"

// renameNoReplaceB is storage.Local's publication elsewhere: a hard link, then the temporary
// file removed.
func renameNoReplaceB(oldpath, newpath string) error {
	if err := os.Link(oldpath, newpath); err != nil {
		return err
	}
	return os.Remove(oldpath)
}
