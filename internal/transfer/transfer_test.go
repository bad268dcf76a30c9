package transfer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

var ctx = context.Background()

func put(t *testing.T, s storage.Store, p, data string) {
	t.Helper()
	if err := s.WriteFile(ctx, p, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s storage.Store, p string) string {
	t.Helper()
	b, err := s.ReadFile(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const metadata = `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`

func sinkEntry(p string, size int64, action string) string {
	return string(logformat.AppendSinkFileStatusJSON(nil, logformat.SinkFileStatus{Path: p, Size: size, ModificationTime: 1700000000000, BlockReplication: 1, BlockSize: 33554432, Action: action}))
}

// fixture writes a checkpoint with a file source (whose log names files under /old/in) and a
// file sink output (whose log names /old/out), as Spark writes them.
func fixture(t *testing.T, ck, out storage.Store) {
	t.Helper()
	put(t, ck, "metadata", metadata)
	put(t, ck, "offsets/0", "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1700000000000,\"conf\":{}}\n{\"logOffset\":0}")
	put(t, ck, "offsets/1", "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1700000001000,\"conf\":{}}\n{\"logOffset\":1}")
	put(t, ck, "commits/0", "v1\n{\"nextBatchWatermarkMs\":0}")
	put(t, ck, "commits/1", "v1\n{\"nextBatchWatermarkMs\":0}")
	put(t, ck, "sources/0/0", "v1\n{\"path\":\"file:///old/in/a.json\",\"timestamp\":1700000000000,\"batchId\":0}")
	put(t, ck, "sources/0/.0.crc", "crc of the old bytes")
	put(t, ck, "sources/0/1", "v1\n{\"path\":\"file:///old/in/b.json\",\"timestamp\":1700000001000,\"batchId\":1}\n{\"path\":\"s3a://elsewhere/c.json\",\"timestamp\":1700000001000,\"batchId\":1}")
	put(t, ck, "commits/.1.crc", "crc of commits/1")
	put(t, ck, "offsets/.1.crc", "crc of offsets/1")
	put(t, ck, "_ckpt/lock", `{"id":"a repair's lock"}`)
	put(t, out, "part-0", "aaaa")
	put(t, out, "part-1", "bbbbbb")
	put(t, out, "_SUCCESS", "")
	put(t, out, "_spark_metadata/0", "v1\n"+sinkEntry("file:/old/out/part-0", 4, "add"))
	put(t, out, "_spark_metadata/1", "v1\n"+sinkEntry("file:/old/out/part-1", 6, "add"))
}

func exists(present map[string]bool) func(context.Context, string) (bool, error) {
	return func(_ context.Context, p string) (bool, error) { return present[p], nil }
}

func TestCopyRewritesAndChecks(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) storage.Store{
		"mem": func(*testing.T) storage.Store { return storage.NewMem() },
		"local": func(t *testing.T) storage.Store {
			s, err := storage.NewLocal(filepath.Join(t.TempDir(), "x"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			ck, out, dck, dout := mk(t), mk(t), mk(t), mk(t)
			fixture(t, ck, out)
			newOut := strings.TrimRight(dout.URI(), "/")
			if !strings.Contains(newOut, "://") {
				newOut = "file:" + newOut
			}
			res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{
				Rewrites: []Rewrite{{"file:///old/in", "file:///new/in"}, {"file:/old/out", newOut}},
				Exists:   exists(map[string]bool{"file:///new/in/a.json": true}),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.RewrittenFiles != 4 || res.RewrittenEntries != 4 || res.Unrewritten != 1 {
				t.Errorf("rewritten %d files %d entries, %d unrewritten", res.RewrittenFiles, res.RewrittenEntries, res.Unrewritten)
			}
			// b.json does not exist at its new place: the check names it.
			if res.Checked != 2 || res.MissingCount != 1 || res.Missing[0].Path != "file:///new/in/b.json" || res.Missing[0].LogFile != "sources/0/1" {
				t.Errorf("checked %d, missing %+v", res.Checked, res.Missing)
			}
			if got := read(t, dck, "sources/0/0"); got != "v1\n{\"path\":\"file:///new/in/a.json\",\"timestamp\":1700000000000,\"batchId\":0}" {
				t.Errorf("sources/0/0 = %q", got)
			}
			if got, want := read(t, dout, "_spark_metadata/1"), "v1\n"+sinkEntry(newOut+"/part-1", 6, "add"); got != want {
				t.Errorf("sink log = %q, want %q", got, want)
			}
			for _, p := range []string{"metadata", "offsets/1", "commits/1", "commits/.1.crc", "_SUCCESS"} {
				src := ck
				dst := dck
				if p == "_SUCCESS" {
					src, dst = out, dout
				}
				if read(t, dst, p) != read(t, src, p) {
					t.Errorf("%s differs", p)
				}
			}
			// The checksum of a rewritten log, and ckpt's own directory, are not copied.
			for _, p := range []string{"sources/0/.0.crc", "_ckpt/lock"} {
				if _, err := dck.Stat(ctx, p); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s copied: %v", p, err)
				}
			}
			if len(res.ChecksumsDropped) != 1 {
				t.Errorf("checksums dropped %v", res.ChecksumsDropped)
			}
			if res.Sink == nil || !res.Sink.OK() || res.Sink.BaseGuessed || res.Sink.Live != 2 {
				t.Errorf("sink verification %+v", res.Sink)
			}
			if res.Doctor == nil {
				t.Fatal("no doctor report")
			}
			for _, f := range res.Doctor.Findings {
				if f.Severity == "error" {
					t.Errorf("doctor: %s %s", f.Code, f.Message)
				}
			}
			// The source is untouched.
			if read(t, ck, "sources/0/0") != "v1\n{\"path\":\"file:///old/in/a.json\",\"timestamp\":1700000000000,\"batchId\":0}" {
				t.Error("source changed")
			}
		})
	}
}

func TestCopyWithoutRewriteIsByteForByte(t *testing.T) {
	ck, out, dck, dout := storage.NewMem(), storage.NewMem(), storage.NewMem(), storage.NewMem()
	fixture(t, ck, out)
	res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RewrittenEntries != 0 || res.Files != 15 {
		t.Errorf("%+v", res)
	}
	// Written a moment ago: a running query may still be writing.
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], "/offsets/") || !strings.Contains(res.Warnings[1], "_spark_metadata/1 was written") {
		t.Errorf("warnings %q", res.Warnings)
	}
	if read(t, dck, "sources/0/.0.crc") != "crc of the old bytes" {
		t.Error("checksum not copied")
	}
	// The sink's log names /old/out: verify guesses the base and finds the files there.
	if res.Sink == nil || !res.Sink.BaseGuessed {
		t.Errorf("sink %+v", res.Sink)
	}
}

func TestCopyRefusesNonEmptyDestination(t *testing.T) {
	ck, out, dck := storage.NewMem(), storage.NewMem(), storage.NewMem()
	fixture(t, ck, out)
	put(t, dck, "something", "x")
	_, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}}, Options{})
	if !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("err = %v", err)
	}
	_, err = Copy(ctx, []Pair{{KindCheckpoint, ck, dck}}, Options{Resume: true})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "no partial copy") {
		t.Fatalf("resume into a foreign destination: %v", err)
	}
}

