package recovery_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// sparkMigrateError is what Spark's query failed with in testdata/spark-migrate (path under
// it), after "terminated with exception: " and without the SQLSTATE of STREAM_FAILED itself.
func sparkMigrateError(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile("../../testdata/spark-migrate/" + path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	_, msg, ok := strings.Cut(first, "terminated with exception: ")
	if !ok {
		t.Fatalf("%s: %q", path, first)
	}
	return strings.TrimSuffix(msg, " SQLSTATE: XXKST")
}

// rocksDBPartitions is one RocksDB store whose partition 0 holds files.
func rocksDBPartitions(files ...recovery.StateFile) *recovery.StateInventory {
	return &recovery.StateInventory{Checked: true, Operators: []recovery.StateOperator{{Stores: []recovery.StateStore{{
		Name: "default", Provider: recovery.StateProviderRocksDB,
		Partitions: []recovery.StatePartition{{ID: 0, Dir: "state/0/0", Files: files}},
	}}}}}
}

// v2Files is a partition in checkpoint format v2, as Spark 4.2.0 left
// testdata/spark-state/4.2.0/agg-rocksdb-changelog-v2 (zips of versions 2 and 4).
func v2Files() []recovery.StateFile {
	ids := []string{"", "9729aef7", "430fb593", "37c64a8e", "d4ab519c", "4cea6b3e"}
	var fs []recovery.StateFile
	for v := int64(1); v <= 5; v++ {
		name := itoa(v) + "_" + ids[v]
		fs = append(fs, recovery.StateFile{Path: "state/0/0/" + name + ".changelog", Version: v, Kind: "changelog", UniqueID: ids[v]})
		if v == 2 || v == 4 {
			fs = append(fs, recovery.StateFile{Path: "state/0/0/" + name + ".zip", Version: v, Kind: "zip", UniqueID: ids[v]})
		}
	}
	return fs
}

// v2Committed is committed(t) with v2 commits (checkpoint format v2).
func v2Committed(t *testing.T) map[string]string {
	m := committed(t)
	for _, id := range []string{"0", "1", "2", "3", "4"} {
		m["commits/"+id] = "v2\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{\"0\":[[\"x\"]]}}"
	}
	return m
}

// Checkpoint format v2 state restarted with the setting at 1 (the default): Spark 4.2.0 read
// the v2 commit and failed loading the state (its v1 loader parses every zip name as a
// version: NumberFormatException, inside CANNOT_LOAD_STATE_STORE.UNCATEGORIZED); 4.0.0 and
// 4.1.1, which wrote such checkpoints too, failed on the commit first, and 3.5.7 too. With the
// setting at 2, 4.0+ load it.
func TestStateFormatV2NamesPerRelease(t *testing.T) {
	inv := rocksDBPartitions(v2Files()...)
	res := mustPlan(t, memCheckpoint(t, v2Committed(t)), recovery.Options{SparkVersion: "4.2", State: inv})
	want := sparkMigrateError(t, "4.2.0/agg-rocksdb-changelog-v2/to-4.2.0/unmigrated.error")
	if res.Outcome != recovery.OutcomeFail || res.Reason != recovery.ReasonStateFormatUnsupported || res.FailedFile != "state/0/0/4_d4ab519c.zip" {
		t.Fatalf("4.2: %s (reason %s, file %s)", res.Verdict(), res.Reason, res.FailedFile)
	}
	if got := deref(res.Error); got != want || res.ErrorInexact {
		t.Errorf("4.2 predicted\n%s\nSpark 4.2.0 failed with\n%s", got, want)
	}
	if res.RootCause == nil || res.RootCause.Exception != "java.lang.NumberFormatException" || res.RootCause.Error != `For input string: "4_d4ab519c"` {
		t.Errorf("4.2 root cause %+v", res.RootCause)
	}
	for _, rel := range []string{"3.5", "4.0", "4.1"} {
		res := mustPlan(t, memCheckpoint(t, v2Committed(t)), recovery.Options{SparkVersion: rel, State: inv})
		if res.Outcome != recovery.OutcomeFail || res.FailedFile != "commits/4" || res.Reason == recovery.ReasonStateFormatUnsupported {
			t.Errorf("%s: %s (reason %s, file %s): want the commit's version", rel, res.Verdict(), res.Reason, res.FailedFile)
		}
	}
	for _, rel := range []string{"4.0", "4.1", "4.2"} {
		res := mustPlan(t, memCheckpoint(t, v2Committed(t)), recovery.Options{SparkVersion: rel, CommitFormatVersion: 2, State: inv})
		if res.Outcome != recovery.OutcomeResume || res.NextBatch != 5 {
			t.Errorf("%s with the setting at 2: %s", rel, res.Verdict())
		}
	}
	// The same files in format v1 names load.
	v1 := v2Files()
	for i := range v1 {
		v1[i].UniqueID = ""
	}
	if res := mustPlan(t, memCheckpoint(t, committed(t)), recovery.Options{SparkVersion: "4.2", State: rocksDBPartitions(v1...)}); res.Outcome != recovery.OutcomeResume {
		t.Errorf("4.2, v1 names: %s", res.Verdict())
	}
}

// RocksDB SST files of BlockBasedTable format_version 6 (rocksdb.formatVersion=6, Spark 4.1+):
// Spark 3.5.7's RocksDB refused them when it opened the zip's tables; 4.0.0 and 4.1.1 read them
// (testdata/spark-migrate/*/agg-rocksdb-fv6-zstd).
func TestStateFormatSST6PerRelease(t *testing.T) {
	zip := func(format int) *recovery.StateInventory {
		return rocksDBPartitions(
			recovery.StateFile{Path: "state/0/0/4.zip", Version: 4, Kind: "zip", SSTFormat: format},
			recovery.StateFile{Path: "state/0/0/5.changelog", Version: 5, Kind: "changelog"})
	}
	ck := memCheckpoint(t, committed(t))
	res := mustPlan(t, ck, recovery.Options{SparkVersion: "3.5", State: zip(6)})
	want := sparkMigrateError(t, "4.2.0/agg-rocksdb-fv6-zstd/to-3.5.7/unmigrated.error")
	if res.Outcome != recovery.OutcomeFail || res.Reason != recovery.ReasonStateFormatUnsupported || res.FailedFile != "state/0/0/4.zip" {
		t.Fatalf("3.5: %s (reason %s, file %s)", res.Verdict(), res.Reason, res.FailedFile)
	}
	if got := deref(res.Error); got != want {
		t.Errorf("3.5 predicted\n%s\nSpark 3.5.7 failed with\n%s", got, want)
	}
	if res := mustPlan(t, ck, recovery.Options{SparkVersion: "3.5", State: zip(5)}); res.Outcome != recovery.OutcomeResume {
		t.Errorf("3.5, format 5: %s", res.Verdict())
	}
	for _, rel := range []string{"4.0", "4.1", "4.2"} {
		if res := mustPlan(t, ck, recovery.Options{SparkVersion: rel, State: zip(6)}); res.Outcome != recovery.OutcomeResume {
			t.Errorf("%s, format 6: %s", rel, res.Verdict())
		}
	}
	for rel, want := range map[string]int{"3.5.7": 5, "4.0": 6, "4.2.0": 6} {
		if got, err := recovery.MaxSSTFormat(rel); err != nil || got != want {
			t.Errorf("MaxSSTFormat(%s) = %d, %v", rel, got, err)
		}
	}
}
