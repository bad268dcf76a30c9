package recovery_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// copyDir copies a checkpoint fixture into a temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCommittedKafkaOffsetUnreadable damages the Kafka line of offsets/3, the latest committed
// batch of a checkpoint Spark 3.5.7 wrote. Spark 3.5.7, 4.0.0 and 4.1.1 (spark/restart, the
// oracle goldens committed-offsets-*) fail the resumed query with the Kafka source's
// IllegalArgumentException before any batch; ckpt once predicted "resumes at batch 4".
func TestCommittedKafkaOffsetUnreadable(t *testing.T) {
	for _, line := range []string{`{"in":{"0":5, "1":6, "2":7`, `hello`} {
		t.Run(line, func(t *testing.T) {
			dir := copyDir(t, filepath.Join("..", "..", "testdata", "spark-written", "3.5.7", "kafka-to-file", "checkpoint"))
			p := filepath.Join(dir, "offsets", "3")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			lines[2] = line
			if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			_ = os.Remove(filepath.Join(dir, "offsets", ".3.crc"))
			ctx := context.Background()
			st, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := checkpoint.Load(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"3.5", "4.0", "4.1"} {
				res, err := recovery.Plan(ctx, cp, recovery.Options{SparkVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				want := `Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got ` + line
				if !res.Failed() || res.ErrorText() != want || res.Exception != "java.lang.IllegalArgumentException" ||
					res.ErrorInexact || res.NextBatch != -1 || res.FailedFile != "offsets/3" || res.Reason != recovery.ReasonInvalidSourceOffset {
					t.Errorf("Spark %s: %s (file %s, reason %s, next %d)", v, res.Verdict(), res.FailedFile, res.Reason, res.NextBatch)
				}
			}
		})
	}
}

// The same damage in a batch that re-runs (commits/3 gone): the Kafka source reads the start
// (offsets/2) and then fails on the end offset with its own message (Spark 3.5.7 and 4.1.1,
// spark/restart). ckpt once said "source 0 cannot read its start offset", inexact.
func TestRerunKafkaEndOffsetUnreadable(t *testing.T) {
	dir := copyDir(t, filepath.Join("..", "..", "testdata", "spark-written", "3.5.7", "kafka-to-file", "checkpoint"))
	p := filepath.Join(dir, "offsets", "3")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	lines[2] = "hello"
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"offsets/.3.crc", "commits/3", "commits/.3.crc"} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	ctx := context.Background()
	st, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"3.5", "4.1"} {
		res, err := recovery.Plan(ctx, cp, recovery.Options{SparkVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		want := `Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got hello`
		if !res.Failed() || res.ErrorText() != want || res.ErrorInexact || res.FailedFile != "offsets/3" || res.Exception != "java.lang.IllegalArgumentException" {
			t.Errorf("Spark %s: %s (file %s, inexact %v)", v, res.Verdict(), res.FailedFile, res.ErrorInexact)
		}
	}
}

// A file source's committed offset ({"logOffset":n}) is not a Kafka offset, and its
// sources/0/0 (the file source's own log) is no evidence of one: checkpoints Spark wrote with a
// file source resume. The first version of the committed-offsets check failed them all.
func TestCommittedFileSourceOffsetNotJudged(t *testing.T) {
	ctx := context.Background()
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "spark-state", "*", "*", "checkpoint"))
	if len(dirs) == 0 {
		t.Fatal("no spark-state fixtures")
	}
	for _, dir := range dirs {
		st, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		res, err := recovery.Plan(ctx, cp, recovery.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Commit format v2 needs its release (not given here); no source offset is refused.
		if res.Reason == recovery.ReasonInvalidSourceOffset {
			t.Errorf("%s: %s", dir, res.Verdict())
		}
	}
}