// An injected failure stops the copy half-way; --resume finishes it, and the result is the
// same as an uninterrupted copy. A second copy into the finished destination is refused.
func TestResumeAfterFailure(t *testing.T) {
	run := func(t *testing.T, newStore func(t *testing.T) storage.Store) {
		ck, out := newStore(t), newStore(t)
		fixture(t, ck, out)
		rw := []Rewrite{{"file:///old/in", "file:///new/in"}}
		ref, refOut := newStore(t), newStore(t)
		if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, ref}, {KindSink, out, refOut}}, Options{Rewrites: rw}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, 2, 5, 9, 11} {
			t.Run(fmt.Sprint(k), func(t *testing.T) {
				dck, dout := newStore(t), newStore(t)
				faulty := storage.NewFaulty(dck).FailMutation(k, nil)
				res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, faulty}, {KindSink, out, dout}}, Options{Rewrites: rw, Parallelism: 1})
				if !errors.Is(err, storage.ErrInjected) {
					t.Fatalf("err = %v", err)
				}
				_ = res
				if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{Rewrites: rw}); !errors.Is(err, ErrNotEmpty) && k > 1 {
					t.Fatalf("without --resume: %v", err)
				}
				// Other rewrites than the partial copy's: refused.
				if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{Resume: true}); err == nil && k > 1 {
					t.Fatal("resume with other rewrites accepted")
				}
				res, err = Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{Rewrites: rw, Resume: true})
				if err != nil {
					t.Fatal(err)
				}
				if k > 2 && res.Skipped == 0 {
					t.Errorf("nothing skipped after %d writes", k-1)
				}
				same(t, ref, dck)
				same(t, refOut, dout)
				if _, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}}, Options{Rewrites: rw}); !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "complete copy") {
					t.Fatalf("copy into a finished copy: %v", err)
				}
			})
		}
	}
	t.Run("mem", func(t *testing.T) { run(t, func(*testing.T) storage.Store { return storage.NewMem() }) })
	t.Run("s3", func(t *testing.T) {
		client, bucket := storetest.S3Bucket(t)
		run(t, func(*testing.T) storage.Store {
			return storage.NewS3FromClient(client, bucket, storetest.RandomName("cp-"))
		})
	})
}

