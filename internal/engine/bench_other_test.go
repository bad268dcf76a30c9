//go:build !linux

package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// atomicWriteB is storage.Local's create-only write elsewhere: a temporary file written and
// fsync'd, other (the fsyncs it must follow) waited for, then hard-linked and removed.
func atomicWriteB(b *testing.B, dir, name string, data []byte, other func()) {
	tmp := filepath.Join(dir, "."+name+".tmp")
	createSyncedB(b, tmp, data)
	other()
	if err := os.Link(tmp, filepath.Join(dir, name)); err != nil {
		b.Fatal(err)
	}
	if err := os.Remove(tmp); err != nil {
		b.Fatal(err)
	}
}
