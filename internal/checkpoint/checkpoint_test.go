package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func write(t testing.TB, s storage.Store, files map[string]string) {
	t.Helper()
	for p, d := range files {
		if err := s.WriteFile(context.Background(), p, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
}

const off = "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1}\n{\"t\":{\"0\":1}}"

func TestLoadListsThreeTimesAndReadsNothing(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	files := map[string]string{"metadata": `{"id":"x"}`, "sources/0/0": "\x00v1\n{}"}
	for i := 0; i < 50; i++ {
		files[fmt.Sprintf("offsets/%d", i)] = off
		files[fmt.Sprintf("commits/%d", i)] = "v1\n{}"
	}
	write(t, mem, files)
	f := storage.NewFaulty(mem)
	cp, err := checkpoint.Load(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	counts := f.Counts()
	if counts[storage.OpList] != 3 {
		t.Errorf("Load made %d List calls, want 3", counts[storage.OpList])
	}
	for _, op := range []storage.Op{storage.OpRead, storage.OpOpen, storage.OpStat, storage.OpWalk} {
		if counts[op] != 0 {
			t.Errorf("Load made %d %s calls, want 0", counts[op], op)
		}
	}
	if l, ok := cp.Offsets.Latest(); !ok || l != 49 {
		t.Errorf("offsets latest = %d, %v", l, ok)
	}
	if !cp.HasMetadata() {
		t.Error("HasMetadata = false")
	}
}

func TestNewLogClassifies(t *testing.T) {
	dir := "offsets"
	es := []storage.Entry{
		{Path: "offsets/.5.crc"},
		{Path: "offsets/.6.0b9c4f7e-2a41-4d2f-9a0b-5c1e2d3f4a5b.tmp"},
		{Path: "offsets/10"},
		{Path: "offsets/2"},
		{Path: "offsets/5"},
		{Path: "offsets/7", IsDir: true}, // Spark master: batches must be files
		{Path: "offsets/9.compact"},      // HDFSMetadataLog ignores .compact
		{Path: "offsets/foo"},
		{Path: "offsets/+11"}, // Long.parseLong accepts the sign
	}
	l := checkpoint.NewLog(dir, es)
	if want := []int64{2, 5, 10, 11}; !reflect.DeepEqual(l.IDs(), want) {
		t.Errorf("IDs = %v, want %v", l.IDs(), want)
	}
	if len(l.Temps) != 1 || len(l.Checksums) != 1 || len(l.Others) != 3 {
		t.Errorf("temps %v checksums %v others %v", l.Temps, l.Checksums, l.Others)
	}
	if p, ok := l.Prev(10); !ok || p != 5 {
		t.Errorf("Prev(10) = %d, %v", p, ok)
	}
	if p, ok := l.Prev(5); !ok || p != 2 {
		t.Errorf("Prev(5) = %d, %v", p, ok)
	}
	if _, ok := l.Prev(2); ok {
		t.Error("Prev(2) found something below the first id")
	}
	if n, ok := l.Next(6); !ok || n != 10 {
		t.Errorf("Next(6) = %d, %v", n, ok)
	}
	if _, ok := l.Next(12); ok {
		t.Error("Next(12) found something")
	}
	if !l.Has(5) || l.Has(7) {
		t.Error("Has is wrong for 5 or 7")
	}
	if _, ok := l.ChecksumFor("5"); !ok {
		t.Error("ChecksumFor(5) missing")
	}
	if e, ok := l.Earliest(); !ok || e != 2 {
		t.Errorf("Earliest = %d, %v", e, ok)
	}
	var empty *checkpoint.Log
	if _, ok := empty.Latest(); ok {
		t.Error("nil log has a latest id")
	}
}

func TestReadsAreCachedAndTyped(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	write(t, mem, map[string]string{"offsets/0": off, "offsets/1": "", "commits/0": "v1\n{}", "metadata": `{"id":"q"}`})
	f := storage.NewFaulty(mem)
	cp, err := checkpoint.Load(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := cp.ReadOffsets(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := cp.ReadCommit(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if m, err := cp.ReadMetadata(ctx); err != nil || m.ID != "q" {
			t.Fatal(m, err)
		}
		_, err := cp.ReadOffsets(ctx, 1)
		var le *logformat.Error
		if !errors.As(err, &le) || le.File != "offsets/1" || le.Kind != logformat.KindEmpty {
			t.Fatalf("ReadOffsets(1) error = %v, want a KindEmpty *logformat.Error for offsets/1", err)
		}
	}
	if n := f.Count(storage.OpRead) + f.Count(storage.OpOpen); n != 4 {
		t.Errorf("%d reads for 4 distinct files read 3 times each, want 4", n)
	}
	if _, err := cp.ReadOffsets(ctx, 9); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing offsets: %v, want fs.ErrNotExist", err)
	}
	if _, err := cp.ReadCommit(ctx, 9); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing commit: %v, want fs.ErrNotExist", err)
	}
	if _, err := cp.ReadFile(ctx, "sources/0/0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestMissingMetadata(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMem()
	write(t, mem, map[string]string{"offsets/0": off})
	cp, err := checkpoint.Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if cp.HasMetadata() {
		t.Error("HasMetadata = true")
	}
	if _, err := cp.ReadMetadata(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadMetadata: %v, want fs.ErrNotExist", err)
	}
}

func TestSparkPath(t *testing.T) {
	abs, _ := filepath.Abs("ckpt")
	for _, c := range []struct{ uri, want string }{
		{"/tmp/ckpt", "file:/tmp/ckpt/offsets/7"},
		{"/tmp/ckpt/", "file:/tmp/ckpt/offsets/7"},
		{"file:///tmp/ckpt", "file:/tmp/ckpt/offsets/7"},
		{"file:/tmp/ckpt", "file:/tmp/ckpt/offsets/7"},
		{"s3a://bucket/q1", "s3a://bucket/q1/offsets/7"},
		{"mem://x", "mem://x/offsets/7"},
		{"ckpt", "file:" + filepath.ToSlash(abs) + "/offsets/7"},
	} {
		if got := checkpoint.SparkPath(c.uri, "offsets/7"); got != c.want {
			t.Errorf("SparkPath(%q) = %q, want %q", c.uri, got, c.want)
		}
	}
}

func TestLoadLocal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "offsets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"0", "1", ".1.crc"} {
		if err := os.WriteFile(filepath.Join(dir, "offsets", n), []byte(off), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cp.Offsets.IDs(), []int64{0, 1}) || len(cp.Commits.IDs()) != 0 {
		t.Errorf("offsets %v commits %v", cp.Offsets.IDs(), cp.Commits.IDs())
	}
	// offsets/ is listed by name only: no size, no time, but the path and kind.
	if e, _ := cp.Offsets.File(1); e != (storage.Entry{Path: "offsets/1"}) {
		t.Errorf("offsets/1 listed as %+v, want the path only", e)
	}
	if st, err := st.Stat(ctx, "offsets/1"); err != nil || st.Size != int64(len(off)) {
		t.Errorf("stat offsets/1: size %d, %v", st.Size, err)
	}
}

// TestNewLogKeepsIDsAndOddNames: a log keeps ids only, in numeric order whatever the listing's
// order; a name that is not the canonical spelling of its id is kept as the file's path, and of
// two spellings of one id the first by name backs the batch and the other is an oddity.
func TestNewLogKeepsIDsAndOddNames(t *testing.T) {
	es := []storage.Entry{
		{Path: "offsets/10"}, {Path: "offsets/5"}, {Path: "offsets/9"}, {Path: "offsets/+5"},
		{Path: "offsets/+3"}, {Path: "offsets/.9.crc"}, {Path: "offsets/x"}, {Path: "offsets/1", IsDir: true},
	}
	l := checkpoint.NewLog("offsets", es)
	if !reflect.DeepEqual(l.IDs(), []int64{3, 5, 9, 10}) {
		t.Fatalf("IDs = %v", l.IDs())
	}
	for id, want := range map[int64]string{3: "offsets/+3", 5: "offsets/+5", 9: "offsets/9", 10: "offsets/10", 4: ""} {
		if got := l.FilePath(id); got != want {
			t.Errorf("FilePath(%d) = %q, want %q", id, got, want)
		}
	}
	var others []string
	for _, e := range l.Others {
		others = append(others, e.Path)
	}
	if !reflect.DeepEqual(others, []string{"offsets/1", "offsets/5", "offsets/x"}) {
		t.Errorf("Others = %v", others)
	}
	if len(l.Checksums) != 1 || l.Has(4) || !l.Has(3) {
		t.Errorf("checksums %v, Has(4) %v, Has(3) %v", l.Checksums, l.Has(4), l.Has(3))
	}
}
