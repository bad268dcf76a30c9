package recovery_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// committed is a checkpoint whose batches 0..4 committed: the restart runs batch 5, which
// loads state version 5.
func committed(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{"metadata": testMeta}
	for _, id := range []string{"0", "1", "2", "3", "4"} {
		m["offsets/"+id] = offsetsFile(`{"t":{"0":` + id + `}}`)
		m["commits/"+id] = testCommit
	}
	return m
}

func hdfsPartition(files ...recovery.StateFile) recovery.StateInventory {
	return recovery.StateInventory{Operators: []recovery.StateOperator{{ID: 0, Stores: []recovery.StateStore{{
		Name: "default", Provider: recovery.StateProviderHDFS,
		Partitions: []recovery.StatePartition{
			{ID: 0, Dir: "state/0/0", Files: []recovery.StateFile{{Path: "state/0/0/5.snapshot", Version: 5, Kind: "snapshot"}}},
			{ID: 1, Dir: "state/0/1", Files: files}},
	}}}}}
}

func sf(v int64, kind string, d *recovery.StateDamage) recovery.StateFile {
	return recovery.StateFile{Path: "state/0/1/" + itoa(v) + "." + kind, Version: v, Kind: kind, Damage: d}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// HDFSBackedStateStoreProvider.loadMap looks for the newest snapshot at or below the version and
// then reads every delta after it from the lowest up: with the snapshot gone, the first delta
// it misses is the lowest (golden snapshot-missing-deltas-cleaned: 1.delta, not 2.delta).
func TestStateLoadNamesTheLowestMissingDelta(t *testing.T) {
	ck := memCheckpoint(t, committed(t))
	inv := hdfsPartition(sf(3, "delta", nil), sf(4, "delta", nil), sf(5, "delta", nil))
	res := mustPlan(t, ck, recovery.Options{SparkVersion: "3.5", State: &inv})
	if res.Outcome != recovery.OutcomeFail || res.Reason != recovery.ReasonStateFileMissing || res.FailedFile != "state/0/1/1.delta" {
		t.Fatalf("outcome %s, reason %s, file %s", res.Outcome, res.Reason, res.FailedFile)
	}
	if res.NextBatch != 5 || res.State == nil || res.State.Version != 5 {
		t.Fatalf("next batch %d, state %+v: want batch 5 loading version 5", res.NextBatch, res.State)
	}
	if got := res.State.Loads[0].Files; len(got) != 1 || got[0] != "state/0/0/5.snapshot" {
		t.Errorf("partition 0 opens %v", got)
	}
	if got := res.State.Loads[1].Files; len(got) != 5 || got[0] != "state/0/1/1.delta" {
		t.Errorf("partition 1 opens %v", got)
	}
	// With the snapshot, the base is version 3 and deltas 1-2 are not needed.
	inv = hdfsPartition(sf(3, "snapshot", nil), sf(4, "delta", nil), sf(5, "delta", nil))
	if res := mustPlan(t, ck, recovery.Options{SparkVersion: "3.5", State: &inv}); res.Failed() {
		t.Errorf("with 3.snapshot: %s", deref(res.Error))
	}
}

// A damaged file fails with the release's text; 4.1 checks Spark's checksum file first where
// the read reaches the end of the file, not where the decoder fails before.
func TestStateLoadDamagePerRelease(t *testing.T) {
	ck := memCheckpoint(t, committed(t))
	sum := &recovery.ChecksumMismatch{Expected: 7, Computed: 8, ExpectedSize: 302, Size: 151}
	for _, c := range []struct {
		version string
		damage  recovery.StateDamage
		class   string
		root    string
	}{
		{"3.5", recovery.StateDamage{Kind: recovery.DamageCodecTruncated, Checksum: sum}, "", "java.io.EOFException: Stream ended prematurely"},
		{"4.0", recovery.StateDamage{Kind: recovery.DamageCodecTruncated, Checksum: sum}, "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", "java.io.EOFException: Stream ended prematurely"},
		{"4.1", recovery.StateDamage{Kind: recovery.DamageCodecTruncated, Checksum: sum}, "CHECKPOINT_FILE_CHECKSUM_VERIFICATION_FAILED", "org.apache.spark.SparkException: [CHECKPOINT_FILE_CHECKSUM_VERIFICATION_FAILED] Checksum verification failed"},
		{"4.1", recovery.StateDamage{Kind: recovery.DamageCodecCorrupt, Checksum: sum}, "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", "net.jpountz.lz4.LZ4Exception: Error decoding offset <n>"},
		{"4.0", recovery.StateDamage{Kind: recovery.DamageEmpty}, "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", "java.io.EOFException: "},
	} {
		d := c.damage
		inv := hdfsPartition(sf(3, "snapshot", nil), sf(4, "delta", nil), sf(5, "delta", &d))
		res := mustPlan(t, ck, recovery.Options{SparkVersion: c.version, State: &inv})
		if res.Reason != recovery.ReasonStateFileCorrupt || res.ErrorClass != c.class {
			t.Errorf("%s %s: reason %s, class %q; want %q", c.version, d.Kind, res.Reason, res.ErrorClass, c.class)
			continue
		}
		if root := res.RootCause.Exception + ": " + res.RootCause.Error; !strings.HasPrefix(root, c.root) {
			t.Errorf("%s %s: root cause %s; want %s", c.version, d.Kind, root, c.root)
		}
	}
	// A file whose only fault is its checksum file: 4.0 reads it, 4.1 refuses it.
	inv := hdfsPartition(sf(3, "snapshot", nil), sf(4, "delta", nil), sf(5, "delta", &recovery.StateDamage{Checksum: sum}))
	if res := mustPlan(t, ck, recovery.Options{SparkVersion: "4.0", State: &inv}); res.Failed() {
		t.Errorf("4.0 with a stale checksum file: %s", deref(res.Error))
	}
	if res := mustPlan(t, ck, recovery.Options{SparkVersion: "4.1", State: &inv}); !res.Failed() {
		t.Errorf("4.1 with a stale checksum file resumes")
	}
}

// RocksDB reads an SST block only when the batch looks a key up, after every changelog is
// replayed: a missing changelog fails first.
func TestStateLoadRocksDBOrder(t *testing.T) {
	ck := memCheckpoint(t, committed(t))
	zip := recovery.StateFile{Path: "state/0/1/4.zip", Version: 4, Kind: "zip",
		Damage: &recovery.StateDamage{Kind: recovery.DamageSSTBlock, File: "state/0/1/SSTs/000008-x.sst"}}
	inv := recovery.StateInventory{Operators: []recovery.StateOperator{{Stores: []recovery.StateStore{{
		Name: "default", Provider: recovery.StateProviderRocksDB,
		Partitions: []recovery.StatePartition{{ID: 1, Dir: "state/0/1", Files: []recovery.StateFile{zip}}},
	}}}}}
	res := mustPlan(t, ck, recovery.Options{SparkVersion: "4.0", State: &inv})
	if res.Reason != recovery.ReasonStateFileMissing || res.FailedFile != "state/0/1/5.changelog" {
		t.Fatalf("reason %s, file %s: want the missing changelog", res.Reason, res.FailedFile)
	}
	inv.Operators[0].Stores[0].Partitions[0].Files = append(inv.Operators[0].Stores[0].Partitions[0].Files,
		recovery.StateFile{Path: "state/0/1/5.changelog", Version: 5, Kind: "changelog"})
	res = mustPlan(t, ck, recovery.Options{SparkVersion: "4.0", State: &inv})
	if res.Reason != recovery.ReasonStateFileCorrupt || res.FailedFile != "state/0/1/SSTs/000008-x.sst" || !strings.HasPrefix(deref(res.Error), "Job aborted due to stage failure: Task 1 in stage <stage>") {
		t.Fatalf("reason %s, file %s, error %s", res.Reason, res.FailedFile, deref(res.Error))
	}
}

// A restart that starts a new query (batch 0) loads no state.
func TestStateLoadNothingAtBatchZero(t *testing.T) {
	inv := hdfsPartition(sf(5, "delta", nil))
	res := mustPlan(t, memCheckpoint(t, map[string]string{"metadata": testMeta}), recovery.Options{SparkVersion: "3.5", State: &inv})
	if res.Failed() || res.State != nil {
		t.Fatalf("outcome %s, state %+v", res.Outcome, res.State)
	}
}

// The load summed up per store: partition 0 starts from 5.snapshot, partition 1 from the empty
// map with deltas 1-5; batch 5 is a new batch. With commits/4 gone, batch 4 re-runs against
// version 4, and the version 5 files of its crashed attempt are named and not read.
func TestStateLoadStores(t *testing.T) {
	m := committed(t)
	inv := hdfsPartition(sf(1, "delta", nil), sf(2, "delta", nil), sf(3, "delta", nil), sf(4, "delta", nil), sf(5, "delta", nil))
	res := mustPlan(t, memCheckpoint(t, m), recovery.Options{SparkVersion: "3.5", State: &inv})
	st := res.State
	if st == nil || st.Batch != 5 || st.Rerun || len(st.Stores) != 1 {
		t.Fatalf("state %+v", st)
	}
	if s := st.Stores[0]; s.Partitions != 2 || s.BasePartitions != 1 || s.BaseMin != 5 || s.BaseMax != 5 || s.Steps != 5 || len(s.Ahead) != 0 {
		t.Errorf("store %+v", s)
	}
	if got := st.Lines(); len(got) != 1 || got[0] != "operator 0 loads version 5 (from 5.snapshot in 1 of 2 partitions, then 5 delta files up to 5.delta), batch 5 runs against it" {
		t.Errorf("lines %q", got)
	}
	delete(m, "commits/4")
	p0 := &inv.Operators[0].Stores[0].Partitions[0]
	p0.Files = nil
	for v := int64(1); v <= 5; v++ {
		p0.Files = append(p0.Files, recovery.StateFile{Path: "state/0/0/" + itoa(v) + ".delta", Version: v, Kind: "delta"})
	}
	res = mustPlan(t, memCheckpoint(t, m), recovery.Options{SparkVersion: "3.5", State: &inv})
	st = res.State
	if res.Failed() || st == nil || st.Version != 4 || st.Batch != 4 || !st.Rerun || len(st.Stores) != 1 || fmt.Sprint(st.Stores[0].Ahead) != "[0 1]" {
		t.Fatalf("after a crash of batch 4: state %+v", st)
	}
	want := "operator 0 loads version 4 (from 1.delta..4.delta in 2 partitions), batch 4 re-runs against it; version 5 files in partitions 0, 1 (2 of 2), left by its crashed attempt, are not read: batch 4 writes version 5 again"
	if got := st.Lines(); len(got) != 1 || got[0] != want {
		t.Errorf("lines %q\nwant %q", got, want)
	}
}

// On 4.1.1 a re-run Kafka batch fails after it ran (SPARK-55271): it loaded its state first, so
// the load is predicted; a load that fails stops the batch before the bug.
func TestStateLoadBeforeSparkBug(t *testing.T) {
	m := committed(t)
	delete(m, "commits/4")
	ck := memCheckpoint(t, m)
	p1 := []recovery.StateFile{sf(1, "delta", nil), sf(2, "delta", nil), sf(3, "delta", nil), sf(4, "delta", nil)}
	inv := hdfsPartition(p1...)
	inv.Operators[0].Stores[0].Partitions = inv.Operators[0].Stores[0].Partitions[1:]
	res := mustPlan(t, ck, recovery.Options{SparkVersion: "4.1", State: &inv})
	if res.Reason != recovery.ReasonSparkBug || res.SparkBug == nil || res.State == nil || res.State.Version != 4 || !res.State.Rerun {
		t.Fatalf("reason %s, bug %v, state %+v: want SPARK-55271 after batch 4 re-ran against version 4", res.Reason, res.SparkBug, res.State)
	}
	inv.Operators[0].Stores[0].Partitions[0].Files = p1[1:]
	res = mustPlan(t, ck, recovery.Options{SparkVersion: "4.1", State: &inv})
	if res.Reason != recovery.ReasonStateFileMissing || res.SparkBug != nil || res.FailedFile != "state/0/1/1.delta" {
		t.Fatalf("reason %s, bug %v, file %s: want the missing delta, before the bug", res.Reason, res.SparkBug, res.FailedFile)
	}
}

// A re-run of batch 0 runs against the empty version 0 and loads nothing; the version 1 files
// its crashed attempt left are named. A new query (no offsets) gets no state load at all.
func TestStateLoadRerunBatchZero(t *testing.T) {
	inv := hdfsPartition(sf(1, "delta", nil))
	m := map[string]string{"metadata": testMeta, "offsets/0": offsetsFile(`{"t":{"0":5}}`)}
	res := mustPlan(t, memCheckpoint(t, m), recovery.Options{SparkVersion: "3.5", State: &inv})
	st := res.State
	if res.Failed() || st == nil || st.Version != 0 || st.Batch != 0 || !st.Rerun || len(st.Loads) != 0 || len(st.Stores) != 1 {
		t.Fatalf("outcome %s, state %+v", res.Outcome, st)
	}
	want := "operator 0 loads version 0 (the empty state: nothing to read), batch 0 re-runs against it; version 1 files in partition 1 (1 of 2), left by its crashed attempt, are not read: batch 0 writes version 1 again"
	if got := st.Lines(); len(got) != 1 || got[0] != want {
		t.Errorf("lines %q\nwant %q", got, want)
	}
}
