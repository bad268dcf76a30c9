package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

func TestLocal(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store {
		l, err := storage.NewLocal(filepath.Join(t.TempDir(), "ckpt"))
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

func TestMem(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store { return storage.NewMem() })
}

func TestMemSubViaOpen(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store {
		name := storetest.RandomName("conf-")
		t.Cleanup(func() { storage.ForgetMem(name) })
		s, err := storage.Open(context.Background(), "mem://"+name+"/deep/root", storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFaultyMem(t *testing.T) {
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store { return storage.NewFaulty(storage.NewMem()) })
}

func TestS3(t *testing.T) {
	storetest.S3Env(t) // skip (or fail in CI) once, not per subtest
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store { return storetest.S3(t) })
}

// TestS3BucketRoot covers a store on a whole bucket (no key prefix).
func TestS3BucketRoot(t *testing.T) {
	storetest.S3Env(t)
	storetest.RunStoreTests(t, func(t *testing.T) storage.Store {
		client, bucket := storetest.S3Bucket(t)
		return storage.NewS3FromClient(client, bucket, "")
	})
}

func TestLocalRootCreatedOnWrite(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "b", "ckpt")
	l, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if es, err := l.List(ctx, ""); err != nil || len(es) != 0 {
		t.Fatalf("List of a missing root = %v, %v", es, err)
	}
	if _, err := l.Stat(ctx, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing root = %v", err)
	}
	if err := l.WriteFile(ctx, "offsets/0", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "offsets", "0")); err != nil || string(b) != "v1" {
		t.Fatalf("file on disk = %q, %v", b, err)
	}
	if e, err := l.Stat(ctx, ""); err != nil || !e.IsDir {
		t.Fatalf("Stat(root) = %+v, %v", e, err)
	}
}

func TestLocalRootIsFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.NewLocal(f); err == nil || !strings.Contains(err.Error(), "not a checkpoint directory") {
		t.Fatalf("NewLocal(file) = %v", err)
	}
}

