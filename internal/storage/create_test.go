package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCreateWriter: a streamed file gets its name only at Commit, never replaces one, and an
// aborted one leaves nothing; a store other than local disk gets the same contract through a spool file.
func TestCreateWriter(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Store{l, NewMem()} {
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
