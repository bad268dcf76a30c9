package sparkoracle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// TestSparkLiveStateWriter: every HDFS-backed store of the Spark-written state fixtures
// (testdata/spark-state), each delta and snapshot rewritten by ckpt's state file writer in its
// own codec, reads in Spark's statestore reader (Spark 4.0 and 4.1; 3.5 has none) as the
// same rows and the same change feed as the store Spark wrote.
func TestSparkLiveStateWriter(t *testing.T) {
	for _, rel := range releasesFromEnv(t) {
		if strings.HasPrefix(rel, "3.") {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			jars := filepath.Join(sparkCache(), rel, "jars")
			if _, err := os.Stat(filepath.Join(jars, ".complete")); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("Spark %s is not installed in %s", rel, sparkCache())
				}
				t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
			}
			compareRewritten(t, rel, stateFixtures(t, Line(rel)), rewriteStateFiles)
		})
	}
}

const confCheckpointFormat = "spark.sql.streaming.stateStore.checkpointFormatVersion"

// compareRewritten copies each fixture's checkpoint twice, has rewrite replace state files in
// the second copy, and checks that Spark's statestore reader reads every store of both as the
// same rows, and the same change feed of the last batch.
func compareRewritten(t *testing.T, rel string, fixtures []string, rewrite func(*testing.T, string) int) {
	t.Helper()
	work := t.TempDir()
	var reqs []string
	var pairs [][2]string
	for _, fx := range fixtures {
		name := filepath.Base(fx)
		orig := filepath.Join(work, name, "spark")
		ours := filepath.Join(work, name, "ckpt")
		copyTree(t, filepath.Join(fx, "checkpoint"), orig)
		copyTree(t, filepath.Join(fx, "checkpoint"), ours)
		if n := rewrite(t, ours); n == 0 {
			t.Fatalf("%s: no state file rewritten", name)
		}
		last := lastCommit(t, orig)
		// A checkpoint of format v2 is read with the fixture's format version.
		conf := ""
		var fc struct {
			Conf map[string]string `json:"conf"`
		}
		if data, err := os.ReadFile(filepath.Join(fx, "conf.json")); err == nil && json.Unmarshal(data, &fc) == nil {
			if v, ok := fc.Conf[confCheckpointFormat]; ok {
				conf = confCheckpointFormat + "=" + v
			}
		}
		for _, st := range stores(t, orig) {
			for _, changes := range []string{"", fmt.Sprint(last)} {
				var out [2]string
				for i, ck := range []string{orig, ours} {
					out[i] = filepath.Join(work, fmt.Sprintf("%s-%s-%s-%d.jsonl", name, st[0], st[1], i))
					if changes != "" {
						out[i] = strings.TrimSuffix(out[i], ".jsonl") + ".changes.jsonl"
					}
					req := strings.Join([]string{ck, st[0], st[1], out[i]}, "\t")
					if changes != "" || conf != "" {
						req += "\t" + changes
					}
					if conf != "" {
						req += "\t" + conf
					}
					reqs = append(reqs, req)
				}
				pairs = append(pairs, out)
			}
		}
	}
	runStateRead(t, rel, reqs)
	read := 0
	for _, p := range pairs {
		want, werr := readOrError(p[0])
		got, gerr := readOrError(p[1])
		// An error names its copy of the checkpoint (<work>/<fixture>/spark or ckpt).
		werr = strings.ReplaceAll(werr, "/spark/", "/<copy>/")
		gerr = strings.ReplaceAll(gerr, "/ckpt/", "/<copy>/")
		if werr == "" {
			read++
		}
		if werr != gerr {
			t.Errorf("%s: Spark's store: %q; ckpt's: %q", filepath.Base(p[1]), werr, gerr)
			continue
		}
		if werr == "" && len(want) == 0 && !strings.Contains(p[0], ".changes") {
			t.Errorf("%s: Spark read no rows from its own store", filepath.Base(p[0]))
		}
		if !bytes.Equal(want, got) {
			t.Errorf("%s: Spark reads other rows from ckpt's store:\nspark's: %s\nckpt's:  %s", filepath.Base(p[1]), want, got)
		}
	}
	if read == 0 {
		t.Errorf("Spark read none of its own stores")
	}
	t.Logf("%d fixtures, %d readings compared (%d read, the others failed alike on Spark's store)", len(fixtures), len(pairs), read)
}

// stateFixtures are the HDFS-backed fixture cases of the release line (4.0 → 4.0.x).
func stateFixtures(t *testing.T, line string) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("../../testdata/spark-state", line+".*", "*"))
	var out []string
	for _, d := range dirs {
		zips, _ := filepath.Glob(filepath.Join(d, "checkpoint/state/*/*/*.zip"))
		if fi, err := os.Stat(filepath.Join(d, "checkpoint")); err == nil && fi.IsDir() && len(zips) == 0 {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no HDFS-backed state fixtures for Spark %s in testdata/spark-state", line)
	}
	return out
}

