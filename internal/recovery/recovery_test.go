package recovery_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func conformanceDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "spark", "structured-streaming", "checkpoint-test-offsetId-commitId-inconsistent")
	if _, err := os.Stat(filepath.Join(dir, "offsets", "4")); err != nil {
		t.Fatalf("conformance fixture missing: %v", err)
	}
	return dir
}

// TestConformanceInconsistentFixture plans Spark's own
// checkpoint-test-offsetId-commitId-inconsistent fixture (offsets 1, 2, 4;
// the saved copy holds 2 and 4, which gives the same answer): the sync
// engine needs offsets/3, the async engine re-runs 4 over (O[2], O[4]],
// which is the CheckAnswer(3, 4) of Spark's async suite.
func TestConformanceInconsistentFixture(t *testing.T) {
	ctx := context.Background()
	st, err := storage.NewLocal(conformanceDir(t))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	sync, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeSync})
	if err != nil {
		t.Fatal(err)
	}
	if !sync.Failed() || sync.ErrorText() != "batch 3 doesn't exist" || sync.Exception != "java.lang.IllegalStateException" {
		t.Errorf("sync: %s", sync.Verdict())
	}
	if len(sync.DriverLog) != 1 || !strings.HasPrefix(sync.DriverLog[0], "ERROR MicroBatchExecution: The offset log for batch 3 doesn't exist, which is required to restart the query from the latest batch 4") {
		t.Errorf("sync driver log: %q", sync.DriverLog)
	}
	async, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeAsync})
	if err != nil {
		t.Fatal(err)
	}
	if async.Failed() || async.RerunBatch == nil || *async.RerunBatch != 4 || async.NextBatch != 4 {
		t.Fatalf("async: %s", async.Verdict())
	}
	start, _ := json.Marshal(async.RerunRange.Start)
	end, _ := json.Marshal(async.RerunRange.End)
	if string(start) != "[2]" || string(end) != "[4]" {
		t.Errorf("async re-run range = %s → %s, want [2] → [4]", start, end)
	}
	if async.WatermarkMs != 5000 || async.BatchTimestampMs != 1531292030005 {
		t.Errorf("watermark %d timestamp %d", async.WatermarkMs, async.BatchTimestampMs)
	}
}

