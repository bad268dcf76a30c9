package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// RunStoreTests runs the storage conformance suite: the behaviour every Store
// must share, whatever its medium. newStore must return an empty store,
// fresh for each call (it is called once per subtest). Subtests run
// sequentially, so newStore may use t.Setenv.
func RunStoreTests(t *testing.T, newStore func(t *testing.T) storage.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"URI", testURI},
		{"ListSortedWithDirs", testList},
		{"ListMissingDirIsEmpty", testListMissing},
		{"ListNamesIsListWithoutInfo", testListNames},
		{"Walk", testWalk},
		{"StatFileAndDir", testStat},
		{"MissingIsErrNotExist", testMissing},
		{"WriteNeverOverwrites", testNoOverwrite},
		{"CreateStreams", testCreate},
		{"CreateNeverOverwrites", testCreateNoOverwrite},
		{"CreateWrongSizePublishesNothing", testCreateWrongSize},
		{"CreateCanceledPublishesNothing", testCreateCanceled},
		{"ConcurrentWritersOneWinner", testConcurrentWriters},
		{"EmptyFile", testEmptyFile},
		{"CleanPathsAccepted", testCleanPaths},
		{"InvalidPathsRejected", testInvalidPaths},
		{"DeleteIdempotent", testDelete},
		{"OpenStreams5MB", testOpenLarge},
		{"ManyKeysPaginate", testMany},
		{"ModTimeSane", testModTime},
		{"NoTempFilesLeft", testNoTemp},
		{"DeferredWritesAndDeletes", testDeferred},
		{"CanceledContext", testCanceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func write(t *testing.T, s storage.Store, files map[string]string) {
	t.Helper()
	ctx := ctxT(t)
	for p, data := range files {
		if err := s.WriteFile(ctx, p, []byte(data)); err != nil {
			t.Fatalf("WriteFile(%q): %v", p, err)
		}
	}
}

// brief renders entries compactly: "a(3)", "c/" for a directory.
func brief(es []storage.Entry) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteString(" ")
		}
		if e.IsDir {
			b.WriteString(e.Path + "/")
		} else {
			fmt.Fprintf(&b, "%s(%d)", e.Path, e.Size)
		}
	}
	return b.String()
}