// rewriteStateFiles replaces every delta and snapshot below ck/state with ckpt's writing of
// its records.
func rewriteStateFiles(t *testing.T, ck string) int {
	t.Helper()
	return rewriteFiles(t, ck, []string{".delta", ".snapshot"}, func(p, codec string, plain io.Reader, out io.Writer) (bool, error) {
		kind := statefmt.Delta
		if strings.HasSuffix(p, ".snapshot") {
			kind = statefmt.Snapshot
		}
		fw, err := statefmt.NewFileWriter(codec, out)
		if err != nil {
			return false, err
		}
		return true, copyRecords(statefmt.NewRecordReader(p, kind, plain), fw, false)
	})
}

// recordSink is a writer of state file records.
type recordSink interface {
	Put(key, value []byte) error
	Delete(key []byte) error
	Close() error
}

// copyRecords writes every record of rr to w and closes w; strip drops the RocksDB encoding
// byte before each row (w adds it back).
func copyRecords(rr *statefmt.RecordReader, w recordSink, strip bool) error {
	for {
		r, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return w.Close()
		}
		if err != nil {
			return err
		}
		if strip {
			r.Key = r.Key[1:]
			if !r.Delete {
				r.Value = r.Value[1:]
			}
		}
		if r.Delete {
			err = w.Delete(r.Key)
		} else {
			err = w.Put(r.Key, r.Value)
		}
		if err != nil {
			return err
		}
	}
}

// rewriteFiles replaces every file below ck/state whose name ends in one of suffixes by what
// rewrite writes to out from its decompressed bytes (a file it declines stays), and drops the
// checksum files (Hadoop's .<name>.crc, Spark 4.1's <name>.crc) that describe Spark's bytes. It
// returns the number of files rewritten.
func rewriteFiles(t *testing.T, ck string, suffixes []string, rewrite func(p, codec string, plain io.Reader, out io.Writer) (bool, error)) int {
	t.Helper()
	n, differ := 0, 0
	err := filepath.WalkDir(filepath.Join(ck, "state"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(p, s) }) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		codec := statefmt.DetectCodec(data)
		dr, err := statefmt.Decompress(p, codec, bytes.NewReader(data))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if ok, err := rewrite(p, codec, dr, &buf); err != nil || !ok {
			return err
		}
		if !bytes.Equal(buf.Bytes(), data) {
			differ++
		}
		dir, base := filepath.Split(p)
		for _, crc := range []string{filepath.Join(dir, "."+base+".crc"), p + ".crc", filepath.Join(dir, "."+base+".crc.crc")} {
			if err := os.Remove(crc); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		n++
		return os.WriteFile(p, buf.Bytes(), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A file without records is the same bytes in any writer; the others must differ from
	// Spark's, or the test would prove nothing.
	if differ == 0 {
		t.Fatalf("%s: every rewritten file has Spark's own bytes", ck)
	}
	return n
}

func lastCommit(t *testing.T, ck string) int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(ck, "commits"))
	if err != nil {
		t.Fatal(err)
	}
	last := int64(-1)
	for _, e := range ents {
		var n int64
		if _, err := fmt.Sscanf(e.Name(), "%d", &n); err == nil && fmt.Sprint(n) == e.Name() && n > last {
			last = n
		}
	}
	return last
}

// stores lists (operator id, store name) of a checkpoint's state, as Spark's reader names them.
func stores(t *testing.T, ck string) [][2]string {
	t.Helper()
	ops, err := os.ReadDir(filepath.Join(ck, "state"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, op := range ops {
		names := map[string]bool{}
		parts, _ := os.ReadDir(filepath.Join(ck, "state", op.Name()))
		for _, p := range parts {
			sub, _ := os.ReadDir(filepath.Join(ck, "state", op.Name(), p.Name()))
			for _, s := range sub {
				if s.IsDir() && s.Name() != "_metadata" && s.Name() != "SSTs" {
					names[s.Name()] = true
				}
			}
		}
		if len(names) == 0 {
			names["default"] = true
		}
		for n := range names {
			out = append(out, [2]string{op.Name(), n})
		}
	}
	return out
}

// runStateRead compiles spark/StateRead.java for rel and runs every request in one JVM.
func runStateRead(t *testing.T, rel string, reqs []string) {
	t.Helper()
	runJava(t, rel, "StateRead", reqs)
}

func readOrError(p string) ([]byte, string) {
	if e, err := os.ReadFile(p + ".error"); err == nil {
		return nil, strings.TrimSpace(string(e))
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err.Error()
	}
	return data, ""
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
