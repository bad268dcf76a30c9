package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// replayDir runs replay on a copy of the Spark-written checkpoint fixture (testdata/spark-state),
// with the files of drop removed from the copy first.
func replayDir(t *testing.T, fixture string, drop ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("../../../testdata/spark-state", fixture, "checkpoint"))); err != nil {
		t.Fatal(err)
	}
	for _, f := range drop {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	io, _, out, _ := iostreams.Test()
	opts := &Options{IO: io, Location: fixture, Output: render.FormatTable, State: stateRead,
		OpenStore: func(context.Context, string) (storage.Store, error) { return st, nil }}
	if err := runReplay(context.Background(), opts); err != nil {
		t.Fatalf("%s: %v\n%s", fixture, err, out)
	}
	// doctor --deep on the same files: nothing but the batch a crash left uncommitted.
	cp, err := checkpoint.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	rel := strings.Join(strings.SplitN(filepath.Dir(fixture), ".", 3)[:2], ".")
	rep, err := doctor.Run(context.Background(), cp, doctor.Options{Mode: recovery.ModeSync, SparkVersion: rel, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Code != doctor.CodeUncommittedBatch || len(drop) == 0 {
			t.Errorf("%s without %v: doctor --deep: %s %s", fixture, drop, f.Code, f.Message)
		}
	}
	return out.String()
}

// TestReplayStateLoadSparkWritten: on checkpoints Spark wrote (every release's fixtures: five
// committed batches, maintenance snapshots at version 3 (HDFS-backed), zips at 2 and 4 with
// changelogs (RocksDB)), replay says which version the next batch loads and from which files;
// with the last commit removed (a crash before Spark wrote commits/4), that batch 4 re-runs
// against version 4 and that the version 5 files it wrote are not read. doctor --deep finds
// nothing on them but that uncommitted batch.
func TestReplayStateLoadSparkWritten(t *testing.T) {
	for _, rel := range []string{"3.5.8", "4.0.2", "4.1.4", "4.2.0"} {
		for _, c := range []struct {
			fixture string
			drop    []string
			want    string
		}{
			{"agg-hdfs", nil,
				"operator 0 loads version 5 (from 3.snapshot + 4.delta..5.delta in 2 partitions), batch 5 runs against it"},
			{"agg-hdfs", []string{"commits/4", "commits/.4.crc"},
				"operator 0 loads version 4 (from 3.snapshot + 4.delta in 2 partitions), batch 4 re-runs against it; version 5 files in partitions 0, 1 (2 of 2), left by its crashed attempt, are not read: batch 4 writes version 5 again"},
			{"agg-rocksdb-changelog", nil,
				"operator 0 loads version 5 (from 4.zip + 5.changelog in 2 partitions), batch 5 runs against it"},
			{"agg-rocksdb-changelog", []string{"commits/4", "commits/.4.crc"},
				"operator 0 loads version 4 (from 4.zip in 2 partitions), batch 4 re-runs against it; version 5 files in partitions 0, 1 (2 of 2), left by its crashed attempt, are not read: batch 4 writes version 5 again"},
		} {
			out := replayDir(t, filepath.Join(rel, c.fixture), c.drop...)
			if !hasKV(out, "state", c.want) {
				t.Errorf("%s %s without %v: no state line %q in\n%s", rel, c.fixture, c.drop, c.want, out)
			}
		}
	}
}

// hasKV reports whether the table output has the row "key: value".
func hasKV(out, key, value string) bool {
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key && strings.TrimSpace(v) == value {
			return true
		}
	}
	return false
}
