//go:build unix

package flagfile

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Before: opening a named pipe with no writer blocked forever. Now it returns at once.
func TestReadRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read("--kafka-option-file", p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "this is a named pipe") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a named pipe with no writer")
	}
}