// TestPlanReadsConstantFiles: on a long log, Plan reads the latest offsets,
// the previous offsets, the latest commit and the metadata, nothing else.
func TestPlanReadsConstantFiles(t *testing.T) {
	ctx := context.Background()
	b := scenario.NewBuilder("reads")
	b.Metadata()
	for id := int64(0); id < 2000; id++ {
		b.Offsets(id, scenario.Kafka("t", id, 2))
		if id < 1999 {
			b.Commit(id)
		}
	}
	mem := storage.NewMem()
	if err := b.WriteTo(ctx, mem); err != nil {
		t.Fatal(err)
	}
	f := storage.NewFaulty(mem)
	cp, err := checkpoint.Load(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RerunBatch == nil || *res.RerunBatch != 1999 {
		t.Fatalf("plan: %s", res.Verdict())
	}
	if n := f.Count(storage.OpRead) + f.Count(storage.OpOpen); n != 4 {
		t.Errorf("Plan read %d files, want 4", n)
	}
	if n := f.Count(storage.OpList); n != 3 {
		t.Errorf("%d listings, want 3 (Load's)", n)
	}
}

func TestOptionsValidation(t *testing.T) {
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, storage.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []recovery.Options{
		{SparkVersion: "1.6"},
		{SparkVersion: "3.9"},
		{SparkVersion: "banana"},
		{Mode: "turbo"},
		{Mode: recovery.ModeAsync, SparkVersion: "3.3"},
		{Mode: recovery.ModeSync, SparkVersion: "2.1"},
		{Mode: recovery.ModeSpark21, SparkVersion: "3.5"},
		{CommitFormatVersion: 7},
	} {
		if _, err := recovery.Plan(ctx, cp, o); err == nil {
			t.Errorf("Plan(%+v) accepted invalid options", o)
		}
	}
	for _, o := range []recovery.Options{
		{}, {SparkVersion: "3.5.1"}, {SparkVersion: "master"}, {SparkVersion: "2.1"}, {Mode: recovery.ModeSpark21},
		{Mode: recovery.ModeAsync, SparkVersion: "3.4"},
	} {
		res, err := recovery.Plan(ctx, cp, o)
		if err != nil {
			t.Errorf("Plan(%+v): %v", o, err)
			continue
		}
		if res.NextBatch != 0 || res.Failed() {
			t.Errorf("Plan(%+v) on an empty checkpoint: %s", o, res.Verdict())
		}
	}
	res, _ := recovery.Plan(ctx, cp, recovery.Options{SparkVersion: "2.1"})
	if res.Mode != recovery.ModeSpark21 || res.SparkVersion != "2.1" {
		t.Errorf("2.1 defaults to mode %s, version %s", res.Mode, res.SparkVersion)
	}
	res, _ = recovery.Plan(ctx, cp, recovery.Options{SparkVersion: "master"})
	if res.SparkVersion != "master" {
		t.Errorf("master = %s", res.SparkVersion)
	}
}

// expectSync computes, independently of the planner and in a few lines,
// whether Spark 3.5's sync engine starts, and where.
func expectSync(c scenario.Random) (fails bool, next int64, rerun bool) {
	if len(c.Offsets) == 0 {
		if len(c.Commits) > 0 {
			return true, 0, false // batch 0 runs, then conflicts with commits/<first>
		}
		return false, 0, false
	}
	L := c.Offsets[len(c.Offsets)-1]
	if c.CorruptLatest {
		return true, -1, false
	}
	if L > 0 && (!slices.Contains(c.Offsets, L-1) || c.CorruptPrevious) {
		return true, -1, false
	}
	if len(c.Commits) == 0 {
		return false, L, true
	}
	C := c.Commits[len(c.Commits)-1]
	if c.CorruptCommit {
		return true, -1, false
	}
	switch {
	case C == L:
		return false, L + 1, false
	case C < L:
		return false, L, true
	}
	return true, L, true // commits ahead: L re-runs, then a commit conflicts
}

// TestPlanProperties checks the planner against independently computed
// preconditions on 2000 random checkpoints, and invariants that must hold
// for any checkpoint.
func TestPlanProperties(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewSource(20240601))
	for i := 0; i < 2000; i++ {
		c := scenario.DrawRandom(r)
		mem := storage.NewMem()
		if err := c.Build("random").WriteTo(ctx, mem); err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Load(ctx, mem)
		if err != nil {
			t.Fatal(err)
		}
		res, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeSync})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		fails, next, rerun := expectSync(c)
		if res.Failed() != fails || res.NextBatch != next || (res.RerunBatch != nil) != rerun {
			t.Fatalf("%v:\n got %s (next %d, rerun %v)\nwant fails=%v next=%d rerun=%v", c, res.Verdict(), res.NextBatch, res.RerunBatch, fails, next, rerun)
		}
		checkInvariants(t, ctx, c, cp, res)

		async, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeAsync})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		// Async never needs offsets/L-1: it fails only on unreadable files or
		// a commit conflict, so it fails whenever sync fails for other reasons.
		if len(c.Offsets) > 0 && !c.CorruptLatest && !c.CorruptCommit && !c.CorruptPrevious {
			L := c.Offsets[len(c.Offsets)-1]
			if async.Failed() != (len(c.Commits) > 0 && c.Commits[len(c.Commits)-1] > L) {
				t.Fatalf("%v: async %s", c, async.Verdict())
			}
			if prev, ok := cp.Offsets.Prev(L); (async.PreviousBatch != nil) != (ok && L > 0) || (ok && L > 0 && *async.PreviousBatch != prev) {
				t.Fatalf("%v: async previous batch %v, want the nearest lower id", c, async.PreviousBatch)
			}
			if async.RerunBatch != nil && async.RerunRange.Start[0] != nil && string(async.RerunRange.Start[0]) != "null" {
				prev, _ := cp.Offsets.Prev(L)
				want := scenario.Kafka("t", prev, 2)
				if string(async.RerunRange.Start[0]) != want {
					t.Fatalf("%v: async start %s, want O[%d] %s", c, async.RerunRange.Start[0], prev, want)
				}
			}
		}
	}
}