func wantList(t *testing.T, what string, es []storage.Entry, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if es == nil {
		t.Errorf("%s: nil slice, want non-nil", what)
	}
	if got := brief(es); got != want {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func testURI(t *testing.T, s storage.Store) {
	if s.URI() == "" {
		t.Fatal("URI() is empty")
	}
}

var tree = map[string]string{
	"b":              "bb",
	"a":              "a",
	".hidden":        "h",
	"c/x":            "xxx",
	"c/y/z":          "zzzz",
	"c/y/w":          "w",
	"offsets/10":     "10",
	"offsets/9":      "9",
	"offsets/.9.crc": "crc",
}

func testList(t *testing.T, s storage.Store) {
	write(t, s, tree)
	ctx := ctxT(t)
	es, err := s.List(ctx, "")
	wantList(t, `List("")`, es, err, ".hidden(1) a(1) b(2) c/ offsets/")
	es, err = s.List(ctx, "c")
	wantList(t, `List("c")`, es, err, "c/x(3) c/y/")
	es, err = s.List(ctx, "c/")
	wantList(t, `List("c/")`, es, err, "c/x(3) c/y/")
	es, err = s.List(ctx, "c/y")
	wantList(t, `List("c/y")`, es, err, "c/y/w(1) c/y/z(4)")
	es, err = s.List(ctx, "offsets")
	wantList(t, `List("offsets")`, es, err, "offsets/.9.crc(3) offsets/10(2) offsets/9(1)")
	for _, e := range es {
		if e.IsDir || e.ModTime.IsZero() {
			t.Errorf("file entry %+v: want IsDir=false and a ModTime", e)
		}
	}
}

func testListMissing(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	es, err := s.List(ctx, "")
	wantList(t, `List("") of an empty store`, es, err, "")
	write(t, s, map[string]string{"a/f": "1"})
	es, err = s.List(ctx, "nope")
	wantList(t, `List("nope")`, es, err, "")
	es, err = s.List(ctx, "a/f")
	wantList(t, `List of a file`, es, err, "")
	es, err = s.Walk(ctx, "nope/deeper")
	wantList(t, `Walk("nope/deeper")`, es, err, "")
}

// testListNames checks storage.ListNames against List: the same paths and kinds, and
// no size or time on any store (so no caller can come to rely on one store's extras).
func testListNames(t *testing.T, s storage.Store) {
	write(t, s, tree)
	ctx := ctxT(t)
	for _, dir := range []string{"", "c", "c/y", "offsets", "nope", "a"} {
		full, err := s.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		names, err := storage.ListNames(ctx, s, dir)
		if err != nil {
			t.Fatalf("ListNames(%q): %v", dir, err)
		}
		// In no particular order.
		slices.SortFunc(names, func(a, b storage.Entry) int { return strings.Compare(a.Path, b.Path) })
		if names == nil {
			t.Errorf("ListNames(%q): nil slice, want non-nil", dir)
		}
		want := make([]storage.Entry, len(full))
		for i, e := range full {
			want[i] = storage.Entry{Path: e.Path, IsDir: e.IsDir}
		}
		if !reflect.DeepEqual(names, want) && len(names)+len(want) > 0 {
			t.Errorf("ListNames(%q):\n got %+v\nwant %+v", dir, names, want)
		}
	}
}

func testWalk(t *testing.T, s storage.Store) {
	write(t, s, tree)
	ctx := ctxT(t)
	es, err := s.Walk(ctx, "")
	wantList(t, `Walk("")`, es, err, ".hidden(1) a(1) b(2) c/x(3) c/y/w(1) c/y/z(4) offsets/.9.crc(3) offsets/10(2) offsets/9(1)")
	es, err = s.Walk(ctx, "c")
	wantList(t, `Walk("c")`, es, err, "c/x(3) c/y/w(1) c/y/z(4)")
	es, err = s.Walk(ctx, "a")
	wantList(t, `Walk of a file`, es, err, "")
}

func testStat(t *testing.T, s storage.Store) {
	write(t, s, tree)
	ctx := ctxT(t)
	e, err := s.Stat(ctx, "c/y/z")
	if err != nil {
		t.Fatal(err)
	}
	if e.Path != "c/y/z" || e.Size != 4 || e.IsDir {
		t.Errorf("Stat(c/y/z) = %+v", e)
	}
	e, err = s.Stat(ctx, "c/y")
	if err != nil {
		t.Fatal(err)
	}
	if e.Path != "c/y" || !e.IsDir {
		t.Errorf("Stat(c/y) = %+v, want a directory", e)
	}
}

func testMissing(t *testing.T, s storage.Store) {
	write(t, s, map[string]string{"offsets/0": "v1", "file": "f"})
	ctx := ctxT(t)
	for _, p := range []string{"offsets/1", "nope/1", "file/child"} {
		_, err := s.Stat(ctx, p)
		checkNotExist(t, "Stat", p, err)
		_, err = s.ReadFile(ctx, p)
		checkNotExist(t, "ReadFile", p, err)
		r, err := s.Open(ctx, p)
		if r != nil {
			r.Close()
		}
		checkNotExist(t, "Open", p, err)
	}
}

func checkNotExist(t *testing.T, op, p string, err error) {
	t.Helper()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s(%q) = %v, want an error wrapping fs.ErrNotExist", op, p, err)
		return
	}
	var pe *storage.PathError
	if !errors.As(err, &pe) {
		t.Errorf("%s(%q) error %T is not a *storage.PathError", op, p, err)
	} else if !strings.Contains(err.Error(), p) {
		t.Errorf("%s(%q) error %q does not name the path", op, p, err)
	}
}

func testNoOverwrite(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	if err := s.WriteFile(ctx, "offsets/5", []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := s.WriteFile(ctx, "offsets/5", []byte("second, longer"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteFile = %v, want an error wrapping fs.ErrExist", err)
	}
	if !strings.Contains(err.Error(), "offsets/5") {
		t.Errorf("error %q does not name the path", err)
	}
	b, err := s.ReadFile(ctx, "offsets/5")
	if err != nil || string(b) != "first" {
		t.Fatalf("ReadFile after refused overwrite = %q, %v; want %q", b, err, "first")
	}
	e, err := s.Stat(ctx, "offsets/5")
	if err != nil || e.Size != 5 {
		t.Fatalf("Stat after refused overwrite = %+v, %v", e, err)
	}
}

func testConcurrentWriters(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.WriteFile(ctx, "commits/7", []byte(fmt.Sprintf("writer %02d", i)))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("writers %d and %d both succeeded", winner, i)
			}
			winner = i
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("writer %d: %v, want success or fs.ErrExist", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	b, err := s.ReadFile(ctx, "commits/7")
	if want := fmt.Sprintf("writer %02d", winner); err != nil || string(b) != want {
		t.Fatalf("ReadFile = %q, %v; want the winner's %q", b, err, want)
	}
	es, err := s.Walk(ctx, "")
	wantList(t, "Walk after the race (no temp files left)", es, err, "commits/7(9)")
}

func testEmptyFile(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	if err := s.WriteFile(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	b, err := s.ReadFile(ctx, "empty")
	if err != nil || len(b) != 0 {
		t.Fatalf("ReadFile(empty) = %q, %v", b, err)
	}
	if err := s.WriteFile(ctx, "empty", []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("overwriting an empty file = %v, want fs.ErrExist", err)
	}
}

func testCleanPaths(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	if err := s.WriteFile(ctx, "x/./y//z", []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"x/y/z", "x/y/../y/z", "./x/y/z"} {
		if b, err := s.ReadFile(ctx, p); err != nil || string(b) != "1" {
			t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
		}
	}
	es, err := s.Walk(ctx, "")
	wantList(t, "Walk", es, err, "x/y/z(1)")
	if got := storage.Join("a", "", "b/", "../c", "d"); got != "a/c/d" {
		t.Errorf("Join = %q", got)
	}
	if got := storage.Join(); got != "" {
		t.Errorf("Join() = %q, want empty (the root)", got)
	}
}

func testInvalidPaths(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	write(t, s, map[string]string{"ok": "1"})
	bad := []string{"..", "../x", "a/../../x", "/abs", "/", "x\x00y"}
	check := func(op, p string, err error) {
		t.Helper()
		if !errors.Is(err, storage.ErrInvalidPath) {
			t.Errorf("%s(%q) = %v, want an error wrapping storage.ErrInvalidPath", op, p, err)
		}
	}
	for _, p := range bad {
		_, err := s.List(ctx, p)
		check("List", p, err)
		_, err = s.Walk(ctx, p)
		check("Walk", p, err)
		_, err = s.Stat(ctx, p)
		check("Stat", p, err)
		_, err = s.ReadFile(ctx, p)
		check("ReadFile", p, err)
		r, err := s.Open(ctx, p)
		if r != nil {
			r.Close()
		}
		check("Open", p, err)
		check("WriteFile", p, s.WriteFile(ctx, p, []byte("evil")))
		check("Delete", p, s.Delete(ctx, p))
	}
	// The root is a directory, not a file.
	for _, p := range []string{"", ".", "a/.."} {
		_, err := s.ReadFile(ctx, p)
		check("ReadFile", p, err)
		check("WriteFile", p, s.WriteFile(ctx, p, []byte("evil")))
		check("Delete", p, s.Delete(ctx, p))
	}
	es, err := s.Walk(ctx, "")
	wantList(t, "Walk after rejected writes", es, err, "ok(1)")
}

func testDelete(t *testing.T, s storage.Store) {
	write(t, s, map[string]string{"d/a": "1", "d/b": "2"})
	ctx := ctxT(t)
	if err := s.Delete(ctx, "d/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "d/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after Delete = %v", err)
	}
	for _, p := range []string{"d/a", "never", "no/such/dir/file"} {
		if err := s.Delete(ctx, p); err != nil {
			t.Errorf("Delete(%q) of a missing path = %v, want nil", p, err)
		}
	}
	es, err := s.Walk(ctx, "")
	wantList(t, "Walk after Delete", es, err, "d/b(1)")
	// A deleted name can be written again.
	if err := s.WriteFile(ctx, "d/a", []byte("again")); err != nil {
		t.Fatal(err)
	}
}

func testOpenLarge(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	data := make([]byte, 5<<20)
	_, _ = rand.Read(data)
	if err := s.WriteFile(ctx, "sources/0/big", data); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, "sources/0/big")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	buf := make([]byte, 64<<10)
	n, err := io.CopyBuffer(h, r, buf)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("streamed %d bytes, err %v; want %d", n, err, len(data))
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("streamed bytes differ from the written ones")
	}
	e, err := s.Stat(ctx, "sources/0/big")
	if err != nil || e.Size != int64(len(data)) {
		t.Fatalf("Stat = %+v, %v", e, err)
	}
}

func testMany(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	const n = 1100 // crosses S3's 1000-key page
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("many/%05d", i)
	}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.WriteFile(ctx, p, []byte(p)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	write(t, s, map[string]string{"many/sub/x": "x", "other": "o"})

	es, err := s.List(ctx, "many")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n+1 {
		t.Fatalf("List(many) gave %d entries, want %d", len(es), n+1)
	}
	for i, p := range paths {
		if es[i].Path != p || es[i].IsDir || es[i].Size != int64(len(p)) {
			t.Fatalf("List(many)[%d] = %+v, want file %s", i, es[i], p)
		}
	}
	if last := es[n]; last.Path != "many/sub" || !last.IsDir {
		t.Fatalf("List(many)[%d] = %+v, want directory many/sub", n, last)
	}
	es, err = s.Walk(ctx, "many")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n+1 || es[n].Path != "many/sub/x" {
		t.Fatalf("Walk(many) gave %d entries (last %+v), want %d", len(es), es[len(es)-1], n+1)
	}
	got, err := storage.ReadMany(ctx, s, paths[:200], 8)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if string(b) != paths[i] {
			t.Fatalf("ReadMany[%d] = %q, want %q", i, b, paths[i])
		}
	}
}

func testModTime(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	before := time.Now()
	write(t, s, map[string]string{"m/f": "1"})
	after := time.Now()
	// Object stores keep whole seconds; allow clock skew with a local server.
	lo, hi := before.Add(-time.Minute), after.Add(time.Minute)
	e, err := s.Stat(ctx, "m/f")
	if err != nil {
		t.Fatal(err)
	}
	if e.ModTime.Before(lo) || e.ModTime.After(hi) {
		t.Errorf("Stat ModTime %v not within a minute of the write (%v)", e.ModTime, before)
	}
	es, err := s.List(ctx, "m")
	if err != nil || len(es) != 1 {
		t.Fatalf("List = %v, %v", es, err)
	}
	if m := es[0].ModTime; m.Before(lo) || m.After(hi) {
		t.Errorf("List ModTime %v not within a minute of the write (%v)", m, before)
	}
}

func testNoTemp(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	write(t, s, map[string]string{"offsets/0": "a"})
	_ = s.WriteFile(ctx, "offsets/0", []byte("b"))            // refused
	_ = s.WriteFile(ctx, "offsets/../../escape", []byte("b")) // rejected
	es, err := s.Walk(ctx, "")
	wantList(t, "Walk", es, err, "offsets/0(1)")
}

// testDeferred: the deferred variants (storage.WriteFileDeferred, DeleteDeferred) keep WriteFile's
// and Delete's contracts (create-only, the old bytes kept, missing paths not an error) on every
// store, whether it implements DeferredSyncer or falls back.
func testDeferred(t *testing.T, s storage.Store) {
	ctx := ctxT(t)
	if err := storage.WriteFileDeferred(ctx, s, "commits/3", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := storage.WriteFileDeferred(ctx, s, "commits/3", []byte("second")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteFileDeferred = %v, want an error wrapping fs.ErrExist", err)
	}
	if err := s.WriteFile(ctx, "commits/3", []byte("third")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("WriteFile over a deferred write = %v, want an error wrapping fs.ErrExist", err)
	}
	if b, err := s.ReadFile(ctx, "commits/3"); err != nil || string(b) != "first" {
		t.Fatalf("ReadFile = %q, %v; want %q", b, err, "first")
	}
	write(t, s, map[string]string{"offsets/4": "o"})
	if err := storage.DeleteDeferred(ctx, s, "commits/3"); err != nil {
		t.Fatal(err)
	}
	if err := storage.DeleteDeferred(ctx, s, "commits/never"); err != nil {
		t.Errorf("DeleteDeferred of a missing path = %v, want nil", err)
	}
	if err := storage.SyncDeferred(ctx, s); err != nil {
		t.Fatal(err)
	}
	es, err := s.Walk(ctx, "")
	wantList(t, "Walk after the deferred delete", es, err, "offsets/4(1)")
	if err := storage.WriteFileDeferred(ctx, s, "commits/3", []byte("again")); err != nil {
		t.Fatalf("a deleted name written again: %v", err)
	}
}

func testCanceled(t *testing.T, s storage.Store) {
	write(t, s, map[string]string{"f": "1"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.ReadFile(ctx, "f")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFile with a canceled context = %v, want context.Canceled", err)
	}
	err = s.WriteFile(ctx, "g", []byte("1"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WriteFile with a canceled context = %v, want context.Canceled", err)
	}
	if _, err := s.Stat(context.Background(), "g"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a canceled WriteFile left g behind: %v", err)
	}
}
