package transfer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

func local(t *testing.T, dir string) *storage.Local {
	t.Helper()
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// files lists a store's files (ckpt's own directory left out) as "path=bytes" lines.
func files(t *testing.T, s storage.Store) string {
	t.Helper()
	es, err := s.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if !e.IsDir && !strings.HasPrefix(e.Path, OwnDir+"/") {
			out = append(out, e.Path+"="+read(t, s, e.Path))
		}
	}
	return strings.Join(out, "\n")
}

// A source directory that is a symlink (commits -> elsewhere) is followed, as doctor and
// Spark read through it: before, cp skipped it and the copy lost every commit. A link back to a
// directory above it is refused, not skipped.
func TestCopyFollowsSymlinkedDirectory(t *testing.T) {
	root := t.TempDir()
	ck := local(t, filepath.Join(root, "ck"))
	fixture(t, ck, storage.NewMem())
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.Rename(filepath.Join(root, "ck", "commits"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "ck", "commits")); err != nil {
		t.Fatal(err)
	}
	dck := local(t, filepath.Join(root, "copy"))
	res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"commits/0", "commits/1", "commits/.1.crc"} {
		if got, err := dck.ReadFile(ctx, p); err != nil || string(got) != read(t, ck, p) {
			t.Errorf("%s in the copy: %q, %v", p, got, err)
		}
	}
	if len(res.Links) != 1 || res.Links[0] != ck.URI()+"/commits" {
		t.Errorf("followed links %q", res.Links)
	}
	if fi, err := os.Lstat(filepath.Join(root, "copy", "commits")); err != nil || !fi.IsDir() {
		t.Errorf("the copy's commits: %v, %v; want a real directory", fi, err)
	}

	if err := os.Symlink("..", filepath.Join(root, "ck", "state")); err != nil {
		t.Fatal(err)
	}
	_, err = Copy(ctx, []Pair{{KindCheckpoint, ck, local(t, filepath.Join(root, "copy2"))}}, Options{})
	if !errors.Is(err, storage.ErrSymlinkCycle) || !strings.Contains(err.Error(), "state") {
		t.Fatalf("a link to its parent: %v, want a symlink cycle naming state", err)
	}
}

// Destinations inside a source (the other pair's too), in a log directory of the other copy,
// or through a symlink into the source are refused before anything is written; the common
// layout of a checkpoint inside its sink's output is not.
func TestCheckLayoutRefusesOverlaps(t *testing.T) {
	root := t.TempDir()
	ck, out := local(t, filepath.Join(root, "ck")), local(t, filepath.Join(root, "out"))
	fixture(t, ck, out)
	before := files(t, ck)
	if err := os.Symlink(filepath.Join(root, "ck", "offsets"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	d := func(p string) storage.Store { return local(t, filepath.Join(root, p)) }
	for _, tc := range []struct {
		name       string
		dck, dsink storage.Store
		want       string
	}{
		{"sink copy inside the source checkpoint", d("d"), d("ck/offsets/sinkcopy"), "the source"},
		{"sink copy in the copy's offsets", d("d"), d("d/offsets/sinkcopy"), "lies in offsets"},
		{"sink copy in the copy's state", d("d"), d("d/state/x"), "lies in state"},
		{"checkpoint copy in the sink copy's log", d("d/out/_spark_metadata/ck"), d("d/out"), "lies in _spark_metadata"},
		{"checkpoint copy inside the source sink", d("out/ck"), d("d/out"), "the source"},
		{"sink copy through a symlink into the source", d("d"), d("link/x"), "the source"},
		{"one place", d("d"), d("d"), "one place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Copy(ctx, []Pair{{KindCheckpoint, ck, tc.dck}, {KindSink, out, tc.dsink}}, Options{})
			if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an overlap (%s)", err, tc.want)
			}
		})
	}
	if files(t, ck) != before {
		t.Fatal("the source checkpoint changed")
	}
	// Spark's own layout, the checkpoint inside the output, copied as it is.
	if err := CheckLayout([]Pair{{KindCheckpoint, ck, d("e/out/_checkpoint")}, {KindSink, out, d("e/out")}}); err != nil {
		t.Fatalf("checkpoint inside the output: %v", err)
	}
}

