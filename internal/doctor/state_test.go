package doctor

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// copyFixture copies a checkpoint real Spark wrote (testdata/spark-state) to a temp dir, so a
// test can damage it.
func copyFixture(t *testing.T, rel string) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "spark-state", rel, "checkpoint")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, r), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, r), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// loadCheckpoint loads the checkpoint in dir.
func loadCheckpoint(t *testing.T, dir string) *checkpoint.Checkpoint {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func runDoctor(t *testing.T, dir string, opts Options) *Report {
	t.Helper()
	ctx := context.Background()
	rep, err := Run(ctx, loadCheckpoint(t, dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_STATE_GOLDENS") != "" {
		// testdata/state/*.golden.json feed TestCodeCoverage (the state codes need Spark's
		// fixtures, not a scenario).
		_ = os.MkdirAll(filepath.Join("testdata", "state"), 0o755)
		b, _ := json.MarshalIndent(map[string]any{"findings": rep.Findings}, "", "  ")
		name := strings.NewReplacer("/", "_").Replace(t.Name())
		_ = os.WriteFile(filepath.Join("testdata", "state", name+".golden.json"), append(b, '\n'), 0o644)
	}
	return rep
}

func findCode(rep *Report, code string) *Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Code == code {
			return &rep.Findings[i]
		}
	}
	return nil
}

func stateCodesIn(rep *Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Code, "state-") || f.Code == CodeRocksDBSSTMissing {
			out = append(out, f.Code)
		}
	}
	return out
}

func TestStateFixturesAreClean(t *testing.T) {
	for _, rel := range []string{"4.0.2/agg-hdfs", "3.5.8/agg-hdfs", "3.5.8/agg-rocksdb-changelog"} {
		rep := runDoctor(t, filepath.Join("..", "..", "testdata", "spark-state", rel, "checkpoint"), Options{Deep: true})
		if c := stateCodesIn(rep); len(c) != 0 {
			t.Errorf("%s: state findings on a checkpoint Spark left whole: %v", rel, c)
		}
	}
}

func TestStateVersionMissing(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	if err := os.Remove(filepath.Join(dir, "state/0/1/4.delta")); err != nil {
		t.Fatal(err)
	}
	rep := runDoctor(t, dir, Options{SparkVersion: "4.0"})
	f := findCode(rep, CodeStateVersionMissing)
	if f == nil || f.Severity != Error || f.Path != "state/0/1/4.delta" {
		t.Fatalf("want state-version-missing on state/0/1/4.delta, got %+v", rep.Findings)
	}
	if !strings.Contains(f.Message, "newest whole version of this partition is 3") {
		t.Errorf("message does not name the newest whole version: %s", f.Message)
	}
	if f.SparkError == nil || !strings.Contains(*f.SparkError, "[CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS]") ||
		!strings.Contains(*f.SparkError, "HDFSStateStoreProvider[id = (op=0,part=1),dir = file:") {
		t.Errorf("Spark error: %v", f.SparkError)
	}
	// Spark 3.5's text: the task's exception inside "Job aborted" (golden
	// testdata/spark-state-damage/3.5.7/delta-missing.json).
	rep = runDoctor(t, dir, Options{SparkVersion: "3.5"})
	if f := findCode(rep, CodeStateVersionMissing); f == nil || !strings.HasPrefix(*f.SparkError, "org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage") ||
		!strings.Contains(*f.SparkError, "java.lang.IllegalStateException: Error reading delta file file:") {
		t.Errorf("3.5 Spark error: %+v", f)
	}
	// The restart line is the planner's: batch 5 fails loading version 5, not "resumes".
	if !rep.Restart.Failed() || rep.Restart.Reason != recovery.ReasonStateFileMissing || rep.Restart.NextBatch != 5 {
		t.Errorf("restart: %s (%s)", rep.Restart.Verdict(), rep.Restart.Reason)
	}
}

