package sinklog

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// sparkSink writes what Spark's file sink writes for batches 0..last with one data file per
// batch: the data file, then the log file (N.compact at compaction batches, holding every live
// entry before it and its own, as CompactibleFileStreamLog.compact does). It returns the bytes
// of each log file.
func sparkSink(t *testing.T, s storage.Store, last int64, interval int) map[string][]byte {
	t.Helper()
	base := strings.TrimRight(s.URI(), "/")
	if !strings.Contains(base, "://") {
		base = "file:" + base
	}
	var all []logformat.SinkFileStatus
	out := map[string][]byte{}
	for b := int64(0); b <= last; b++ {
		name := fmt.Sprintf("part-%05d.parquet", b)
		size := 100 + b
		if err := s.WriteFile(ctx, name, bytes.Repeat([]byte{'x'}, int(size))); err != nil {
			t.Fatal(err)
		}
		e := logformat.SinkFileStatus{Path: base + "/" + name, Size: size, ModificationTime: 1700000000000 + b, BlockReplication: 1, BlockSize: 33554432, Action: ActionAdd}
		all = append(all, e)
		own := []logformat.SinkFileStatus{e}
		p := path.Join(Dir, fmt.Sprint(b))
		if IsCompactionBatch(b, interval) {
			own, p = all, p+CompactSuffix
		}
		data := (&logformat.SinkLog{Version: 1, Entries: own}).Marshal()
		if err := s.WriteFile(ctx, p, data); err != nil {
			t.Fatal(err)
		}
		out[p] = data
	}
	return out
}

