package sparkoracle

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

const writtenDir = "../../testdata/spark-written"

// writtenCases are the checkpoints the harness's Spark writes from scratch: a Kafka source into
// the file sink (sync), and into the Kafka sink with asynchronous progress tracking.
var writtenCases = []struct {
	name, sink, trigger string
	options             map[string]string
}{
	{"kafka-to-file", "file", "availableNow", map[string]string{"subscribe": "in", "maxOffsetsPerTrigger": "10", "startingOffsets": "earliest"}},
	{"kafka-to-kafka-async", "kafka", "processingTime=500", map[string]string{"subscribe": "in", "maxOffsetsPerTrigger": "10", "startingOffsets": "earliest",
		"sink.asyncProgressTrackingEnabled": "true", "sink.asyncProgressTrackingCheckpointIntervalMs": "0", "sink.topic": "out"}},
}

// writeCheckpoints lets Spark write each written case on a fresh checkpoint, checks ckpt reads
// it without a false finding and, with update, saves it into testdata/spark-written/<release>/.
func writeCheckpoints(t *testing.T, h *harness, rel string, update bool) {
	for _, wc := range writtenCases {
		b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "in", Partitions: 3}, {Name: "out", Partitions: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		produce(t, b.Addr(), "in", make([]int, 3), 10)
		dir := t.TempDir()
		ck, out := filepath.Join(dir, "checkpoint"), filepath.Join(dir, "output")
		r := h.run(map[string]any{"name": "written-" + wc.name, "checkpoint": ck, "output": out, "bootstrap": b.Addr(),
			"sink": wc.sink, "trigger": wc.trigger, "options": wc.options})
		b.Close()
		if r.Outcome != "ok" || len(r.Batches) < 3 {
			t.Errorf("%s: Spark %s wrote %d batches (%s %s), want 3 or more", wc.name, rel, len(r.Batches), r.Outcome, deref(r.Error))
			continue
		}
		checkWritten(t, ck, rel, strings.Contains(wc.name, "async"))
		if update {
			dst := filepath.Join(writtenDir, rel, wc.name)
			_ = os.RemoveAll(dst)
			copyTree(t, ck, filepath.Join(dst, "checkpoint"))
			if wc.sink == "file" {
				copyTree(t, filepath.Join(out, "_spark_metadata"), filepath.Join(dst, "output", "_spark_metadata"))
			}
		}
	}
}

// TestSparkWritten reads every checkpoint that real Spark wrote (testdata/spark-written) with
// inspect, doctor and replay: no finding at warning or above, a restart that resumes, and every
// log file re-marshals byte for byte.
func TestSparkWritten(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(writtenDir, "*", "*", "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no Spark-written checkpoints in testdata/spark-written (UPDATE_SPARK=1 go test -run TestSparkLive writes them)")
	}
	for _, ck := range dirs {
		rel := filepath.Base(filepath.Dir(filepath.Dir(ck)))
		name := filepath.Base(filepath.Dir(ck))
		t.Run(rel+"/"+name, func(t *testing.T) {
			checkWritten(t, ck, rel, strings.Contains(name, "async"))
			if meta := filepath.Join(filepath.Dir(ck), "output", "_spark_metadata"); exists(meta) {
				remarshal(t, meta)
			}
		})
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func checkWritten(t *testing.T, ck, rel string, async bool) {
	t.Helper()
	mode := "sync"
	if async {
		mode = "async"
	}
	if code, out, errOut := ckpt(t, "doctor", ck, "--spark-version", Line(rel), "--mode", mode, "--fail-on", "warning", "-o", "json"); code != 0 {
		t.Errorf("doctor on Spark %s's checkpoint: exit %d\n%s%s", rel, code, out, errOut)
	}
	if code, out, errOut := ckpt(t, "replay", ck, "--spark-version", Line(rel), "--mode", mode, "-o", "json"); code != 0 {
		t.Errorf("replay on Spark %s's checkpoint: exit %d\n%s%s", rel, code, out, errOut)
	}
	if code, out, errOut := ckpt(t, "inspect", ck, "-o", "json"); code != 0 {
		t.Errorf("inspect on Spark %s's checkpoint: exit %d\n%s%s", rel, code, out, errOut)
	}
	remarshal(t, ck)
}

var batchName = regexp.MustCompile(`^[0-9]+(\.compact)?$`)

// remarshal parses every log file under dir and checks that ckpt writes it back byte for byte.
func remarshal(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var got []byte
		base := filepath.Base(p)
		switch {
		case rel == "metadata":
			m, err := logformat.ParseStreamMetadata(rel, data)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			got = m.Marshal()
		case strings.HasPrefix(rel, "offsets/") && batchName.MatchString(base):
			o, err := logformat.ParseOffsets(rel, data)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			got = o.Marshal()
		case strings.HasPrefix(rel, "commits/") && batchName.MatchString(base):
			c, err := logformat.ParseCommit(rel, data)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			got = c.Marshal()
		case strings.HasPrefix(rel, "sources/") && base == "0":
			k, err := logformat.ParseKafkaInitialOffsets(rel, data)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			got = k.Marshal()
		case strings.Contains(dir, "_spark_metadata") && batchName.MatchString(base):
			l, err := logformat.ParseSinkLog(rel, data)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return nil
			}
			got = l.Marshal()
		default:
			return nil
		}
		n++
		if !bytes.Equal(got, data) {
			t.Errorf("%s does not re-marshal byte for byte:\nSpark: %q\nckpt:  %q", rel, data, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("%s: no log file checked", dir)
	}
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