// same compares two copies, ignoring the markers' times.
func same(t *testing.T, a, b storage.Store) {
	t.Helper()
	ea, err := a.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	names := func(es []storage.Entry) string {
		var s []string
		for _, e := range es {
			if !e.IsDir {
				s = append(s, e.Path)
			}
		}
		return strings.Join(s, " ")
	}
	if names(ea) != names(eb) {
		t.Fatalf("files differ:\n%s\n%s", names(ea), names(eb))
	}
	for _, e := range ea {
		if e.IsDir || strings.HasPrefix(e.Path, OwnDir+"/") {
			continue
		}
		if read(t, a, e.Path) != read(t, b, e.Path) {
			t.Errorf("%s differs", e.Path)
		}
	}
}

// Local to S3 through the real S3 protocol (versitygw), with the sink's paths rewritten to s3a.
func TestCopyLocalToS3(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	ck, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fixture(t, ck, out)
	dck := storage.NewS3FromClient(client, bucket, "ckpt/q")
	dout := storage.NewS3FromClient(client, bucket, "out")
	res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{
		Rewrites: []Rewrite{{"file:/old/out", "s3a://" + bucket + "/out"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sink == nil || !res.Sink.OK() || res.Sink.BaseGuessed || res.RewrittenEntries != 2 {
		t.Fatalf("sink %+v, rewritten %d", res.Sink, res.RewrittenEntries)
	}
	if got := read(t, dout, sinklog.Dir+"/0"); !strings.Contains(got, `"s3a://`+bucket+`/out/part-0"`) {
		t.Errorf("sink log %q", got)
	}
	if _, err := dck.Stat(ctx, DoneFile); err != nil {
		t.Errorf("done marker: %v", err)
	}
}

// Spark's own logs, rewritten: the file sink log (7.compact, 8, 9) and the file source log
// (2.compact, 3, 4) of Spark's test resources. Only the path prefixes change; every other byte,
// the fixtures' trailing newline included, is Spark's.
func TestRewriteSparkFixtures(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "spark", "structured-streaming")
	ck, out, dck, dout := storage.NewMem(), storage.NewMem(), storage.NewMem(), storage.NewMem()
	load := func(s storage.Store, dir, to string, names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			data, err := os.ReadFile(filepath.Join(root, dir, n))
			if err != nil {
				t.Fatal(err)
			}
			put(t, s, to+"/"+n, string(data))
			m[to+"/"+n] = string(data)
		}
		return m
	}
	sink := load(out, "file-sink-log-version-2.1.0", sinklog.Dir, "7.compact", "8", "9")
	src := load(ck, "file-source-log-version-2.1.0", "sources/0", "2.compact", "3", "4")
	put(t, ck, "metadata", metadata)
	res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}, {KindSink, out, dout}}, Options{
		Rewrites: []Rewrite{{"/a/", "gs://in/"}, {"/a/b/", "s3a://bucket/out/"}}, // the longest prefix wins
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(dst storage.Store, files map[string]string, old, nw string) {
		for p, orig := range files {
			want := strings.ReplaceAll(orig, `"path":"`+old, `"path":"`+nw)
			if got := read(t, dst, p); got != want {
				t.Errorf("%s:\n%s\nwant\n%s", p, got, want)
			}
		}
	}
	check(dout, sink, "/a/b/", "s3a://bucket/out/")
	check(dck, src, "/a/b/", "s3a://bucket/out/")
	if res.Unrewritten != 0 || res.RewrittenFiles != 6 {
		t.Errorf("rewritten files %d, unrewritten entries %d", res.RewrittenFiles, res.Unrewritten)
	}
}

// A rewritten path whose location cannot be read is left unchecked, with a warning; the copy
// stands.
func TestUncheckedPaths(t *testing.T) {
	ck, out, dck := storage.NewMem(), storage.NewMem(), storage.NewMem()
	fixture(t, ck, out)
	res, err := Copy(ctx, []Pair{{KindCheckpoint, ck, dck}}, Options{
		Rewrites: []Rewrite{{"file:///old/in", "hdfs://nn:8020/in"}},
		Exists:   func(context.Context, string) (bool, error) { return false, errors.New("unsupported location") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchecked != 2 || res.MissingCount != 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "cannot check hdfs://nn:8020/in/") {
		t.Fatalf("unchecked %d missing %d warnings %q", res.Unchecked, res.MissingCount, res.Warnings)
	}
}