func localStore(t *testing.T) storage.Store {
	t.Helper()
	s, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyClean(t *testing.T) {
	for name, s := range map[string]storage.Store{"mem": storage.NewMem(), "local": localStore(t)} {
		t.Run(name, func(t *testing.T) {
			sparkSink(t, s, 21, 10)
			// Hidden files are not data: Spark's listing skips them.
			for _, p := range []string{"_SUCCESS", ".part-00000.parquet.crc", "_temporary/0/x", "_ckpt/lock"} {
				if err := s.WriteFile(ctx, p, []byte("h")); err != nil {
					t.Fatal(err)
				}
			}
			v, err := Verify(ctx, s, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !v.OK() || v.Live != 22 || v.Present != 22 || v.BaseGuessed {
				t.Fatalf("clean sink: ok=%v live=%d present=%d guessed=%v problems=%+v", v.OK(), v.Live, v.Present, v.BaseGuessed, v.Problems)
			}
		})
	}
}

func TestVerifyFindsMissingExtraAndSize(t *testing.T) {
	s := storage.NewMem()
	sparkSink(t, s, 21, 10)
	must(t, s.Delete(ctx, "part-00003.parquet"))
	must(t, s.Delete(ctx, "part-00020.parquet"))
	must(t, s.WriteFile(ctx, "part-00020.parquet", []byte("short")))
	must(t, s.WriteFile(ctx, "part-00099.parquet", []byte("orphan of a failed batch")))
	must(t, s.WriteFile(ctx, "k=1/part-00100.parquet", []byte("orphan in a partition")))
	v, err := Verify(ctx, s, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range v.Problems {
		got[p.Path] = p.Code
	}
	want := map[string]string{
		"part-00003.parquet":     CodeFileMissing,
		"part-00020.parquet":     CodeFileSizeMismatch,
		"part-00099.parquet":     CodeFileExtra,
		"k=1/part-00100.parquet": CodeFileExtra,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("problems %v, want %v", got, want)
	}
	if v.Counts[CodeFileExtra] != 2 {
		t.Errorf("counts %v", v.Counts)
	}
}

func TestVerifyAppliesDeletes(t *testing.T) {
	s := storage.NewMem()
	base := s.URI()
	must(t, s.WriteFile(ctx, "a", []byte("aa")))
	must(t, s.WriteFile(ctx, "b", []byte("bb")))
	must(t, s.WriteFile(ctx, Dir+"/0", []byte(logFile(entry(base+"/a", 2, "add"), entry(base+"/b", 2, "add")))))
	must(t, s.WriteFile(ctx, Dir+"/1", []byte(logFile(entry(base+"/a", 2, "delete")))))
	v, err := Verify(ctx, s, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// "a" is deleted from the log, so its file is an extra, not a live file.
	if v.Live != 1 || v.Counts[CodeFileExtra] != 1 || v.Problems[0].Path != "a" {
		t.Fatalf("live %d counts %v problems %+v", v.Live, v.Counts, v.Problems)
	}
}

func TestVerifyMissingCompactAndMovedOutput(t *testing.T) {
	s := storage.NewMem()
	sparkSink(t, s, 21, 10)
	must(t, s.Delete(ctx, Dir+"/19.compact"))
	v, err := Verify(ctx, s, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Counts[CodeLogBatchMissing] != 1 || v.Problems[0].Path != Dir+"/19.compact" {
		t.Fatalf("counts %v problems %+v", v.Counts, v.Problems)
	}

	// A copy of the output whose log still names the original location: the base is guessed.
	src := storage.NewMem()
	sparkSink(t, src, 3, 10)
	dst := storage.NewMem()
	es, _ := src.Walk(ctx, "")
	for _, e := range es {
		data, _ := src.ReadFile(ctx, e.Path)
		must(t, dst.WriteFile(ctx, e.Path, data))
	}
	v, err = Verify(ctx, dst, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || !v.BaseGuessed || strings.TrimSuffix(v.Base, "/") != src.URI() {
		t.Fatalf("moved output: ok=%v guessed=%v base=%s problems=%+v", v.OK(), v.BaseGuessed, v.Base, v.Problems)
	}
}

func TestResolver(t *testing.T) {
	for _, tc := range []struct {
		out, entry, rel string
		ok              bool
	}{
		{"/data/out", "file:/data/out/part-0", "part-0", true},
		{"/data/out", "file:///data/out/k=1/part-0", "k=1/part-0", true},
		{"/data/out", "/data/out/part-0", "part-0", true},
		{"/data/out", "file:/data/out/../etc/passwd", "", false},
		{"s3://b/out", "s3a://b/out/part%20x", "part x", true},
		{"s3://b/out", "s3a://other/out/part-0", "", false},
		{"gs://b/out", "gs://b/out/p", "p", true},
		{"abfss://c@acct.dfs.core.windows.net/out", "abfss://c@acct.dfs.core.windows.net/out/p", "p", true},
		{"hdfs://nn:8020/out", "hdfs://nn:8020/out/p", "p", true},
	} {
		r := NewResolver(tc.out, []string{tc.entry, "file:/data/out/anchor"})
		if tc.out != "/data/out" {
			r = NewResolver(tc.out, []string{tc.entry, strings.TrimRight(tc.out, "/") + "/anchor"})
		}
		rel, ok := r.Rel(tc.entry)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("%s in %s: %q %v, want %q %v", tc.entry, tc.out, rel, ok, tc.rel, tc.ok)
		}
	}
}

func TestHidden(t *testing.T) {
	for p, want := range map[string]bool{
		"part-0": false, "k=1/part-0": false, "_k=1/part-0": false,
		"_SUCCESS": true, ".part-0.crc": true, "_spark_metadata/0": true, "x/_temporary/y": true, "part-0._COPYING_": true,
	} {
		if Hidden(p) != want {
			t.Errorf("Hidden(%q) = %v", p, !want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Spark's own file sink log (2.1.0 format, compact interval 8): 7.compact, then 8 adds /a/b/8
// and deletes /a/b/0, then 9. Its live files are /a/b/1..9; /a/b/0 is deleted, so its file is an
// extra. The log names /a/b, so verify resolves against that.
func TestVerifySparkFixture(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "spark", "structured-streaming", "file-sink-log-version-2.1.0")
	s := storage.NewMem()
	for _, n := range []string{"7.compact", "8", "9"} {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.WriteFile(ctx, Dir+"/"+n, data))
	}
	sizes := map[string]int{"0": 1, "9": 900}
	for i := 1; i <= 8; i++ {
		sizes[fmt.Sprint(i)] = 100 * i
	}
	for n, size := range sizes {
		must(t, s.WriteFile(ctx, n, make([]byte, size)))
	}
	v, err := Verify(ctx, s, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Base != "/a/b" || !v.BaseGuessed || v.Live != 9 || v.CompactInterval != 8 {
		t.Fatalf("base %s guessed %v live %d interval %d", v.Base, v.BaseGuessed, v.Live, v.CompactInterval)
	}
	if len(v.Problems) != 1 || v.Problems[0].Code != CodeFileExtra || v.Problems[0].Path != "0" {
		t.Fatalf("problems %+v", v.Problems)
	}
}

// With the sink's retention option, readers skip old entries: their files may be gone.
func TestVerifyRetention(t *testing.T) {
	s := storage.NewMem()
	sparkSink(t, s, 21, 10)
	must(t, s.Delete(ctx, "part-00003.parquet"))
	now := func() time.Time { return time.UnixMilli(1700000000000 + 9).Add(time.Second) }
	v, err := Verify(ctx, s, VerifyOptions{Retention: time.Second - time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// Batches 0..9 are past retention: part-00003 is not missing, and the other nine are extras.
	if v.Expired != 10 || v.Live != 12 || v.Counts[CodeFileMissing] != 0 || v.Counts[CodeFileExtra] != 9 {
		t.Fatalf("expired %d live %d counts %v", v.Expired, v.Live, v.Counts)
	}
}
