package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// tempFiles lists the temporary files WriteFile left in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := readDirNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			tmp = append(tmp, n)
		}
	}
	return tmp
}

// setRename replaces renameNoReplace for the test.
func setRename(t *testing.T, f func(oldpath, newpath string) error) {
	real := renameNoReplace
	renameNoReplace = func(o, n string) error { return f(o, n) }
	t.Cleanup(func() { renameNoReplace = real })
}

// The create-only write on local disk, with renameat2(RENAME_NOREPLACE) and with the hard-link
// fallback a file system without the flag gets (EINVAL, ENOSYS): the second write of a name fails
// with fs.ErrExist and keeps the first bytes, also when the name appears between the early check
// and the rename (a concurrent writer), and no temporary file is left.
func TestLocalPublishNoReplace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fail     error // what renameat2 answers; nil: the real call
		wantLink bool
	}{
		{"renameat2", nil, false},
		{"fallback-EINVAL", syscall.EINVAL, true},
		{"fallback-ENOSYS", syscall.ENOSYS, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real := renameNoReplace
			var renames int
			var racer string // created just before the rename, as by a concurrent writer
			setRename(t, func(o, n string) error {
				renames++
				if racer != "" {
					if err := os.WriteFile(n, []byte(racer), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if tc.fail != nil {
					return tc.fail
				}
				return real(o, n)
			})
			root := t.TempDir()
			l, err := NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "offsets")
			if err := l.WriteFile(ctx, "offsets/0", []byte("first")); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(filepath.Join(dir, "0"))
			if err != nil {
				t.Fatal(err)
			}
			// A rename leaves one link; the fallback's link leaves one too once the temp file is gone.
			if st := fi.Sys().(*syscall.Stat_t); st.Nlink != 1 {
				t.Errorf("offsets/0 has %d links, want 1", st.Nlink)
			}
			if err := l.WriteFile(ctx, "offsets/0", []byte("second")); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("second write = %v, want fs.ErrExist", err)
			}
			if renames != 1 {
				t.Errorf("renameat2 called %d times, want 1 (the early check refuses the second write)", renames)
			}
			racer = "concurrent"
			err = l.WriteFile(ctx, "offsets/1", []byte("mine"))
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("write losing the race = %v, want fs.ErrExist", err)
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != "offsets/1" {
				t.Errorf("error %v is not a *PathError naming offsets/1", err)
			}
			for name, want := range map[string]string{"0": "first", "1": "concurrent"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
					t.Errorf("offsets/%s = %q, %v; want %q", name, b, err, want)
				}
			}
			if tmp := tempFiles(t, dir); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}

// A renameat2 error other than the ones that mean "flag unsupported" is WriteFile's error; nothing
// is published and the temporary file is removed.
func TestLocalPublishOtherError(t *testing.T) {
	setRename(t, func(string, string) error { return syscall.EIO })
	root := t.TempDir()
	l, _ := NewLocal(root)
	err := l.WriteFile(context.Background(), "commits/0", []byte("x"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("WriteFile = %v, want EIO", err)
	}
	if _, err := os.Stat(filepath.Join(root, "commits", "0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("commits/0 exists after a failed rename: %v", err)
	}
	if tmp := tempFiles(t, filepath.Join(root, "commits")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// Deferred writes and deletes skip the directory fsync; the next durable write fsyncs their
// directories before its own rename (so the changes survive a power loss in order), and its own
// directory after it.
func TestLocalDeferredSyncOrder(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	rel := func(p string) string {
		r, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	realRename, realSync := renameNoReplace, dirSync
	setRename(t, func(o, n string) error {
		events = append(events, "rename "+rel(n))
		return realRename(o, n)
	})
	dirSync = func(d string) {
		events = append(events, "fsync "+rel(d))
		realSync(d)
	}
	t.Cleanup(func() { dirSync = realSync })
	step := func(what string, f func() error, want ...string) {
		t.Helper()
		events = nil
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(events, want) {
			t.Errorf("%s: %q, want %q", what, events, want)
		}
	}
	step("offsets/0", func() error { return l.WriteFile(ctx, "offsets/0", []byte("o0")) }, "rename offsets/0", "fsync offsets")
	step("deferred commits/0", func() error { return l.WriteFileDeferred(ctx, "commits/0", []byte("c0")) }, "rename commits/0")
	step("deferred delete offsets/0", func() error { return l.DeleteDeferred(ctx, "offsets/0") })
	// commits/ is fsynced before offsets/1 gets its name; offsets/ once, after.
	step("offsets/1", func() error { return l.WriteFile(ctx, "offsets/1", []byte("o1")) }, "fsync commits", "rename offsets/1", "fsync offsets")
	step("deferred commits/1", func() error { return l.WriteFileDeferred(ctx, "commits/1", []byte("c1")) }, "rename commits/1")
	step("SyncDeferred", func() error { return l.SyncDeferred(ctx) }, "fsync commits")
	step("SyncDeferred again", func() error { return l.SyncDeferred(ctx) })
	step("deferred delete commits/0", func() error { return l.DeleteDeferred(ctx, "commits/0") })
	step("delete offsets/1", func() error { return l.Delete(ctx, "offsets/1") }, "fsync commits", "fsync offsets")
	// A deferred write keeps the order too: the other directories' deferred changes become
	// durable before its name appears (the engine's offsets/N before commits/N), its own
	// directory's do not.
	step("deferred offsets/2", func() error { return l.WriteFileDeferred(ctx, "offsets/2", []byte("o2")) }, "rename offsets/2")
	step("deferred commits/2", func() error { return l.WriteFileDeferred(ctx, "commits/2", []byte("c2")) }, "fsync offsets", "rename commits/2")
	step("deferred offsets/3", func() error { return l.WriteFileDeferred(ctx, "offsets/3", []byte("o3")) }, "fsync commits", "rename offsets/3")
	step("deferred offsets/4", func() error { return l.WriteFileDeferred(ctx, "offsets/4", []byte("o4")) }, "rename offsets/4")
	step("SyncDeferred at the end", func() error { return l.SyncDeferred(ctx) }, "fsync offsets")
}
