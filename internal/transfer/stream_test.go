package transfer

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// noWhole is a store on which the files big names may only be streamed: reading one whole
// (ReadFile) or writing one from memory (WriteFile) fails the test.
type noWhole struct {
	storage.Store
	t   *testing.T
	big func(p string) bool
}

func (n noWhole) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if n.big(p) {
		n.t.Errorf("ReadFile(%s): the file was read whole", p)
	}
	return n.Store.ReadFile(ctx, p)
}

func (n noWhole) WriteFile(ctx context.Context, p string, data []byte) error {
	if n.big(p) {
		n.t.Errorf("WriteFile(%s): the file was held whole", p)
	}
	return n.Store.WriteFile(ctx, p, data)
}

func stores(t *testing.T) map[string]func() storage.Store {
	return map[string]func() storage.Store{
		"mem": func() storage.Store { return storage.NewMem() },
		"local": func() storage.Store {
			s, err := storage.NewLocal(filepath.Join(t.TempDir(), "x"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// cp streams data and state files: neither side ever holds one whole (the source is never
// read with ReadFile, the destination never written with WriteFile), and the copies hold the
// source's bytes. Before, each was read whole and written from memory: a 1 GiB state file cost
// cp 2 GiB and more.
func TestCopyStreamsLargeFiles(t *testing.T) {
	const size = 24<<20 + 5
	big := func(p string) bool { return p == "state/0/0/1.delta" || p == "state/0/1/1.delta" || p == "part-2" }
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ck, out := mk(), mk()
			fixture(t, ck, out)
			for _, p := range []string{"state/0/0/1.delta", "state/0/1/1.delta"} {
				if err := ck.Create(ctx, p, storetest.GeneratedSource(size, size, nil)); err != nil {
					t.Fatal(err)
				}
			}
			if err := out.Create(ctx, "part-2", storetest.GeneratedSource(size, size, nil)); err != nil {
				t.Fatal(err)
			}
			dck, dout := mk(), mk()
			res, err := Copy(ctx, []Pair{
				{KindCheckpoint, noWhole{ck, t, big}, noWhole{dck, t, big}},
				{KindSink, noWhole{out, t, big}, noWhole{dout, t, big}},
			}, Options{Parallelism: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"state/0/0/1.delta", "state/0/1/1.delta"} {
				if err := storetest.HoldsGenerated(ctx, dck, p, size); err != nil {
					t.Error(err)
				}
			}
			if err := storetest.HoldsGenerated(ctx, dout, "part-2", size); err != nil {
				t.Error(err)
			}
			if res.Bytes < 3*size {
				t.Errorf("Bytes = %d, want at least %d", res.Bytes, 3*size)
			}
		})
	}
}

// A source file whose size changes between the listing and the copy fails the copy, naming
// it; nothing is published at its name.
func TestCopySourceChangedSize(t *testing.T) {
	ck := storage.NewMem()
	fixture(t, ck, storage.NewMem())
	put(t, ck, "state/0/0/1.delta", "1234")
	src := &growing{Store: ck, path: "state/0/0/1.delta"}
	dst := storage.NewMem()
	_, err := Copy(ctx, []Pair{{KindCheckpoint, src, dst}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "state/0/0/1.delta") || !strings.Contains(err.Error(), storage.ErrSourceSize.Error()) {
		t.Fatalf("Copy = %v, want the changed size named", err)
	}
	if _, err := dst.Stat(ctx, "state/0/0/1.delta"); err == nil {
		t.Fatal("a copy of the changed file was published")
	}
}

// growing gives two bytes more of path than its listing said.
type growing struct {
	storage.Store
	path string
}

func (g *growing) Open(ctx context.Context, p string) (io.ReadCloser, error) {
	rc, err := g.Store.Open(ctx, p)
	if err != nil || p != g.path {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(rc, strings.NewReader("++")), rc}, nil
}

// A sink's compact file is rewritten entry by entry: never read whole or written from memory
// (here 20,000 entries, under a file cap it exceeds 30 times), and the result is what Spark's
// serializer writes for the rewritten entries: logformat's whole-file writer.
func TestCopyRewritesCompactStreamed(t *testing.T) {
	defer func(n int64) { logformat.MaxFileBytes = n }(logformat.MaxFileBytes)
	logformat.MaxFileBytes = 128 << 10
	const entries = 20000
	var b strings.Builder
	b.WriteString("v1")
	for i := range entries {
		b.WriteString("\n")
		b.WriteString(sinkEntry(fmt.Sprintf("file:/old/out/part-%05d", i), int64(i), "add"))
	}
	b.WriteString("\n")
	compact := b.String()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ck, out := mk(), mk()
			fixture(t, ck, out)
			put(t, out, "_spark_metadata/9.compact", compact)
			isCompact := func(p string) bool { return strings.HasSuffix(p, ".compact") }
			dck, dout := mk(), mk()
			res, err := Copy(ctx, []Pair{
				{KindCheckpoint, ck, dck},
				{KindSink, noWhole{out, t, isCompact}, noWhole{dout, t, isCompact}},
			}, Options{Rewrites: []Rewrite{{Old: "file:/old/out", New: "file:/new/out"}}, SinkLocation: "file:/new/out"})
			if err != nil {
				t.Fatal(err)
			}
			lg, err := logformat.ParseSinkLog("9.compact", []byte(compact))
			if err != nil {
				t.Fatal(err)
			}
			for i := range lg.Entries {
				lg.Entries[i].Path = strings.Replace(lg.Entries[i].Path, "file:/old/out", "file:/new/out", 1)
			}
			want := string(lg.Marshal())
			if got := read(t, dout, "_spark_metadata/9.compact"); got != want {
				t.Fatalf("rewritten compact file: %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
			// 20,000 of the compact file, 2 of the fixture's batch files.
			if res.RewrittenEntries != entries+2 || res.OutsideCount != 0 {
				t.Errorf("RewrittenEntries = %d, OutsideCount = %d; want %d and 0", res.RewrittenEntries, res.OutsideCount, entries+2)
			}
		})
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
