package sparkoracle

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
)

// The deduplication both engines run: dropDuplicates("key", "p") over the Kafka key as a
// string, the partition (as p: a column named partition would be the Kafka writer's target
// partition) and the value as a string; written to Kafka as key and value.
var (
	dedupCkptArgs     = []string{"--select", "string(key) AS key", "--select", "partition AS p", "--select", "string(value) AS value", "--drop-duplicates", "key, p"}
	dedupSparkSelect  = []string{"CAST(key AS STRING) AS key", "partition AS p", "CAST(value AS STRING) AS value"}
	dedupSparkColumns = []string{"key", "p"}
)

// produceDedup writes n records to each partition of topic: record i of partition p has key
// k<j> with j = i/3 for even i and i/4 for odd i (keys repeat within a batch, across batches
// and after several batches), value "k<j>-<p>", so every dedup key has one value. want
// collects the values each key's output must be.
func produceDedup(t testing.TB, addr, topic string, next []int, n int, want map[string]int) {
	t.Helper()
	var recs []*kgo.Record
	for p := range next {
		for range n {
			i := next[p]
			j := i / 3
			if i%2 == 1 {
				j = i / 4
			}
			k := fmt.Sprintf("k%d", j)
			v := fmt.Sprintf("%s-%d", k, p)
			want[v] = 1
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(k), Value: []byte(v)})
			next[p]++
		}
	}
	produceSync(t, addr, recs)
}

// TestSparkLiveDedupHandOver: `ckpt run` runs dropDuplicates over Kafka for 2 batches; Spark
// continues the checkpoint for 2 batches; `ckpt run` runs the last batch. Another checkpoint
// starts on Spark (4 batches) and ends on `ckpt run`. Both outputs hold every key's record
// exactly once, as a Spark-only run's does; Spark's statestore reader reads the state ckpt
// wrote (after its first batches, and at the end of both hand-overs) as the state Spark wrote
// after the same batches. Spark accepts update mode and refuses complete mode with the text
// ckpt run gives.
// The watermark cases (dedupwm_test.go) run with it. In CI: the newest release only (ciRelease).
func TestSparkLiveDedupHandOver(t *testing.T) {
	statefulReleases(t, ciRelease(t, false), func(t *testing.T, rel string) {
		dedupHandOver(t, rel)
		t.Run("watermark", func(t *testing.T) { dedupWatermarkHandOver(t, rel) })
	})
}

func dedupHandOver(t *testing.T, rel string) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "in", Partitions: 2},
		{Name: "out", Partitions: 1}, {Name: "rev", Partitions: 1}, {Name: "ref", Partitions: 1}, {Name: "upd", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck, rev, ref := filepath.Join(dir, "handover"), filepath.Join(dir, "reverse"), filepath.Join(dir, "reference")
	next, want := make([]int, 2), map[string]int{}
	ckptDedup := func(ck, out, progress string) []int64 {
		args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + b.Addr(), "--option", "subscribe=in",
			"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=10",
			"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + b.Addr(), "--sink-option", "topic=" + out,
			"--checkpoint", ck, "--trigger", "availableNow", "--progress-log", progress, "--spark-version", Line(rel),
			"--conf", "spark.sql.shuffle.partitions=2"}
		if code, stdout, stderr := ckpt(t, append(args, dedupCkptArgs...)...); code != 0 {
			t.Fatalf("ckpt run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return progressBatches(t, progress)
	}
	sparkQuery := func(name, checkpoint, out, mode string) map[string]any {
		return map[string]any{"result": filepath.Join(dir, name+".json"), "checkpoint": checkpoint, "bootstrap": b.Addr(), "topic": "in", "outTopic": out,
			"select": dedupSparkSelect, "dropDuplicates": dedupSparkColumns, "outputMode": mode,
			"maxOffsetsPerTrigger": "10", "shufflePartitions": "2"}
	}
	sparkRan := func(name, batches string) {
		t.Helper()
		if r := readAggResult(t, filepath.Join(dir, name+".json")); r.Outcome != "ok" || fmt.Sprint(r.Batches) != batches {
			t.Fatalf("Spark %s: %s %s, batches %v (want ok, %s)", name, r.Outcome, r.Error, r.Batches, batches)
		}
	}

	produceDedup(t, b.Addr(), "in", next, 10, want)
	if got := ckptDedup(ck, "out", filepath.Join(dir, "p1.jsonl")); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("ckpt run ran batches %v, want [0 1]", got)
	}
	produceDedup(t, b.Addr(), "in", next, 10, want)
	t0 := time.Now()
	aggRequests(t, rel, []map[string]any{sparkQuery("spark", ck, "out", "append"), sparkQuery("spark-rev", rev, "rev", "append")})
	sparkTime := time.Since(t0)
	sparkRan("spark", "[2 3]")
	sparkRan("spark-rev", "[0 1 2 3]")
	produceDedup(t, b.Addr(), "in", next, 5, want)
	if got := ckptDedup(ck, "out", filepath.Join(dir, "p2.jsonl")); fmt.Sprint(got) != "[4]" {
		t.Fatalf("ckpt run after Spark ran batches %v, want [4]", got)
	}
	if got := ckptDedup(rev, "rev", filepath.Join(dir, "p3.jsonl")); fmt.Sprint(got) != "[4]" {
		t.Fatalf("ckpt run after Spark (started on Spark) ran batches %v, want [4]", got)
	}

	// The Spark-only run, update mode (accepted), complete mode (refused), and the readings.
	requestsAndReads(t, rel, dir, []map[string]any{sparkQuery("ref", ref, "ref", "append"),
		sparkQuery("update", filepath.Join(dir, "update"), "upd", "update"),
		sparkQuery("complete", filepath.Join(dir, "complete"), "upd", "complete")},
		[]stateRead{{"ckpt-1", ck, 1}, {"ref-1", ref, 1}, {"handover-4", ck, 4}, {"reverse-4", rev, 4}, {"ref-4", ref, 4}})
	sparkRan("ref", "[0 1 2 3 4]")
	sparkRan("update", "[0 1 2 3 4]")
	refusal := query.SparkCompleteStateless4
	if strings.HasPrefix(rel, "3.") {
		refusal = query.SparkCompleteStateless
	}
	_, qerr := (&query.Query{Checkpoint: ck, Sink: "noop", DropDuplicates: []string{"key"}, OutputMode: "complete"}).Validate()
	if r := readAggResult(t, filepath.Join(dir, "complete.json")); r.Outcome != "error" || !strings.Contains(r.Error, refusal) || qerr == nil || !strings.Contains(qerr.Error(), refusal) {
		t.Errorf("Spark's complete-mode refusal: %s %q; ckpt run says %v", r.Outcome, r.Error, qerr)
	}

	for _, topic := range []string{"ref", "out", "rev", "upd"} {
		t.Run(topic, func(t *testing.T) { checkOutput(t, consume(t, b.Addr(), topic), want) })
	}
	sameReads(t, dir, [][2]string{{"ckpt-1", "ref-1"}, {"handover-4", "ref-4"}, {"reverse-4", "ref-4"}})
	t.Logf("dedup hand-over on Spark %s: ckpt [0 1], Spark [2 3] (%s with the JVM start), ckpt [4]; Spark [0-3], ckpt [4]; %d keys once each",
		rel, sparkTime.Round(time.Millisecond), len(want))
}