// The missing snapshot whose older deltas were cleaned up: Spark reads the deltas from version 1
// up and names 1.delta (golden snapshot-missing-deltas-cleaned).
func TestStateVersionMissingNamesTheFirstDeltaSparkReads(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	for _, f := range []string{"3.snapshot", "1.delta", "2.delta"} {
		if err := os.Remove(filepath.Join(dir, "state/0/1", f)); err != nil {
			t.Fatal(err)
		}
	}
	rep := runDoctor(t, dir, Options{SparkVersion: "4.0"})
	if f := findCode(rep, CodeStateVersionMissing); f == nil || f.Path != "state/0/1/1.delta" || !strings.Contains(*f.SparkError, "state/0/1/1.delta does not exist") {
		t.Errorf("finding: %+v", f)
	}
}

func TestStateSnapshotLossIsHarmlessWithAllDeltas(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	// Deltas 1-5 are all there: without the snapshot Spark replays them from version 0.
	if err := os.Remove(filepath.Join(dir, "state/0/0/3.snapshot")); err != nil {
		t.Fatal(err)
	}
	rep := runDoctor(t, dir, Options{Deep: true})
	if c := stateCodesIn(rep); len(c) != 0 {
		t.Fatalf("findings %v", c)
	}
	// Without delta 2 as well, version 5 cannot be rebuilt.
	if err := os.Remove(filepath.Join(dir, "state/0/0/2.delta")); err != nil {
		t.Fatal(err)
	}
	rep = runDoctor(t, dir, Options{})
	if f := findCode(rep, CodeStateVersionMissing); f == nil || f.Path != "state/0/0/2.delta" {
		t.Fatalf("want state-version-missing on 2.delta, got %+v", rep.Findings)
	}
}

