package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// localAndMem is a local store in a new directory (its root) and a memory store, which
// CreateWriter spools.
func localAndMem(t *testing.T) (string, []Store) {
	root := t.TempDir()
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, []Store{l, NewMem()}
}

// TestCreateWriter: a streamed file gets its name only at Commit, never replaces one, and an
// aborted one leaves nothing; a store other than local disk gets the same contract through a spool file.
func TestCreateWriter(t *testing.T) {
	ctx := context.Background()
	root, stores := localAndMem(t)
	for _, s := range stores {
		f, err := CreateWriter(ctx, s, "a/b/c")
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := f.Write([]byte("0123456789")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Stat(ctx, "a/b/c"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: the name exists before Commit: %v", s.URI(), err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadFile(ctx, "a/b/c"); string(got) != "012345678901234567890123456789" {
			t.Fatalf("%s: read back %q", s.URI(), got)
		}
		g, err := CreateWriter(ctx, s, "a/b/c")
		if err == nil {
			_, _ = g.Write([]byte("x"))
			err = g.Commit()
		}
		if !errors.Is(err, fs.ErrExist) {
			t.Fatalf("%s: a second create of the name: %v", s.URI(), err)
		}
		if got, _ := s.ReadFile(ctx, "a/b/c"); len(got) != 30 {
			t.Fatalf("%s: the file was replaced: %q", s.URI(), got)
		}
		h, err := CreateWriter(ctx, s, "a/b/d")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = h.Write([]byte("x"))
		h.Abort()
		if _, err := s.Stat(ctx, "a/b/d"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: an aborted file exists: %v", s.URI(), err)
		}
	}
	des, _ := os.ReadDir(filepath.Join(root, "a", "b"))
	if len(des) != 1 {
		t.Errorf("local: %d entries left in a/b, want c only", len(des))
	}
}

// TestCreateWriterRename: a streamed file renamed before Commit is published under the new name
// only; a rename to an existing name or to another directory fails and leaves the file as it was.
func TestCreateWriterRename(t *testing.T) {
	ctx := context.Background()
	root, stores := localAndMem(t)
	for _, s := range stores {
		if err := s.WriteFile(ctx, "d/taken", []byte("old")); err != nil {
			t.Fatal(err)
		}
		f, err := CreateWriter(ctx, s, "d/provisional")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("new bytes")); err != nil {
			t.Fatal(err)
		}
		if err := f.Rename("d/taken"); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("%s: rename to an existing name: %v", s.URI(), err)
		}
		if err := f.Rename("e/named"); err == nil {
			t.Fatalf("%s: rename to another directory succeeded", s.URI())
		}
		if err := f.Rename("d/named"); err != nil {
			t.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadFile(ctx, "d/named"); string(got) != "new bytes" {
			t.Fatalf("%s: read back %q", s.URI(), got)
		}
		if got, _ := s.ReadFile(ctx, "d/taken"); string(got) != "old" {
			t.Fatalf("%s: the existing file became %q", s.URI(), got)
		}
		for _, p := range []string{"d/provisional", "e/named"} {
			if _, err := s.Stat(ctx, p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s: %s exists: %v", s.URI(), p, err)
			}
		}
		if err := f.Rename("d/later"); err == nil {
			t.Fatalf("%s: rename after Commit succeeded", s.URI())
		}
	}
	des, _ := os.ReadDir(filepath.Join(root, "d"))
	if len(des) != 2 {
		t.Errorf("local: %d entries left in d, want taken and named", len(des))
	}
}
