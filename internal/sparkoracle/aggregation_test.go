package sparkoracle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
)

// The aggregation both engines run: per Kafka key, count, sum, min, max and avg of the value
// read as a number, in update mode, written to Kafka as key and the sum (Spark's Kafka writer
// takes a string value: the sum cast to a string, which is the text ckpt's sink writes; the
// other columns stay in the plan, so Spark's optimizer keeps their aggregates).
var (
	aggCkptArgs = []string{"--group-by", "string(key) AS key",
		"--agg", "count(*) AS n, sum(int(string(value))) AS value, min(int(string(value))) AS lo, max(string(value)) AS hi, avg(int(string(value))) AS mean",
		"--output-mode", "update"}
	aggSparkGroupBy = []string{"CAST(key AS STRING) AS key"}
	aggSparkAgg     = []string{"count(*) AS n", "CAST(sum(CAST(CAST(value AS STRING) AS BIGINT)) AS STRING) AS value", "min(CAST(CAST(value AS STRING) AS BIGINT)) AS lo",
		"max(CAST(value AS STRING)) AS hi", "avg(CAST(CAST(value AS STRING) AS BIGINT)) AS mean"}
)

// produceAgg writes n records to each of the two partitions of topic: keys k0..k4 in turn,
// values the running number next[p]*10+p.
func produceAgg(t testing.TB, addr, topic string, next []int, n int) {
	t.Helper()
	var recs []*kgo.Record
	for p := range next {
		for range n {
			i := next[p]
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte(fmt.Sprintf("k%d", (i+p)%5)), Value: []byte(fmt.Sprint(i*10 + p))})
			next[p]++
		}
	}
	produceSync(t, addr, recs)
}

// produceSync writes recs to their partitions and waits for the broker's acknowledgements.
func produceSync(t testing.TB, addr string, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// lastPerKey reads topic from the start and returns the last value of every key.
func lastPerKey(t testing.TB, addr, topic string) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out[string(r.Key)] = string(r.Value) })
	}
}

type aggResult struct {
	Outcome string  `json:"outcome"`
	Error   string  `json:"error"`
	Batches []int64 `json:"batches"`
}

// aggRequests runs spark/AggRun.java's requests in one JVM of rel.
func aggRequests(t *testing.T, rel string, reqs []map[string]any) {
	t.Helper()
	var lines []string
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		lines = append(lines, string(b))
	}
	runJava(t, rel, "AggRun", lines)
}

func readAggResult(t *testing.T, path string) aggResult {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r aggResult
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSparkLiveAggregationHandOver: `ckpt run` runs a grouped count/sum/min/max/avg over Kafka
// for 2 batches; Spark continues the checkpoint for 2 batches; `ckpt run` runs the last batch.
// The last output of every key equals a Spark-only run's over the same input; Spark's
// statestore reader reads the state ckpt wrote after its first batches as the state Spark
// wrote after the same batches, and the final state of the hand-over as the Spark-only run's.
// Spark refuses append mode for the aggregation with the text ckpt run gives.
func TestSparkLiveAggregationHandOver(t *testing.T) {
	statefulReleases(t, ciReleases(t), func(t *testing.T, rel string) { aggHandOver(t, rel, aggVariant{}) })
}

// statefulReleases runs a stateful hand-over on ciReleases, with Spark 4.0.0 to read the state
// of 3.5, which has no statestore reader.
func statefulReleases(t *testing.T, rels []string, run func(*testing.T, string)) {
	for _, rel := range rels {
		t.Run(rel, func(t *testing.T) {
			requireSpark(t, rel)
			if strings.HasPrefix(rel, "3.") {
				requireSpark(t, "4.0.0")
			}
			run(t, rel)
		})
	}
}

// requireSpark skips the test when release rel is not installed (fails it in CI).
func requireSpark(t *testing.T, rel string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sparkCache(), rel, "jars", ".complete")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Spark %s is not installed in %s", rel, sparkCache())
		}
		t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
	}
}

// aggVariant is a state store configuration the hand-over runs with: confs for every `ckpt
// run` and every Spark query, and a check of ckpt's checkpoint after its first run.
type aggVariant struct {
	conf       map[string]string
	afterFirst func(t *testing.T, ck string)
	// atEnd checks the hand-over's checkpoint ck against the Spark-only run's ref.
	atEnd func(t *testing.T, ck, ref string)
}

