package flagfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestReadRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("a=b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := Read("--x", p)
	if err != nil || string(data) != "a=b\n" {
		t.Fatalf("Read = %q, %v", data, err)
	}
}

// Before: os.ReadFile read /dev/zero until the kernel killed ckpt.
func TestReadRefusesDevZero(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/zero on Windows")
	}
	_, err := Read("--from-file", "/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "--from-file reads regular files only, this is a character device") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadRefusesOversized(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 1025), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := read("-f", p, 1024); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if data, err := read("-f", p, 1025); err != nil || len(data) != 1025 {
		t.Fatalf("at the limit: %d bytes, %v", len(data), err)
	}
	// MaxBytes itself: a sparse file one byte over is refused without reading it.
	big := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Read("-f", big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestReadMissing(t *testing.T) {
	if _, err := Read("-f", filepath.Join(t.TempDir(), "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}
