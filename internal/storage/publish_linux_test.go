package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// setLink replaces linkUnnamed for the test.
func setLink(t *testing.T, f func(fd int, p string) error) {
	real := linkUnnamed
	linkUnnamed = f
	t.Cleanup(func() { linkUnnamed = real })
}

// The create-only write on local disk: an unnamed file linked with linkat, and the named
// temporary file of a file system without O_TMPFILE, with renameat2(RENAME_NOREPLACE) and with the
// hard-link fallback a file system without the flag gets (EINVAL, ENOSYS). The second write of a
// name fails with fs.ErrExist and keeps the first bytes, also when the name appears just before
// the file is named (a concurrent writer), and no temporary file is left.
func TestLocalPublishNoReplace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		named    bool  // the file system has no O_TMPFILE
		fail     error // what renameat2 answers; nil: the real call
		wantLink bool
		// publishes is how many times a file was to be named after the second write: the named
		// path's early check refuses it before, linkat itself refuses it.
		publishes int
	}{
		{"unnamed", false, nil, false, 2},
		{"renameat2", true, nil, false, 1},
		{"fallback-EINVAL", true, syscall.EINVAL, true, 1},
		{"fallback-ENOSYS", true, syscall.ENOSYS, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real, realLink := renameNoReplace, linkUnnamed
			var renames int
			var racer string // created just before the file is named, as by a concurrent writer
			race := func(n string) {
				renames++
				if racer != "" {
					if err := os.WriteFile(n, []byte(racer), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			setRename(t, func(o, n string) error {
				race(n)
				if tc.fail != nil {
					return tc.fail
				}
				return real(o, n)
			})
			setLink(t, func(fd int, n string) error {
				race(n)
				return realLink(fd, n)
			})
			root := t.TempDir()
			l, err := NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			l.named.Store(tc.named)
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
			if renames != tc.publishes {
				t.Errorf("the file was to be named %d times, want %d", renames, tc.publishes)
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
// is published and the temporary file is removed. So is a linkat error other than a missing /proc.
func TestLocalPublishOtherError(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprint("named=", named), func(t *testing.T) { testPublishOtherError(t, named) })
	}
}

func testPublishOtherError(t *testing.T, named bool) {
	setRename(t, func(string, string) error { return syscall.EIO })
	setLink(t, func(int, string) error { return syscall.EIO })
	root := t.TempDir()
	l, _ := NewLocal(root)
	l.named.Store(named)
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
// directories before its own file is named (so the changes survive a power loss in order), and its own
// directory after it.
//
// On a journaling file system the directory fsyncs run after the new file's fsync (which commits
// their changes with it); without a journal (concurrent) alongside it, so there the file's fsync
// has no place in the order and is left out of the comparison.
func TestLocalDeferredSyncOrder(t *testing.T) {
	for _, named := range []bool{false, true} {
		for _, concurrent := range []bool{false, true} {
			t.Run(fmt.Sprintf("named=%v/concurrent=%v", named, concurrent), func(t *testing.T) { testDeferredSyncOrder(t, named, concurrent) })
		}
	}
}

func testDeferredSyncOrder(t *testing.T, named, concurrent bool) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	l.named.Store(named)
	l.orderOnce.Do(func() { l.concurrent = concurrent })
	var (
		mu     sync.Mutex
		events []string
	)
	event := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	rel := func(p string) string {
		r, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	realRename, realLink, realSync := renameNoReplace, linkUnnamed, dirSync
	setRename(t, func(o, n string) error {
		event("name " + rel(n))
		return realRename(o, n)
	})
	setLink(t, func(fd int, n string) error {
		event("name " + rel(n))
		return realLink(fd, n)
	})
	realFile := fileSync
	fileSync = func(fd int) error {
		event("fsync file")
		return realFile(fd)
	}
	dirSync = func(d string) {
		event("fsync " + rel(d))
		realSync(d)
	}
	t.Cleanup(func() { dirSync, fileSync = realSync, realFile })
	step := func(what string, f func() error, want ...string) {
		t.Helper()
		events = nil
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := events
		if concurrent {
			notFile := func(e string) bool { return e == "fsync file" }
			got = slices.DeleteFunc(slices.Clone(got), notFile)
			want = slices.DeleteFunc(slices.Clone(want), notFile)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	step("offsets/0", func() error { return l.WriteFile(ctx, "offsets/0", []byte("o0")) }, "fsync file", "name offsets/0", "fsync offsets")
	step("deferred commits/0", func() error { return l.WriteFileDeferred(ctx, "commits/0", []byte("c0")) }, "fsync file", "name commits/0")
	step("deferred delete offsets/0", func() error { return l.DeleteDeferred(ctx, "offsets/0") })
	// commits/ is fsynced before offsets/1 gets its name; offsets/ once, after.
	step("offsets/1", func() error { return l.WriteFile(ctx, "offsets/1", []byte("o1")) }, "fsync file", "fsync commits", "name offsets/1", "fsync offsets")
	step("deferred commits/1", func() error { return l.WriteFileDeferred(ctx, "commits/1", []byte("c1")) }, "fsync file", "name commits/1")
	step("SyncDeferred", func() error { return l.SyncDeferred(ctx) }, "fsync commits")
	step("SyncDeferred again", func() error { return l.SyncDeferred(ctx) })
	step("deferred delete commits/0", func() error { return l.DeleteDeferred(ctx, "commits/0") })
	step("delete offsets/1", func() error { return l.Delete(ctx, "offsets/1") }, "fsync commits", "fsync offsets")
	// A deferred write keeps the order too: the other directories' deferred changes become
	// durable before its name appears (the engine's offsets/N before commits/N), its own
	// directory's do not.
	step("deferred offsets/2", func() error { return l.WriteFileDeferred(ctx, "offsets/2", []byte("o2")) }, "fsync file", "name offsets/2")
	step("deferred commits/2", func() error { return l.WriteFileDeferred(ctx, "commits/2", []byte("c2")) }, "fsync file", "fsync offsets", "name commits/2")
	step("deferred offsets/3", func() error { return l.WriteFileDeferred(ctx, "offsets/3", []byte("o3")) }, "fsync file", "fsync commits", "name offsets/3")
	step("deferred offsets/4", func() error { return l.WriteFileDeferred(ctx, "offsets/4", []byte("o4")) }, "fsync file", "name offsets/4")
	step("SyncDeferred at the end", func() error { return l.SyncDeferred(ctx) }, "fsync offsets")
}

// Where the file system has no O_TMPFILE (EOPNOTSUPP; EISDIR from kernels before 3.11), or /proc
// is missing to link the unnamed file by, WriteFile falls back to a named temporary file, and
// keeps to it; a linkat error with /proc there (the directory removed meanwhile) is the write's.
func TestLocalUnnamedFallback(t *testing.T) {
	ctx := context.Background()
	realOpen, realProc := openUnnamed, procFD
	t.Cleanup(func() { openUnnamed, procFD = realOpen, realProc })
	for _, tc := range []struct {
		name      string
		openErr   error
		linkErr   error
		proc      bool
		wantErr   error
		wantNamed bool
	}{
		{"EOPNOTSUPP", syscall.EOPNOTSUPP, nil, true, nil, true},
		{"EISDIR", syscall.EISDIR, nil, true, nil, true},
		{"no-proc", nil, syscall.ENOENT, false, nil, true},
		{"dir-gone", nil, syscall.ENOENT, true, fs.ErrNotExist, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opens, renames int
			openUnnamed = func(dir string) (int, error) {
				opens++
				if tc.openErr != nil {
					return -1, tc.openErr
				}
				return realOpen(dir)
			}
			procFD = func() bool { return tc.proc }
			setLink(t, func(int, string) error { return tc.linkErr })
			realRename := renameNoReplace
			setRename(t, func(o, n string) error { renames++; return realRename(o, n) })
			root := t.TempDir()
			l, err := NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			err = l.WriteFile(ctx, "offsets/0", []byte("zero"))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("WriteFile = %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if l.named.Load() != tc.wantNamed {
				t.Errorf("named = %v, want %v", l.named.Load(), tc.wantNamed)
			}
			if tc.wantErr != nil {
				if _, err := os.Stat(filepath.Join(root, "offsets", "0")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("offsets/0 after a failed write: %v", err)
				}
				return
			}
			if err := l.WriteFile(ctx, "offsets/1", []byte("one")); err != nil {
				t.Fatal(err)
			}
			if opens != 1 || renames != 2 {
				t.Errorf("O_TMPFILE opens %d, renames %d; want 1 and 2 (the fallback is kept)", opens, renames)
			}
			for name, want := range map[string]string{"0": "zero", "1": "one"} {
				if b, err := os.ReadFile(filepath.Join(root, "offsets", name)); err != nil || string(b) != want {
					t.Errorf("offsets/%s = %q, %v; want %q", name, b, err, want)
				}
			}
			if tmp := tempFiles(t, filepath.Join(root, "offsets")); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}

// The unnamed path for real, on the file system the tests run on: where it takes O_TMPFILE
// (ext4, xfs, btrfs, tmpfs; overlayfs from Linux 6.6) a write never renames; where it does not,
// the write falls back to a named temporary file. Either way the content arrives.
func TestLocalUnnamedUsed(t *testing.T) {
	root := t.TempDir()
	fd, openErr := unix.Open(root, unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
	tmpfile := openErr == nil
	if tmpfile {
		unix.Close(fd)
	}
	var renames int
	realRename := renameNoReplace
	setRename(t, func(o, n string) error {
		renames++
		return realRename(o, n)
	})
	l, err := NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WriteFile(context.Background(), "commits/3", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if tmpfile && (renames > 0 || l.named.Load()) {
		t.Errorf("O_TMPFILE works here, yet the write renamed (%d) or fell back (%v)", renames, l.named.Load())
	}
	if !tmpfile && (renames != 1 || !l.named.Load()) {
		t.Errorf("no O_TMPFILE here (%v), yet the write renamed %d times, fell back %v", openErr, renames, l.named.Load())
	}
	if b, err := os.ReadFile(filepath.Join(root, "commits", "3")); err != nil || string(b) != "v1" {
		t.Errorf("commits/3 = %q, %v", b, err)
	}
}

// ext4NoJournal reads sysfs as Linux lays it out: /sys/dev/block/MAJ:MIN links to the device,
// /sys/fs/ext4/<device>/journal_task holds the journal thread's pid or "<none>".
func TestExt4NoJournal(t *testing.T) {
	for _, tc := range []struct {
		name string
		task string // "" : no journal_task file
		link bool
		want bool
	}{
		{"no-journal", "<none>\n", true, true},
		{"journal", "8123\n", true, false},
		{"old-kernel", "", true, false},
		{"unknown-device", "<none>\n", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := t.TempDir()
			if err := os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.link {
				if err := os.Symlink("../../devices/pci0000:00/0000:00:05.0/virtio2/block/vda", filepath.Join(sys, "dev", "block", "254:0")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.task != "" {
				dir := filepath.Join(sys, "fs", "ext4", "vda")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "journal_task"), []byte(tc.task), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := ext4NoJournal(sys, 254, 0); got != tc.want {
				t.Errorf("ext4NoJournal = %v, want %v", got, tc.want)
			}
		})
	}
	// Not ext4 (tmpfs, or whatever the temporary directory is on when it is not ext4): false.
	if got := journalless("/dev/shm"); got {
		t.Errorf("journalless(/dev/shm) = true")
	}
}
