package recovery_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func loadDetect(t *testing.T, dir string) *checkpoint.Checkpoint {
	t.Helper()
	st, err := storage.NewLocal(filepath.Join("..", "..", "testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestSparkReleaseOfRealCheckpoints detects the release of checkpoints real Spark releases wrote
// (testdata/spark, testdata/spark-state).
func TestSparkReleaseOfRealCheckpoints(t *testing.T) {
	cases := []struct {
		dir               string
		min, max, version string
		commitFormat      int
	}{
		{"spark/structured-streaming/checkpoint-version-2.1.0", "2.1", "2.1", "3.5", 0}, // restarted on the default: Spark reads older checkpoints
		{"spark/structured-streaming/checkpoint-version-2.4.3-kafka-include-headers-default", "2.4", "2.4", "3.5", 0},
		{"spark/structured-streaming/checkpoint-version-4.0.0/hdfs/agg", "3.3", "3.5", "3.5", 0}, // written by a 3.5-era build
		{"spark-state/3.5.8/agg-hdfs/checkpoint", "3.5", "3.5", "3.5", 0},
		{"spark-state/4.0.2/agg-hdfs/checkpoint", "4.0", "", "4.0", 0},
		{"spark-state/4.0.2/agg-rocksdb-changelog-v2/checkpoint", "4.0", "", "4.0", 2},
		{"spark/structured-streaming/checkpoint-version-4.0.0-checkpoint-v2/rocksdb/dedup", "4.0", "", "4.0", 2},
	}
	for _, c := range cases {
		r := recovery.Detect(context.Background(), loadDetect(t, c.dir))
		if r.SparkMin != c.min || r.SparkMax != c.max || r.SparkVersion != c.version || r.CommitFormatVersion != c.commitFormat {
			t.Errorf("%s: got min %q max %q version %q commit v%d (%s), want %q %q %q v%d",
				c.dir, r.SparkMin, r.SparkMax, r.SparkVersion, r.CommitFormatVersion, r.SparkReason, c.min, c.max, c.version, c.commitFormat)
		}
		if r.SparkReason == "" {
			t.Errorf("%s: no reason", c.dir)
		}
		if r.Mode != "" {
			t.Errorf("%s: detected %s engine: %s", c.dir, r.Mode, r.ModeReason)
		}
	}
}

// TestAsyncScenario detects async progress tracking on the corpus' async checkpoint.
func TestAsyncScenario(t *testing.T) {
	s, ok := scenario.Get("doctor-async-gaps-behind")
	if !ok {
		t.Fatal("no scenario doctor-async-gaps-behind")
	}
	st := storage.NewMem()
	if err := s.WriteTo(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	r := recovery.Detect(context.Background(), cp)
	if r.Mode != recovery.ModeAsync || !strings.Contains(r.ModeReason, "0 → 3") {
		t.Errorf("got %q: %s", r.Mode, r.ModeReason)
	}
	if r.SparkVersion != "3.5" {
		t.Errorf("scenario files are 3.5-era, got %q: %s", r.SparkVersion, r.SparkReason)
	}
}

// TestDetectDefaults: the async engine is taken from the gaps unless the checkpoint is in the
// switch-off trap (recovery.Assess), where the sync engine's failure stays the verdict and the
// header says what async would do; a flag always wins.
func TestDetectDefaults(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		scenario string
		mode     recovery.Mode // the mode flag given, "" for none
		want     recovery.Mode
		note     bool // AsyncNotApplied
	}{
		{"async-trap-0-3-7", "", "", true},
		{"doctor-async-gaps-behind", "", recovery.ModeAsync, false},
		{"async-trap-0-3-7", recovery.ModeAsync, recovery.ModeAsync, false},
	} {
		s, ok := scenario.Get(c.scenario)
		if !ok {
			t.Fatalf("no scenario %s", c.scenario)
		}
		st := storage.NewMem()
		if err := s.WriteTo(ctx, st); err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		mode, spark, cf := c.mode, "", 0
		d := recovery.DetectDefaults(ctx, cp, &mode, &spark, &cf)
		if mode != c.want || (d != nil && d.AsyncNotApplied != "") != c.note {
			t.Errorf("%s with --mode %q: mode %q, detected %+v", c.scenario, c.mode, mode, d)
		}
	}
}