func TestStatePartitionsMismatch(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	if err := os.RemoveAll(filepath.Join(dir, "state/0/1")); err != nil {
		t.Fatal(err)
	}
	rep := runDoctor(t, dir, Options{})
	f := findCode(rep, CodeStatePartitionsMismatch)
	if f == nil || f.Severity != Error || !strings.Contains(f.Message, "missing: 1") {
		t.Fatalf("want state-partitions-mismatch error, got %+v", rep.Findings)
	}
	// An extra directory is a warning.
	dir = copyFixture(t, "4.0.2/agg-hdfs")
	if err := os.MkdirAll(filepath.Join(dir, "state/0/2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state/0/2/1.delta"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep = runDoctor(t, dir, Options{})
	if f := findCode(rep, CodeStatePartitionsMismatch); f == nil || f.Severity != Warning {
		t.Fatalf("want a warning, got %+v", rep.Findings)
	}
}

func TestStateFileCorruptOnlyWithDeep(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	p := filepath.Join(dir, "state/0/1/5.delta")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if c := stateCodesIn(runDoctor(t, dir, Options{})); len(c) != 0 {
		t.Fatalf("the default run read files: %v", c)
	}
	rep := runDoctor(t, dir, Options{Deep: true})
	f := findCode(rep, CodeStateFileCorrupt)
	if f == nil || f.Path != "state/0/1/5.delta" || !strings.Contains(f.Message, "state/0/1/5.delta: offset") {
		t.Fatalf("want state-file-corrupt naming the file and offset, got %+v", rep.Findings)
	}
}

func TestStateSchemaMissing(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	if err := os.Remove(filepath.Join(dir, "state/0/0/_metadata/schema")); err != nil {
		t.Fatal(err)
	}
	rep := runDoctor(t, dir, Options{})
	if f := findCode(rep, CodeStateSchemaMissing); f == nil || f.Severity != Warning || f.Path != "state/0/0/_metadata/schema" {
		t.Fatalf("want state-schema-missing, got %+v", rep.Findings)
	}
}

func TestStateLineageBroken(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-rocksdb-changelog-v2")
	m, _ := filepath.Glob(filepath.Join(dir, "state/0/1/5_*.changelog"))
	if len(m) != 1 {
		t.Fatalf("fixture: %v", m)
	}
	// A changelog of version 5 with another id: a retried attempt's, not the committed one.
	if err := os.Rename(m[0], filepath.Join(dir, "state/0/1/5_00000000-0000-0000-0000-000000000000.changelog")); err != nil {
		t.Fatal(err)
	}
	rep := runDoctor(t, dir, Options{SparkVersion: "4.1"})
	f := findCode(rep, CodeStateLineageBroken)
	if f == nil || !strings.Contains(f.Message, "commits/4 names state id") || len(f.Files) != 1 {
		t.Fatalf("want state-lineage-broken, got %+v", rep.Findings)
	}
}

func TestRocksDBSSTMissing(t *testing.T) {
	dir := copyFixture(t, "3.5.8/agg-rocksdb")
	ssts, _ := filepath.Glob(filepath.Join(dir, "state/0/0/SSTs/*.sst"))
	if len(ssts) == 0 {
		t.Fatal("fixture has no SSTs")
	}
	for _, s := range ssts {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	if c := stateCodesIn(runDoctor(t, dir, Options{})); len(c) != 0 {
		t.Fatalf("the default run read zips: %v", c)
	}
	rep := runDoctor(t, dir, Options{Deep: true})
	f := findCode(rep, CodeRocksDBSSTMissing)
	if f == nil || !strings.HasPrefix(f.Path, "state/0/0/SSTs/") || !strings.Contains(*f.SparkError, "FileNotFoundException") {
		t.Fatalf("want rocksdb-sst-missing, got %+v", rep.Findings)
	}
}

// TestStateSSTCorrupt: with --deep, an SST file the restart's zip lists whose footer magic
// is wrong, or whose data block has a flipped byte, is state-file-corrupt naming the file.
func TestStateSSTCorrupt(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func([]byte)
		want string
	}{
		{"magic", func(b []byte) { b[len(b)-2] ^= 0xff }, "expected the block-based table magic"},
		{"block", func(b []byte) { b[5] ^= 0x10 }, "expected the block checksum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixture(t, "4.1.4/agg-rocksdb")
			data, err := os.ReadFile(filepath.Join(dir, "state/0/1/5.zip"))
			if err != nil {
				t.Fatal(err)
			}
			cp, err := statefmt.ParseRocksDBZip("5.zip", data)
			if err != nil || len(cp.SSTFiles) == 0 {
				t.Fatalf("fixture: %v", err)
			}
			p := filepath.Join(dir, "state/0/1/SSTs", cp.SSTFiles[0].DFSName())
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(b)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if codes := stateCodesIn(runDoctor(t, dir, Options{})); len(codes) != 0 {
				t.Fatalf("the default run read SSTs: %v", codes)
			}
			rep := runDoctor(t, dir, Options{Deep: true})
			f := findCode(rep, CodeStateFileCorrupt)
			if f == nil || f.Path != "state/0/1/SSTs/"+cp.SSTFiles[0].DFSName() || !strings.Contains(f.Message, c.want) || !strings.Contains(*f.SparkError, "RocksDBException") {
				t.Fatalf("want state-file-corrupt naming the SST, got %+v", rep.Findings)
			}
		})
	}
	// Spark's own files pass: every RocksDB fixture (crc32c and snappy, XXH3 and lz4, format 6
	// and zstd).
	dirs, _ := filepath.Glob("../../testdata/spark-state/*/*rocksdb*")
	if len(dirs) < 10 {
		t.Fatalf("RocksDB fixtures: %v", dirs)
	}
	for _, d := range dirs {
		rel, _ := filepath.Rel("../../testdata/spark-state", d)
		if f := findCode(runDoctor(t, copyFixture(t, rel), Options{Deep: true}), CodeStateFileCorrupt); f != nil {
			t.Fatalf("%s: %+v", rel, f)
		}
	}
}

func TestStateReclaimable(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	// Versions 6-106 on disk (listing only): maintenance keeps what version 6 needs
	// (3.snapshot, 4-6.delta) and deletes 1.delta and 2.delta.
	for v := 6; v <= 106; v++ {
		if err := os.WriteFile(filepath.Join(dir, "state/0/0", strconv.Itoa(v)+".delta"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := runDoctor(t, dir, Options{})
	f := findCode(rep, CodeStateReclaimable)
	if f == nil || f.Severity != Info || !strings.Contains(f.Message, "2 state files") {
		t.Fatalf("want state-reclaimable for 2 files, got %+v", rep.Findings)
	}
}

// State versions with no offsets and no commits (what a purge or rewind that left state/ behind
// leaves): the fresh start at batch 0 writes versions that exist. It was "✓ no problems found.
// Restart starts a new query at batch 0".
func TestStateAheadOfLogs(t *testing.T) {
	dir := copyFixture(t, "4.0.2/agg-hdfs")
	for _, d := range []string{"offsets", "commits"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	rep := runDoctor(t, dir, Options{SparkVersion: "4.0"})
	f := findCode(rep, CodeStateAheadOfLogs)
	if f == nil || f.Severity != Error || !strings.Contains(f.Message, "state/ holds versions up to 5 (state/0/0/5.delta) but offsets/ and commits/ are empty") ||
		!strings.Contains(f.Message, "from state/0/0/1.delta on") {
		t.Fatalf("want state-ahead-of-logs, got %+v", rep.Findings)
	}
	// The newest commit reaches the state again: resuming needs nothing above its version.
	t.Run("whole", func(t *testing.T) {
		dir := copyFixture(t, "4.0.2/agg-hdfs")
		if f := findCode(runDoctor(t, dir, Options{SparkVersion: "4.0"}), CodeStateAheadOfLogs); f != nil {
			t.Fatalf("a whole checkpoint: %+v", f)
		}
	})
}

// TestStateFormatUnsupported: the planner's failure on state in a format the release does not
// read is a finding with Spark's text: Spark 4.2.0 on checkpoint format v2 names with the
// setting at 1 (the names are listed, so the default run finds it; with the setting at 2 the
// restart resumes), Spark 3.5.7 on SST format 6 (the footers are read with --deep).
func TestStateFormatUnsupported(t *testing.T) {
	dir := copyFixture(t, "4.2.0/agg-rocksdb-fv6-zstd")
	if f := findCode(runDoctor(t, dir, Options{SparkVersion: "4.0", Deep: true}), CodeStateFormatUnsupported); f != nil {
		t.Errorf("4.0 reads format 6: %+v", f)
	}
	rep := runDoctor(t, dir, Options{SparkVersion: "3.5", Deep: true})
	f := findCode(rep, CodeStateFormatUnsupported)
	if f == nil || f.SparkError == nil || !strings.Contains(*f.SparkError, "Unsupported BlockBasedTable format_version") {
		t.Fatalf("3.5: want state-format-unsupported, got %+v", rep.Findings)
	}
	dir = copyFixture(t, "4.2.0/agg-rocksdb-changelog-v2")
	if f := findCode(runDoctor(t, dir, Options{SparkVersion: "4.2", CommitFormatVersion: 2}), CodeStateFormatUnsupported); f != nil {
		t.Errorf("4.2 with the setting at 2: %+v", f)
	}
	rep = runDoctor(t, dir, Options{SparkVersion: "4.2"}) // last: the golden TestCodeCoverage reads
	f = findCode(rep, CodeStateFormatUnsupported)
	if f == nil || !strings.HasPrefix(f.Path, "state/0/0/4_") || f.SparkError == nil ||
		!strings.Contains(*f.SparkError, "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.  SQLSTATE: 58030") ||
		!strings.Contains(strings.Join(f.Commands, "\n"), "--to-spark 4.2") {
		t.Fatalf("4.2: want state-format-unsupported, got %+v", rep.Findings)
	}
}
