//go:build unix

package storage

import "os"

// syncDir fsyncs a directory so a new or removed name survives a crash.
// Best-effort: the change is already visible, and some file systems refuse
// fsync on directories; Spark itself never does it.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