func aggHandOver(t *testing.T, rel string, v aggVariant) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "in", Partitions: 2}, {Name: "out", Partitions: 1}, {Name: "ref", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck, ref := filepath.Join(dir, "handover"), filepath.Join(dir, "reference")
	next := make([]int, 2)
	ckptAgg := func(progress string, extra ...string) []int64 {
		args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + b.Addr(), "--option", "subscribe=in",
			"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=10",
			"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + b.Addr(), "--sink-option", "topic=out",
			"--checkpoint", ck, "--trigger", "availableNow", "--progress-log", progress, "--spark-version", Line(rel),
			"--conf", "spark.sql.shuffle.partitions=2"}
		for k, val := range v.conf {
			args = append(args, "--conf", k+"="+val)
		}
		args = append(append(args, aggCkptArgs...), extra...)
		if code, stdout, stderr := ckpt(t, args...); code != 0 {
			t.Fatalf("ckpt run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return progressBatches(t, progress)
	}
	sparkQuery := func(result, checkpoint, out, mode string) map[string]any {
		return map[string]any{"result": result, "checkpoint": checkpoint, "bootstrap": b.Addr(), "topic": "in", "outTopic": out,
			"groupBy": aggSparkGroupBy, "agg": aggSparkAgg, "outputMode": mode,
			"maxOffsetsPerTrigger": "10", "shufflePartitions": "2", "conf": v.conf}
	}

	produceAgg(t, b.Addr(), "in", next, 10)
	if got := ckptAgg(filepath.Join(dir, "p1.jsonl")); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("ckpt run ran batches %v, want [0 1]", got)
	}
	if v.afterFirst != nil {
		v.afterFirst(t, ck)
	}
	produceAgg(t, b.Addr(), "in", next, 10)
	t0 := time.Now()
	aggRequests(t, rel, []map[string]any{sparkQuery(filepath.Join(dir, "spark.json"), ck, "out", "update")})
	r := readAggResult(t, filepath.Join(dir, "spark.json"))
	if r.Outcome != "ok" || fmt.Sprint(r.Batches) != "[2 3]" {
		t.Fatalf("Spark on ckpt's checkpoint: %s %s, batches %v (want ok, [2 3])", r.Outcome, r.Error, r.Batches)
	}
	sparkTime := time.Since(t0)
	produceAgg(t, b.Addr(), "in", next, 5)
	if got := ckptAgg(filepath.Join(dir, "p2.jsonl")); fmt.Sprint(got) != "[4]" {
		t.Fatalf("ckpt run after Spark ran batches %v, want [4]", got)
	}

	// The Spark-only run over the same input, the readings of both checkpoints, and append mode.
	reqs := []map[string]any{sparkQuery(filepath.Join(dir, "ref.json"), ref, "ref", "update"),
		sparkQuery(filepath.Join(dir, "append.json"), filepath.Join(dir, "append"), "ref", "append")}
	requestsAndReads(t, rel, dir, reqs, []stateRead{{"ckpt-1", ck, 1}, {"ref-1", ref, 1}, {"handover-4", ck, 4}, {"ref-4", ref, 4}})
	if r := readAggResult(t, filepath.Join(dir, "ref.json")); r.Outcome != "ok" || len(r.Batches) != 5 {
		t.Fatalf("Spark-only run: %s %s, batches %v (want 5)", r.Outcome, r.Error, r.Batches)
	}
	refusal := query.SparkAppendAggregation4
	if strings.HasPrefix(rel, "3.") {
		refusal = query.SparkAppendAggregation
	}
	_, qerr := (&query.Query{Checkpoint: ck, Sink: "noop", GroupBy: []string{"string(key) AS key"}, Agg: []string{"count(*) AS n"}}).Validate()
	if r := readAggResult(t, filepath.Join(dir, "append.json")); r.Outcome != "error" || !strings.Contains(r.Error, refusal) || qerr == nil || !strings.Contains(qerr.Error(), refusal) {
		t.Errorf("Spark's append-mode refusal: %s %q; ckpt run says %v", r.Outcome, r.Error, qerr)
	}

	got, want := lastPerKey(t, b.Addr(), "out"), lastPerKey(t, b.Addr(), "ref")
	if len(want) != 5 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("last output per key: hand-over %v, Spark-only %v", got, want)
	}
	sameReads(t, dir, [][2]string{{"ckpt-1", "ref-1"}, {"handover-4", "ref-4"}})
	if v.atEnd != nil {
		v.atEnd(t, ck, ref)
	}
	t.Logf("hand-over on Spark %s: ckpt [0 1], Spark [2 3] (%s with the JVM start), ckpt [4]; last output per key %v", rel, sparkTime.Round(time.Millisecond), got)
}

// stateRead asks Spark's statestore reader for the state of checkpoint ck after batch; the
// rows go to <dir>/<name>.jsonl.
type stateRead struct {
	name, ck string
	batch    int
}

// requestsAndReads runs AggRun's query requests on rel, then the reads: in the same JVM, or
// on Spark 4.0.0 for 3.5, which has no statestore reader.
func requestsAndReads(t *testing.T, rel, dir string, reqs []map[string]any, reads []stateRead) {
	t.Helper()
	var rs []map[string]any
	for _, c := range reads {
		rs = append(rs, map[string]any{"result": filepath.Join(dir, c.name+".jsonl"), "read": c.ck, "batchId": c.batch})
	}
	if !strings.HasPrefix(rel, "3.") {
		aggRequests(t, rel, append(reqs, rs...))
		return
	}
	aggRequests(t, rel, reqs)
	aggRequests(t, "4.0.0", rs)
}

// sameReads fails unless Spark's statestore reader read each pair of checkpoints (AggRun's
// read results dir/<name>.jsonl) as the same, non-empty state.
func sameReads(t *testing.T, dir string, pairs [][2]string) {
	t.Helper()
	for _, pair := range pairs {
		var data [2]string
		for i, name := range pair {
			p := filepath.Join(dir, name+".jsonl")
			if e, err := os.ReadFile(p + ".error"); err == nil {
				t.Fatalf("Spark's statestore reader on %s: %s", name, e)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[i] = string(b)
		}
		if data[1] == "" || data[0] != data[1] {
			t.Errorf("Spark reads %s as\n%s\nand %s as\n%s", pair[0], data[0], pair[1], data[1])
		}
	}
}
