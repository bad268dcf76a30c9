package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// conformanceDir is Spark's own test checkpoints, saved byte-exact in testdata/spark.
func conformanceDir(t *testing.T, rel string) string {
	t.Helper()
	d := filepath.Join("..", "..", "testdata", "spark", "structured-streaming", rel)
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("conformance fixture missing: %v", err)
	}
	return d
}

func diagnoseDir(t *testing.T, dir string, opts doctor.Options) *doctor.Report {
	t.Helper()
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Run(ctx, cp, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestConformanceOffsetCommitInconsistent runs doctor over Spark's
// checkpoint-test-offsetId-commitId-inconsistent fixture (offsets 2 and 4 saved): the normal
// engine cannot restart it, the async engine can (Spark's own async suite restarts it).
func TestConformanceOffsetCommitInconsistent(t *testing.T) {
	dir := conformanceDir(t, "checkpoint-test-offsetId-commitId-inconsistent")

	sync := diagnoseDir(t, dir, doctor.Options{Mode: recovery.ModeSync})
	if !sync.Has(doctor.CodeMissingPreviousOffsets) || !sync.Fails(doctor.Error) {
		t.Errorf("sync: want missing-previous-offsets at error level, got %+v", sync.Findings)
	}
	for _, f := range sync.Findings {
		if f.Code == doctor.CodeMissingPreviousOffsets && (f.Batch == nil || *f.Batch != 3 || f.SparkError == nil) {
			t.Errorf("sync: want batch 3 with Spark's error, got %+v", f)
		}
	}

	async := diagnoseDir(t, dir, doctor.Options{Mode: recovery.ModeAsync})
	if async.Has(doctor.CodeMissingPreviousOffsets) || async.Fails(doctor.Error) || async.Restart.Failed() {
		t.Errorf("async: want a restart without errors, got %+v", async.Findings)
	}
	if !async.Has(doctor.CodeAsyncProgressGaps) {
		t.Errorf("async: want the gap reported as async-progress-gaps, got %+v", async.Findings)
	}
}

// TestConformanceHealthy runs doctor over Spark-written checkpoints that restart cleanly: no
// error may be reported for them. (The other saved fixtures are partial copies, missing the
// files before their latest batch.)
func TestConformanceHealthy(t *testing.T) {
	for _, c := range []struct {
		dir  string
		opts doctor.Options
	}{
		{"checkpoint-version-2.1.0", doctor.Options{Mode: recovery.ModeSpark21}},
	} {
		rep := diagnoseDir(t, conformanceDir(t, c.dir), c.opts)
		if rep.Fails(doctor.Error) {
			t.Errorf("%s: unexpected errors: %+v", c.dir, rep.Findings)
		}
	}
}
