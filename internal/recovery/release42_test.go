package recovery_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Spark 4.2.0's checkUnfinishedRepartitionBatch needs offsets/L-1 when offsets/L has no commit
// and a commit exists; the sync engine only (goldens testdata/spark-oracle/4.2.0:
// missing-previous-offsets, async-behind-0-2).
func TestSpark42UnfinishedRepartitionCheck(t *testing.T) {
	off := func(n int) string { return offsetsFile(`{"t":{"0":` + strings.Repeat("5", n) + `}}`) }
	base := map[string]string{"metadata": testMeta, "offsets/0": off(1), "offsets/2": off(2)}
	withCommits := func(ids ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for _, id := range ids {
			m["commits/"+id] = testCommit
		}
		return m
	}
	const require = "requirement failed: Previous batch 1 not found in offset log"
	for _, c := range []struct {
		name      string
		files     map[string]string
		o         recovery.Options
		exception string
		err       string
	}{
		{"4.2 uncommitted latest", withCommits("0"), recovery.Options{SparkVersion: "4.2"}, "java.lang.IllegalArgumentException", require},
		{"4.2.0", withCommits("0"), recovery.Options{SparkVersion: "4.2.0"}, "java.lang.IllegalArgumentException", require},
		{"master", withCommits("0"), recovery.Options{SparkVersion: "master"}, "java.lang.IllegalArgumentException", require},
		{"4.1 says batch 1 doesn't exist", withCommits("0"), recovery.Options{SparkVersion: "4.1"}, "java.lang.IllegalStateException", "batch 1 doesn't exist"},
		{"4.2 without commits: no check", withCommits(), recovery.Options{SparkVersion: "4.2"}, "java.lang.IllegalStateException", "batch 1 doesn't exist"},
		{"4.2 latest committed: no check", withCommits("0", "2"), recovery.Options{SparkVersion: "4.2"}, "java.lang.IllegalStateException", "batch 1 doesn't exist"},
	} {
		res := mustPlan(t, memCheckpoint(t, c.files), c.o)
		if res.Outcome != recovery.OutcomeFail || res.Error == nil || *res.Error != c.err || res.Exception != c.exception {
			t.Errorf("%s: outcome %s, %s: %v; want %s: %s", c.name, res.Outcome, res.Exception, deref(res.Error), c.exception, c.err)
			continue
		}
		if res.Reason != recovery.ReasonMissingPreviousOffsets || res.FailedFile != "offsets/1" || res.ErrorInexact {
			t.Errorf("%s: reason %s, file %s, inexact %v", c.name, res.Reason, res.FailedFile, res.ErrorInexact)
		}
	}
	// The async engine overrides the check with a no-op: it restarts from the nearest batch.
	res := mustPlan(t, memCheckpoint(t, withCommits("0")), recovery.Options{SparkVersion: "4.2", Mode: recovery.ModeAsync})
	if res.Outcome == recovery.OutcomeFail {
		t.Errorf("async on 4.2: %s", deref(res.Error))
	}
}

// 4.2.0's SinkMetadataInfo requires apiVersion (golden commit-v3-latest): a v3 commit without
// it fails json4s' extraction, unwrapped.
func TestSpark42CommitV3NeedsAPIVersion(t *testing.T) {
	files := func(commit string) map[string]string {
		return map[string]string{
			"metadata":  testMeta,
			"offsets/0": offsetsFile(`{"t":{"0":0}}`), "offsets/1": offsetsFile(`{"t":{"0":5}}`),
			"commits/0": testCommit, "commits/1": "v3\n" + commit,
		}
	}
	const noAPI = `{"nextBatchWatermarkMs":0,"sinkMetadataMap":{"default":{"sinkName":"default","commitOffset":"-","providerName":"p","isActive":true}}}`
	const full = `{"nextBatchWatermarkMs":0,"sinkMetadataMap":{"default":{"sinkName":"default","commitOffset":"-","providerName":"p","apiVersion":"v2","isActive":true}}}`
	const noName = `{"nextBatchWatermarkMs":0,"sinkMetadataMap":{"a":{"commitOffset":"-","providerName":"p","apiVersion":"v2"},"b":{"sinkName":"b"}}}`
	res := mustPlan(t, memCheckpoint(t, files(noAPI)), recovery.Options{SparkVersion: "4.2"})
	want := "No usable value for sinkMetadataMap\nNo usable value for apiVersion\nDid not find value which can be converted into java.lang.String"
	if res.Outcome != recovery.OutcomeFail || deref(res.Error) != want || res.Exception != "org.json4s.MappingException" ||
		res.RootCause == nil || res.RootCause.Error != "Did not find value which can be converted into java.lang.String" || res.FailedFile != "commits/1" {
		t.Errorf("4.2 without apiVersion: %s %s %q root %+v", res.Outcome, res.Exception, deref(res.Error), res.RootCause)
	}
	// The first field missing in file order names the failure.
	if res := mustPlan(t, memCheckpoint(t, files(noName)), recovery.Options{SparkVersion: "4.2"}); !strings.Contains(deref(res.Error), "No usable value for sinkName") {
		t.Errorf("4.2, sinkName missing in the first entry: %q", deref(res.Error))
	}
	for _, c := range []struct{ v, commit string }{{"4.2", full}, {"master", noAPI}} {
		if res := mustPlan(t, memCheckpoint(t, files(c.commit)), recovery.Options{SparkVersion: c.v}); res.Outcome == recovery.OutcomeFail {
			t.Errorf("%s: %s", c.v, deref(res.Error))
		}
	}
}

// 4.2.0's refusal of a missing metadata file, its exact text (golden missing-metadata).
func TestSpark42MissingMetadataText(t *testing.T) {
	cp := memCheckpoint(t, map[string]string{"offsets/0": offsetsFile(`{"t":{"0":0}}`), "commits/0": testCommit})
	res := mustPlan(t, cp, recovery.Options{SparkVersion: "4.2"})
	if res.Outcome != recovery.OutcomeFail || res.ErrorClass != "STREAMING_CHECKPOINT_MISSING_METADATA_FILE" ||
		res.Exception != "org.apache.spark.SparkRuntimeException" || res.ErrorInexact ||
		!strings.HasSuffix(deref(res.Error), " is in an inconsistent state: the metadata file is missing but offset and/or commit logs contain data. Please restore the metadata file or create a new checkpoint directory. SQLSTATE: 42K03") {
		t.Errorf("got %s %s %s inexact=%v: %q", res.Outcome, res.ErrorClass, res.Exception, res.ErrorInexact, deref(res.Error))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