func checkInvariants(t *testing.T, ctx context.Context, c scenario.Random, cp *checkpoint.Checkpoint, res *recovery.Result) {
	t.Helper()
	L, hasL := cp.Offsets.Latest()
	C, hasC := cp.Commits.Latest()
	if res.Warnings == nil {
		t.Fatalf("%v: nil slices in result", c)
	}
	// The sync engine starts from offsets/L-1, when it is on disk.
	var wantPrev *int64
	if hasL && L > 0 && cp.Offsets.Has(L-1) {
		wantPrev = &[]int64{L - 1}[0]
	}
	if (res.PreviousBatch == nil) != (wantPrev == nil) || (wantPrev != nil && *res.PreviousBatch != *wantPrev) {
		t.Fatalf("%v: previous batch %v, want %v", c, res.PreviousBatch, wantPrev)
	}
	if res.Failed() != (res.Reason != "") {
		t.Fatalf("%v: outcome %s with reason %q", c, res.Outcome, res.Reason)
	}
	if res.Failed() {
		if res.Error == nil || *res.Error == "" {
			t.Fatalf("%v: failure without an error", c)
		}
		return
	}
	if res.Error != nil {
		t.Fatalf("%v: resume with an error", c)
	}
	if !hasL {
		if res.NextBatch != 0 {
			t.Fatalf("%v: fresh start at %d", c, res.NextBatch)
		}
		return
	}
	// Resume ⇒ next ∈ {L, L+1}; never below the last commit + 1 when C == L.
	if res.NextBatch != L && res.NextBatch != L+1 {
		t.Fatalf("%v: next %d not in {L, L+1} = {%d, %d}", c, res.NextBatch, L, L+1)
	}
	if hasC && C == L && res.NextBatch != C+1 {
		t.Fatalf("%v: C == L but next %d", c, res.NextBatch)
	}
	if res.RerunBatch != nil {
		if *res.RerunBatch != res.NextBatch || *res.RerunBatch != L {
			t.Fatalf("%v: rerun %d next %d L %d", c, *res.RerunBatch, res.NextBatch, L)
		}
		// The re-run ends at O[L] and starts at O[L-1] (sync).
		if got, want := string(res.RerunRange.End[0]), scenario.Kafka("t", L, 2); got != want {
			t.Fatalf("%v: re-run end %s, want %s", c, got, want)
		}
		if L > 0 {
			if got, want := string(res.RerunRange.Start[0]), scenario.Kafka("t", L-1, 2); got != want {
				t.Fatalf("%v: re-run start %s, want O[L-1] %s", c, got, want)
			}
			for _, k := range res.Kafka {
				if k.Records == nil || *k.Records != int64(10+k.Partition) {
					t.Fatalf("%v: kafka range %+v", c, k)
				}
			}
		} else if !res.StartFromInitial[0] {
			t.Fatalf("%v: batch 0 re-run must start from the initial offsets", c)
		}
		// Skipped = C+1 .. L-1, with 10+p records per batch and partition.
		from := C + 1
		if !hasC {
			from, _ = cp.Offsets.Earliest()
		}
		switch {
		case from > L-1 || L == 0:
			if res.Skipped != nil {
				t.Fatalf("%v: skipped %+v, want none", c, res.Skipped)
			}
		case res.Skipped == nil || res.Skipped.From != from || res.Skipped.To != L-1:
			t.Fatalf("%v: skipped %+v, want %d..%d", c, res.Skipped, from, L-1)
		case from > 0 && cp.Offsets.Has(from-1):
			n := L - 1 - from + 1
			if res.Skipped.Records == nil || *res.Skipped.Records != n*(10+11) {
				t.Fatalf("%v: skipped records %v, want %d", c, res.Skipped.Records, n*21)
			}
		}
	}
}