// A rewrite that sends the sink's entries to another place than --sink-dst (file:// to s3a://
// in a local copy) is found: before, sink verify guessed the base from the entries and said OK.
func TestRewrittenSinkPathsOutsideDestination(t *testing.T) {
	root := t.TempDir()
	ck, out := local(t, filepath.Join(root, "ck")), local(t, filepath.Join(root, "out"))
	fixture(t, ck, out)
	dout := local(t, filepath.Join(root, "d", "out"))
	res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, local(t, filepath.Join(root, "d", "ck"))}, {KindSink, out, dout}},
		Options{Rewrites: []Rewrite{{"file:", "s3a://b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.OutsideCount != 2 || res.Outside[0].Path != "s3a://b/old/out/part-0" || res.Outside[0].LogFile != "_spark_metadata/0" {
		t.Fatalf("outside %d %+v", res.OutsideCount, res.Outside)
	}
	// Rewritten to the destination itself: nothing outside.
	dout2 := local(t, filepath.Join(root, "d2", "out"))
	res, err = Copy(ctx, []Pair{{KindSink, out, dout2}}, Options{Rewrites: []Rewrite{{"file:/old/out", "file:" + filepath.ToSlash(filepath.Join(root, "d2", "out"))}}})
	if err != nil || res.OutsideCount != 0 || res.Sink == nil || !res.Sink.OK() {
		t.Fatalf("rewritten into the destination: %v, outside %d, sink %+v", err, res.OutsideCount, res.Sink)
	}
}

// A killed copy leaves the temporary file of the write it was in (HDFS writes
// offsets/.1.<uuid>.tmp, then renames it; Local without O_TMPFILE the same). --resume removes
// its own (storage.IsOwnTemp), so the finished copy equals an uninterrupted one (before, the
// temp stayed and the copy differed from the source), and refuses a file it did not write.
func TestResumeRemovesOwnTemporaryFiles(t *testing.T) {
	run := func(t *testing.T, newStore func(t *testing.T) storage.Store) {
		ck, out := local(t, t.TempDir()), local(t, t.TempDir())
		fixture(t, ck, out)
		ref := newStore(t)
		if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, ref}}, Options{}); err != nil {
			t.Fatal(err)
		}
		dck := newStore(t)
		if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, storage.NewFaulty(dck).FailMutation(6, nil)}}, Options{Parallelism: 1}); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("err = %v", err)
		}
		// What the killed write of offsets/1 left: its temporary file, named as the store names it.
		leftover := "offsets/" + storage.TempName("1")
		put(t, dck, leftover, "half of offsets/1")
		res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}}, Options{Resume: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.TempsRemoved) != 1 || res.TempsRemoved[0] != leftover {
			t.Errorf("temps removed %q", res.TempsRemoved)
		}
		same(t, ref, dck)

		// A file the copy did not write (a Spark temp, random UUID) is refused, not removed.
		dck2 := newStore(t)
		if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, storage.NewFaulty(dck2).FailMutation(6, nil)}}, Options{Parallelism: 1}); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("err = %v", err)
		}
		foreign := "offsets/.1.0b8e9d86-3a2f-4c55-9f59-6c1f0d6a2e11.tmp"
		put(t, dck2, foreign, "not ours")
		if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck2}}, Options{Resume: true}); err == nil || !strings.Contains(err.Error(), "not written by this copy") {
			t.Fatalf("a foreign file: %v", err)
		}
		if read(t, dck2, foreign) != "not ours" {
			t.Fatal("a foreign file was touched")
		}
	}
	t.Run("local", func(t *testing.T) {
		run(t, func(t *testing.T) storage.Store { return local(t, filepath.Join(t.TempDir(), "d")) })
	})
	t.Run("hdfs", func(t *testing.T) {
		run(t, func(t *testing.T) storage.Store { return storetest.HDFS(t) })
	})
}
