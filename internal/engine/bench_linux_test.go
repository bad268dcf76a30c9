package engine

import "golang.org/x/sys/unix"

// renameNoReplaceB is storage.Local's rename for BenchmarkBatchVsTwoFsyncs's protocol floor.
func renameNoReplaceB(oldpath, newpath string) error {
	return unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
}