func TestLocalEmptyDirListed(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "state", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, _ := storage.NewLocal(root)
	es, err := l.List(context.Background(), "")
	if err != nil || len(es) != 1 || es[0].Path != "state" || !es[0].IsDir {
		t.Fatalf("List = %+v, %v", es, err)
	}
	// Delete removes an empty directory (object stores have none) ...
	if err := l.Delete(context.Background(), "state/0"); err != nil {
		t.Fatal(err)
	}
	// ... but never a non-empty one.
	if err := os.WriteFile(filepath.Join(root, "state", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(context.Background(), "state"); err == nil {
		t.Fatal("Delete of a non-empty directory succeeded")
	}
}

func TestLocalSymlinkEscapes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	ctx := context.Background()
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "inner"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(root, "out"))                     // dir link leaving the root
	mustSymlink(t, filepath.Join(root, "inner"), filepath.Join(root, "in")) // dir link staying inside
	mustSymlink(t, victim, filepath.Join(root, "victimlink"))               // file link leaving the root
	mustSymlink(t, filepath.Join(base, "gone"), filepath.Join(root, "dangling"))

	l, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"out/new", "out/sub/new", "dangling/new"} {
		if err := l.WriteFile(ctx, p, []byte("x")); !errors.Is(err, storage.ErrInvalidPath) {
			t.Errorf("WriteFile(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	if err := l.Delete(ctx, "out/victim"); !errors.Is(err, storage.ErrInvalidPath) {
		t.Errorf("Delete(out/victim) = %v, want ErrInvalidPath", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Fatalf("victim changed: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("something was created outside the root: %v", ents)
	}
	// Overwriting through a file symlink is refused as "exists"; deleting
	// it removes the link only.
	if err := l.WriteFile(ctx, "victimlink", []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteFile(victimlink) = %v, want fs.ErrExist", err)
	}
	if err := l.Delete(ctx, "victimlink"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Fatalf("victim changed: %q, %v", b, err)
	}
	// Links that stay inside the root work, and reads follow links.
	if err := l.WriteFile(ctx, "in/ok", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if b, err := l.ReadFile(ctx, "inner/ok"); err != nil || string(b) != "ok" {
		t.Fatalf("ReadFile(inner/ok) = %q, %v", b, err)
	}
	if b, err := l.ReadFile(ctx, "out/victim"); err != nil || string(b) != "keep" {
		t.Fatalf("reads should follow links: %q, %v", b, err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestLocalWalkSkipsSymlinkedDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	root := t.TempDir()
	l, _ := storage.NewLocal(root)
	ctx := context.Background()
	if err := l.WriteFile(ctx, "d/f", []byte("1")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, filepath.Join(root, "d"), filepath.Join(root, "loop"))
	es, err := l.Walk(ctx, "")
	if err != nil || len(es) != 1 || es[0].Path != "d/f" {
		t.Fatalf("Walk = %+v, %v", es, err)
	}
}

func TestPathError(t *testing.T) {
	cases := []struct {
		e    storage.PathError
		want string
	}{
		{storage.PathError{Op: "read", URI: "s3://b/p", Path: "offsets/5", Err: fs.ErrNotExist}, "read s3://b/p/offsets/5: file does not exist"},
		{storage.PathError{Op: "list", URI: "s3://b/p/", Path: "offsets", Err: fs.ErrPermission}, "list s3://b/p/offsets: permission denied"},
		{storage.PathError{Op: "list", URI: "/tmp/ck", Path: "", Err: fs.ErrPermission}, "list /tmp/ck: permission denied"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		if !errors.Is(&c.e, c.e.Err) {
			t.Errorf("%v does not unwrap", c.e)
		}
	}
	// Real errors carry the store's URI and the path.
	l, _ := storage.NewLocal(t.TempDir())
	_, err := l.ReadFile(context.Background(), "offsets/5")
	if want := l.URI() + "/offsets/5"; err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "read ") {
		t.Errorf("error %q does not say read %s", err, want)
	}
}

func TestJoin(t *testing.T) {
	cases := map[string][]string{
		"":                {},
		"a":               {"", "a", ""},
		"offsets/5":       {"offsets", "5"},
		"a/b":             {"a/", "/b"},
		"../x":            {"a", "../../x"},
		"state/0/1.delta": {"state", "0", "1.delta"},
	}
	for want, elems := range cases {
		if got := storage.Join(elems...); got != want {
			t.Errorf("Join(%q) = %q, want %q", elems, got, want)
		}
	}
}

// TestLocalSymlinkSwappedAfterUse: a directory checked once (and remembered, so that the
// engine's writes cost one lstat) is checked again when its path names something else: the
// directory swapped for a link out of the root, or a parent swapped for one.
func TestLocalSymlinkSwappedAfterUse(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	ctx := context.Background()
	for _, swap := range []string{"offsets", "a"} {
		t.Run(swap, func(t *testing.T) {
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			if err := os.MkdirAll(filepath.Join(outside, "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			l, err := storage.NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			dir := "offsets"
			if swap == "a" {
				dir = "a/b"
			}
			for i := range 2 { // the second write and delete take the remembered check
				if err := l.WriteFile(ctx, fmt.Sprintf("%s/%d", dir, i), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Delete(ctx, dir+"/0"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(root, swap), filepath.Join(base, "moved")); err != nil {
				t.Fatal(err)
			}
			target := outside
			if swap == "offsets" {
				target = filepath.Join(outside, "b")
			}
			mustSymlink(t, target, filepath.Join(root, swap))
			if err := l.WriteFile(ctx, dir+"/2", []byte("x")); !errors.Is(err, storage.ErrInvalidPath) {
				t.Errorf("WriteFile after the swap = %v, want ErrInvalidPath", err)
			}
			if err := os.WriteFile(filepath.Join(outside, "b", "1"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := l.Delete(ctx, dir+"/1"); !errors.Is(err, storage.ErrInvalidPath) {
				t.Errorf("Delete after the swap = %v, want ErrInvalidPath", err)
			}
			if ents, _ := os.ReadDir(filepath.Join(outside, "b")); len(ents) != 1 {
				t.Fatalf("the outside directory changed: %v", ents)
			}
		})
	}
}
