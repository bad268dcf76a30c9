package recovery_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// memCheckpoint writes files (path → content) to an in-memory store and loads it.
func memCheckpoint(t *testing.T, files map[string]string) *checkpoint.Checkpoint {
	t.Helper()
	ctx := context.Background()
	s := storage.NewMem()
	for p, data := range files {
		if err := s.WriteFile(ctx, p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

const (
	testMeta   = `{"id":"2b0c7f5e-8d1a-4e3b-9c6f-5a4d3e2f1b0a"}`
	testOffMd  = `{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`
	testCommit = "v1\n{\"nextBatchWatermarkMs\":0}"
)

func offsetsFile(kafka string) string { return "v1\n" + testOffMd + "\n" + kafka }

func mustPlan(t *testing.T, cp *checkpoint.Checkpoint, o recovery.Options) *recovery.Result {
	t.Helper()
	res, err := recovery.Plan(context.Background(), cp, o)
	if err != nil {
		t.Fatalf("Plan(%+v): %v", o, err)
	}
	return res
}

// A line stands for its newest patch release ckpt models; a patch release is kept as given.
func TestSparkVersionPatch(t *testing.T) {
	cp := memCheckpoint(t, map[string]string{"metadata": testMeta})
	for _, c := range []struct{ in, shown string }{
		{"4.1", "4.1"}, {"4.1.1", "4.1.1"}, {"4.1.0", "4.1.0"}, {"v4.1.2", "4.1.2"}, {"3.5.7", "3.5.7"}, {"master", "master"},
	} {
		if got := mustPlan(t, cp, recovery.Options{SparkVersion: c.in}).SparkVersion; got != c.shown {
			t.Errorf("%s: sparkVersion %q, want %q", c.in, got, c.shown)
		}
	}
	for _, bad := range []string{"4.1.x", "4.1.-1", "4.1.1.1", "9.9.1"} {
		if err := recovery.ValidateSparkVersion(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := recovery.Plan(context.Background(), cp, recovery.Options{Trigger: "continuous"}); err == nil {
		t.Error("unknown trigger accepted")
	}
}

// rerunCheckpoint: offsets 0..2 of one Kafka source, commits 0..1: batch 2 re-runs.
func rerunCheckpoint(t *testing.T, extra map[string]string) *checkpoint.Checkpoint {
	files := map[string]string{
		"metadata":  testMeta,
		"offsets/0": offsetsFile(`{"t":{"0":0}}`), "offsets/1": offsetsFile(`{"t":{"0":5}}`), "offsets/2": offsetsFile(`{"t":{"0":15}}`),
		"commits/0": testCommit, "commits/1": testCommit,
	}
	for k, v := range extra {
		files[k] = v
	}
	return memCheckpoint(t, files)
}

// SPARK-55271: on 4.1.0 and 4.1.1 the re-run of a Kafka batch runs, is committed and then fails;
// "4.1" is 4.1.1; 4.1.2 and the other lines resume; a commit already at commits/L fails first.
func TestSpark55271(t *testing.T) {
	cp := rerunCheckpoint(t, nil)
	for _, v := range []string{"4.1", "4.1.0", "4.1.1"} {
		res := mustPlan(t, cp, recovery.Options{SparkVersion: v})
		b := res.SparkBug
		if !res.Failed() || res.Reason != recovery.ReasonSparkBug || res.FailedFile != "offsets/2" || res.NextBatch != 2 ||
			res.RerunBatch == nil || *res.RerunBatch != 2 || res.Exception != "java.lang.NullPointerException" ||
			res.ErrorText() != `Cannot invoke "scala.collection.IterableOps.map(scala.Function1)" because the return value of "scala.Option.get()" is null` {
			t.Fatalf("%s: %s (reason %s, file %s, next %d)", v, res.Verdict(), res.Reason, res.FailedFile, res.NextBatch)
		}
		if b == nil || b.ID != "SPARK-55271" || b.Batch != 2 || !b.OutputWritten || !b.CommitWritten ||
			!strings.Contains(b.Summary, "not of the checkpoint") || !strings.Contains(b.Fix, "upgrade Spark past 4.1.1") || !strings.Contains(b.Fix, "resumes at batch 3") {
			t.Fatalf("%s: sparkBug %+v", v, b)
		}
		if !strings.Contains(res.Verdict(), "after re-running batch 2, on Spark bug SPARK-55271 (not the checkpoint)") {
			t.Errorf("%s: verdict %q", v, res.Verdict())
		}
		defaulted := strings.Contains(strings.Join(res.Warnings, "\n"), "Spark 4.1 is predicted as 4.1.1")
		if defaulted != (v == "4.1") {
			t.Errorf("%s: the 4.1 = 4.1.1 warning is %v: %q", v, defaulted, res.Warnings)
		}
	}
	async := mustPlan(t, cp, recovery.Options{SparkVersion: "4.1.1", Mode: recovery.ModeAsync})
	if async.Reason != recovery.ReasonSparkBug || async.SparkBug.CommitWritten {
		t.Errorf("async: %s, %+v", async.Reason, async.SparkBug)
	}
	later := mustPlan(t, cp, recovery.Options{SparkVersion: "4.1.2"})
	if later.Failed() || !strings.Contains(strings.Join(later.Warnings, "\n"), "not checked against 4.1.2") {
		t.Errorf("4.1.2: %s, warnings %q", later.Verdict(), later.Warnings)
	}
	for _, v := range []string{"4.0", "4.2", "3.5"} {
		if res := mustPlan(t, cp, recovery.Options{SparkVersion: v}); res.Failed() {
			t.Errorf("%s: %s", v, res.Verdict())
		}
	}
	// The release notes of another line show the bug, grouped as 4.1.
	notes := mustPlan(t, cp, recovery.Options{SparkVersion: "4.0"}).Releases
	if len(notes) != 1 || notes[0].Versions[0] != "4.1" || notes[0].Outcome != recovery.OutcomeFail {
		t.Errorf("4.0's release notes: %+v", notes)
	}
	// commits/2 exists (commits ahead): the re-run's commit conflicts before progress reporting.
	ahead := mustPlan(t, rerunCheckpoint(t, map[string]string{"commits/2": testCommit, "commits/3": testCommit}), recovery.Options{SparkVersion: "4.1.1"})
	if ahead.Reason != recovery.ReasonCommitsAhead {
		t.Errorf("commit at commits/2: %s (%s)", ahead.Reason, ahead.Verdict())
	}
	// commits/4 only (a gap): batch 2's commit is written, then the bug.
	gap := mustPlan(t, rerunCheckpoint(t, map[string]string{"commits/4": testCommit}), recovery.Options{SparkVersion: "4.1.1"})
	if gap.Reason != recovery.ReasonSparkBug {
		t.Errorf("commit at commits/4: %s (%s)", gap.Reason, gap.Verdict())
	}
	// A re-run of a non-Kafka source does not report Kafka metrics.
	file := memCheckpoint(t, map[string]string{"metadata": testMeta, "offsets/0": offsetsFile(`{"logOffset":0}`), "offsets/1": offsetsFile(`{"logOffset":1}`), "commits/0": testCommit})
	if res := mustPlan(t, file, recovery.Options{SparkVersion: "4.1.1"}); res.Failed() {
		t.Errorf("file source re-run: %s", res.Verdict())
	}
}

// 4.1 reads the latest commit before looking for offsets/L-1; 4.0 reports the missing file.
func TestLatestCommitReadUpFront(t *testing.T) {
	cp := memCheckpoint(t, map[string]string{"metadata": testMeta, "offsets/3": offsetsFile(`{"t":{"0":5}}`), "commits/0": testCommit, "commits/4": ""})
	if res := mustPlan(t, cp, recovery.Options{SparkVersion: "4.0"}); res.Reason != recovery.ReasonMissingPreviousOffsets {
		t.Errorf("4.0: %s", res.Verdict())
	}
	res := mustPlan(t, cp, recovery.Options{SparkVersion: "4.1"})
	if res.Reason != recovery.ReasonCorruptLatestCommit || res.FailedFile != "commits/4" ||
		res.ErrorText() != "Failed to read log file "+cp.SparkPath("commits/4")+". Incomplete log file in the offset commit log" {
		t.Errorf("4.1: %s (%s)", res.Verdict(), res.Reason)
	}
	// Without offsets too: the commit is read before the new-query check.
	noOff := memCheckpoint(t, map[string]string{"metadata": testMeta, "commits/1": testCommit, "commits/11": ""})
	if res := mustPlan(t, noOff, recovery.Options{SparkVersion: "4.1"}); res.Reason != recovery.ReasonCorruptLatestCommit || res.FailedFile != "commits/11" {
		t.Errorf("4.1 without offsets: %s (%s)", res.Verdict(), res.Reason)
	}
}

// 4.1's verifyNewCheckpointDirectory: offsets/, state/, commits/ in that order; .crc files are
// hidden on the local file system (and the in-memory store standing for it).
func TestNewQueryRequiresEmptyDirs(t *testing.T) {
	notEmpty := func(cp *checkpoint.Checkpoint, dir string) string {
		return "[STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY] The checkpoint location " + cp.SparkPath(dir) + " should be empty on batch 0\n" +
			"Please either use a new checkpoint location, or delete the existing data in the checkpoint location. SQLSTATE: 42K03"
	}
	for _, c := range []struct {
		name   string
		files  map[string]string
		reason string
		dir    string
	}{
		{"temp file in offsets", map[string]string{"offsets/.0.2b0c7f5e-8d1a-4e3b-9c6f-5a4d3e2f1b0a.tmp": "v1\n"}, recovery.ReasonNotEmptyOnStart, "offsets"},
		{"state", map[string]string{"state/0/0/1.delta": "x"}, recovery.ReasonNotEmptyOnStart, "state"},
		{"commits", map[string]string{"commits/0": testCommit, "commits/1": testCommit}, recovery.ReasonEmptyOffsetsWithCommits, "commits"},
		{"offsets before commits", map[string]string{"offsets/junk": "x", "commits/0": testCommit}, recovery.ReasonNotEmptyOnStart, "offsets"},
		{"only a checksum", map[string]string{"offsets/.0.crc": "crc"}, "", ""},
		{"state checksum only", map[string]string{"state/.x.crc": "crc"}, "", ""},
	} {
		files := map[string]string{"metadata": testMeta}
		for k, v := range c.files {
			files[k] = v
		}
		cp := memCheckpoint(t, files)
		res := mustPlan(t, cp, recovery.Options{SparkVersion: "4.1"})
		if res.Reason != c.reason {
			t.Errorf("%s: reason %q, want %q (%s)", c.name, res.Reason, c.reason, res.Verdict())
			continue
		}
		if c.reason == "" {
			if res.NextBatch != 0 {
				t.Errorf("%s: next batch %d", c.name, res.NextBatch)
			}
			continue
		}
		if res.FailedFile != c.dir || res.ErrorText() != notEmpty(cp, c.dir) || res.NextBatch != -1 ||
			res.Exception != "org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointLocationNotEmpty" {
			t.Errorf("%s: %s, file %q, next %d", c.name, res.Verdict(), res.FailedFile, res.NextBatch)
		}
		// 4.0 has no such check: junk in offsets/ or state/ starts batch 0.
		if c.reason == recovery.ReasonNotEmptyOnStart && c.files["commits/0"] == "" {
			if old := mustPlan(t, cp, recovery.Options{SparkVersion: "4.0"}); old.Failed() || old.NextBatch != 0 {
				t.Errorf("%s on 4.0: %s", c.name, old.Verdict())
			}
		}
	}
}

// The hint line of PARTITION_OFFSET_CHANGED: none on 4.0, 4.1.1's wording from 4.1.
func TestOffsetChangedHint(t *testing.T) {
	cp := memCheckpoint(t, map[string]string{"metadata": testMeta,
		"offsets/0": offsetsFile(`{"t":{"0":10}}`), "offsets/1": offsetsFile(`{"t":{"0":5}}`), "commits/0": testCommit})
	reason := "Reason: Partition t-0 offset was changed from 10 to 5."
	for v, want := range map[string]string{
		"4.0":    dataloss.Condition4 + " Partition t-0 offset was changed from 10 to 5.",
		"4.1.1":  dataloss.Condition4 + " Partition t-0 offset was changed from 10 to 5.\n" + dataloss.HintOffsetChanged41,
		"master": dataloss.Condition4 + " Partition t-0 offset was changed from 10 to 5.\n" + dataloss.HintOffsetChanged41,
	} {
		res := mustPlan(t, cp, recovery.Options{SparkVersion: v})
		if res.Reason != recovery.ReasonKafkaRangeDataLoss || res.ErrorText() != want || !strings.Contains(res.ErrorText(), reason) {
			t.Errorf("%s: %q", v, res.ErrorText())
		}
	}
	if !strings.HasPrefix(dataloss.HintOffsetChanged41, "This could be either 1) a user error") {
		t.Error(dataloss.HintOffsetChanged41)
	}
}

// A numeric directory where the restart writes: 3.5 and 4.x list files only, plan the batch and
// find the path taken; 3.4 lists the directory as the newest batch.
func TestNumericDirectoryInTheWay(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	files := map[string]string{"metadata": testMeta, "offsets/6": offsetsFile(`{"t":{"0":5}}`), "offsets/7": offsetsFile(`{"t":{"0":9}}`),
		"commits/6": testCommit, "commits/7": testCommit, "offsets/8/x": "x"}
	for p, d := range files {
		if err := s.WriteFile(ctx, p, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{
		"3.5": "[CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for 8.\nPlease make sure only one streaming job runs on a specific checkpoint location at a time.",
		"4.0": "[CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for 8.\nPlease make sure only one streaming job runs on a specific checkpoint location at a time. SQLSTATE: 40000",
	} {
		res := mustPlan(t, cp, recovery.Options{SparkVersion: v})
		if res.Reason != recovery.ReasonBatchPathTaken || res.FailedFile != "offsets/8" || res.ErrorText() != want || res.NextBatch != -1 {
			t.Errorf("%s: %s (%s, %q)", v, res.Verdict(), res.Reason, res.FailedFile)
		}
	}
	if res := mustPlan(t, cp, recovery.Options{SparkVersion: "3.4"}); res.Reason != recovery.ReasonLatestNotReadable {
		t.Errorf("3.4: %s", res.Verdict())
	}
	if res := mustPlan(t, cp, recovery.Options{SparkVersion: "3.3"}); res.ErrorText() != "failed to read log file for batch 8" {
		t.Errorf("3.3: %s", res.Verdict())
	}
}

// Orphan checksums: Spark's text ends with a period from 3.4; a .metadata.crc without metadata
// fails when the query is created (local file system only).
func TestOrphanChecksumTexts(t *testing.T) {
	cp := rerunCheckpoint(t, map[string]string{"commits/.2.crc": "crc"})
	for v, want := range map[string]string{
		"3.5": "Multiple streaming queries are concurrently using " + cp.SparkPath("commits") + ".",
		"3.3": "Multiple streaming queries are concurrently using " + cp.SparkPath("commits"),
	} {
		res := mustPlan(t, cp, recovery.Options{SparkVersion: v})
		if res.Reason != recovery.ReasonOrphanChecksum || res.ErrorText() != want || res.NextBatch != 2 ||
			!strings.Contains(strings.Join(res.Warnings, "\n"), "Rename destination "+cp.SparkPath("commits/.2.crc")+" already exists.") {
			t.Errorf("%s: %s, warnings %q", v, res.Verdict(), res.Warnings)
		}
	}
	md := memCheckpoint(t, map[string]string{".metadata.crc": "crc", "offsets/0": offsetsFile(`{"t":{"0":5}}`), "commits/0": testCommit})
	for _, v := range []string{"3.5", "4.0", "4.1"} {
		res := mustPlan(t, md, recovery.Options{SparkVersion: v})
		if res.Reason != recovery.ReasonOrphanChecksum || res.FailedFile != ".metadata.crc" || res.NextBatch != -1 ||
			res.ErrorText() != "Multiple streaming queries are concurrently using metadata." || res.Exception != recovery.ExcConcurrentModification {
			t.Errorf("%s: %s (%s)", v, res.Verdict(), res.Reason)
		}
	}
	// 4.2 refuses the missing metadata first; with metadata present the checksum is harmless.
	if res := mustPlan(t, md, recovery.Options{SparkVersion: "4.2"}); res.Reason != recovery.ReasonMissingMetadata {
		t.Errorf("4.2: %s", res.Verdict())
	}
	withMd := memCheckpoint(t, map[string]string{"metadata": testMeta, ".metadata.crc": "crc", "offsets/0": offsetsFile(`{"t":{"0":5}}`), "commits/0": testCommit})
	if res := mustPlan(t, withMd, recovery.Options{}); res.Failed() {
		t.Errorf("metadata present: %s", res.Verdict())
	}
}

// 4.0.0 under availableNow checks the re-run's partitions against the pre-fetched ones first;
// without the trigger, on 4.0.1+ or other lines, the data-loss check reports the gone partition.
func TestAvailableNowPrefetch(t *testing.T) {
	cp := memCheckpoint(t, map[string]string{"metadata": testMeta,
		"offsets/0": offsetsFile(`{"e":{"0":1,"1":1,"2":1}}`), "offsets/1": offsetsFile(`{"e":{"0":4,"1":4}}`), "commits/0": testCommit})
	want := "Kafka data source in Trigger.AvailableNow should provide the same topic partitions in pre-fetched offset to end offset for each microbatch. " +
		"The error could be transient - restart your query, and report if you still see the same issue.\n" +
		"topic-partitions for pre-fetched offset: Set(e-0, e-1, e-2), topic-partitions for end offset: Set(e-0, e-1)."
	res := mustPlan(t, cp, recovery.Options{SparkVersion: "4.0", Trigger: recovery.TriggerAvailableNow})
	if res.Reason != recovery.ReasonKafkaPrefetchMismatch || res.ErrorText() != want || res.Exception != "org.apache.spark.SparkException" || res.FailedFile != "offsets/1" {
		t.Errorf("4.0.0 availableNow: %s (%s)", res.Verdict(), res.Reason)
	}
	for _, o := range []recovery.Options{
		{SparkVersion: "4.0"}, {SparkVersion: "4.0", Trigger: recovery.TriggerOnce}, {SparkVersion: "4.0.1", Trigger: recovery.TriggerAvailableNow},
		{SparkVersion: "4.1", Trigger: recovery.TriggerAvailableNow}, {SparkVersion: "3.5", Trigger: recovery.TriggerAvailableNow},
	} {
		if res := mustPlan(t, cp, o); res.Reason != recovery.ReasonKafkaRangeDataLoss {
			t.Errorf("%+v: %s (%s)", o, res.Verdict(), res.Reason)
		}
	}
	// With the broker, the pre-fetched partitions are the broker's: a partition only the broker
	// has fails the check even when the range is sound.
	sound := memCheckpoint(t, map[string]string{"metadata": testMeta,
		"offsets/0": offsetsFile(`{"e":{"0":1}}`), "offsets/1": offsetsFile(`{"e":{"0":4}}`), "commits/0": testCommit})
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{{Topic: "e", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 0, End: 9}, {Partition: 1, Start: 0, End: 9}}}}}
	res = mustPlan(t, sound, recovery.Options{SparkVersion: "4.0.0", Trigger: recovery.TriggerAvailableNow, Broker: st})
	if res.Reason != recovery.ReasonKafkaPrefetchMismatch || !strings.Contains(res.ErrorText(), "pre-fetched offset: Set(e-0, e-1), topic-partitions for end offset: Set(e-0).") {
		t.Errorf("broker with a new partition: %s (%s)", res.Verdict(), res.Reason)
	}
}

// sources/0/0 missing: with the broker, startingOffsets "latest" is the broker's latest offsets,
// above offsets/0's end, so the re-run of batch 0 reports data loss (kafka-initial-missing).
func TestMissingInitialOffsetsWithBroker(t *testing.T) {
	cp := memCheckpoint(t, map[string]string{"metadata": testMeta, "offsets/0": offsetsFile(`{"events":{"0":10}}`)})
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{{Topic: "events", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 0, End: 15}}}}}
	for v, want := range map[string]string{
		"3.5": dataloss.Driver(dataloss.OffsetChanged("events-0", 15, 10), true),
		"4.0": dataloss.PartitionOffsetChanged4("events-0", 15, 10, ""),
		"4.1": dataloss.PartitionOffsetChanged4("events-0", 15, 10, dataloss.HintOffsetChanged41),
	} {
		res := mustPlan(t, cp, recovery.Options{SparkVersion: v, Broker: st})
		if res.Reason != recovery.ReasonKafkaRangeDataLoss || res.ErrorText() != want {
			t.Errorf("%s: %s (%s)", v, res.Verdict(), res.Reason)
		}
	}
	if res := mustPlan(t, cp, recovery.Options{SparkVersion: "3.5"}); res.Failed() {
		t.Errorf("without the broker: %s", res.Verdict())
	}
}

// FuzzSparkVersion: ValidateSparkVersion never panics, and a version it accepts plans: the
// result names the line, or the patch release when one was given.
func FuzzSparkVersion(f *testing.F) {
	for _, s := range []string{"4.1", "4.1.1", "v3.5.7", "master", "4.1.-1", "9.9", "", "4..1", "4.1.99999999999999999999"} {
		f.Add(s)
	}
	cp := memCheckpoint(&testing.T{}, map[string]string{"metadata": testMeta})
	f.Fuzz(func(t *testing.T, s string) {
		if recovery.ValidateSparkVersion(s) != nil || s == "" {
			return
		}
		res, err := recovery.Plan(context.Background(), cp, recovery.Options{SparkVersion: s})
		if err != nil {
			var oe *recovery.OptionsError
			if !errors.As(err, &oe) {
				t.Fatalf("%q: %v", s, err)
			}
			return // a valid release without the sync engine (2.1)
		}
		norm := strings.TrimPrefix(strings.TrimSpace(strings.ToLower(s)), "v")
		if norm == "master" {
			return
		}
		// The same numbers ("2.1.01" is 2.1.1), and a patch shown only when one was given.
		in, out := strings.Split(norm, "."), strings.Split(res.SparkVersion, ".")
		if len(in) != len(out) {
			t.Fatalf("%q planned as %q", s, res.SparkVersion)
		}
		for i := range in {
			a, err1 := strconv.Atoi(in[i])
			b, err2 := strconv.Atoi(out[i])
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("%q planned as %q", s, res.SparkVersion)
			}
		}
	})
}
