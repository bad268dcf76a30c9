//go:build unix

package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe, a device, or a symbolic link to /dev/zero at a log path is refused with an error
// naming the file, instead of blocking (a FIFO without a writer) or reading forever.
func TestLocalRefusesSpecialFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "offsets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "offsets", "0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "offsets", "1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(dir, "offsets", "2")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "offsets", "3"), []byte("v1\n{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{"offsets/0", "named pipe"},
		{"offsets/1", "character device"},
		{"offsets/2", "character device"},
	} {
		for _, op := range []string{"read", "open"} {
			done := make(chan error, 1)
			go func() {
				if op == "read" {
					_, err := l.ReadFile(ctx, tc.path)
					done <- err
					return
				}
				r, err := l.Open(ctx, tc.path)
				if err == nil {
					r.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute): // a hang is the failure under test
				t.Fatalf("%s %s blocked", op, tc.path)
			}
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("%s %s: %v, want ErrNotRegular naming the file and %q", op, tc.path, err, tc.kind)
			}
		}
	}
	// A regular file, and an empty one, still read.
	if b, err := l.ReadFile(ctx, "offsets/3"); err != nil || string(b) != "v1\n{}" {
		t.Errorf("regular file: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "offsets", "4"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := l.ReadFile(ctx, "offsets/4"); err != nil || len(b) != 0 {
		t.Errorf("empty file: %q %v", b, err)
	}
}
