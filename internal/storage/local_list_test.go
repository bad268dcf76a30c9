package storage

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"testing"
)

// TestLocalListLarge checks the concurrent stat path of List (used from
// listStatParallel entries) against a plain sequential os.ReadDir + os.Stat
// listing, with a subdirectory, symlinks and a dangling symlink among the
// entries, and ReadFile against os.ReadFile for sizes around the small-file
// buffer.
func TestLocalListLarge(t *testing.T) {
	dir := t.TempDir()
	n := listStatParallel + 500
	for i := range n {
		data := bytes.Repeat([]byte{'x'}, i%7)
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		for name, target := range map[string]string{"link-file": "7", "link-dir": "sub", "dangling": "missing"} {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []Entry
	for _, de := range des {
		fi, err := os.Stat(filepath.Join(dir, de.Name()))
		if err != nil {
			if fi, err = de.Info(); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, s.entry(de.Name(), fi))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List differs from ReadDir+Stat: got %d entries, want %d", len(got), len(want))
	}

	// ListNames: the same paths and kinds (a symlink to a directory is one,
	// a dangling symlink is a file), no size or time.
	names, err := ListNames(context.Background(), s, "")
	if err != nil {
		t.Fatal(err)
	}
	sortEntries(names)
	for i := range want {
		if i < len(names) && names[i] != (Entry{Path: want[i].Path, IsDir: want[i].IsDir}) {
			t.Fatalf("ListNames entry %d = %+v, want %s (dir %v) only", i, names[i], want[i].Path, want[i].IsDir)
		}
	}
	if len(names) != len(want) {
		t.Fatalf("ListNames: %d entries, want %d", len(names), len(want))
	}

	sub, err := NewLocal(filepath.Join(dir, ".."))
	if err != nil {
		t.Fatal(err)
	}
	got, err = sub.List(context.Background(), filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Path = filepath.Base(dir) + "/" + want[i].Path
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("List of a subdirectory differs")
	}

	for _, size := range []int{0, 1, 4095, 4096, 4097, 10000} {
		name := "size-" + strconv.Itoa(size)
		data := bytes.Repeat([]byte{'y'}, size)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := s.ReadFile(context.Background(), name)
		if err != nil || b == nil || !bytes.Equal(b, data) {
			t.Fatalf("ReadFile(%s) = %d bytes, %v", name, len(b), err)
		}
	}
	if _, err := s.ReadFile(context.Background(), "sub"); err == nil {
		t.Fatal("ReadFile of a directory succeeded")
	}
	if _, err := s.ReadFile(context.Background(), "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v", err)
	}
}
