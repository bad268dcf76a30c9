//go:build !unix

package storage

// syncDir is a no-op where directories cannot be fsynced (Windows: NTFS
// journals metadata itself).
func syncDir(string) {}
