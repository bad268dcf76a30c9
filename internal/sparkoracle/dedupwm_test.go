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
)

// dedupWMT0 is the event time of second 0 of the watermark cases' input.
var dedupWMT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// dedupWMInput is the watermark cases' input, one batch (5 records, maxOffsetsPerTrigger 5)
// per line: key and event second; the value is "key@second". With a 10 s delay: batch 0 moves
// the watermark to 10; batch 1 brings duplicates and keys evicted at its end; batch 2 late
// rows (a@3) and a key again after its eviction (a@30), watermark 30; batch 4 a late row
// (b@29) and moves the watermark to 40, so a no-data batch 5 evicts. Batches 1 and 3 do not
// move the watermark: each phase of the hand-over ends without a no-data batch, so a
// Spark-only run over all of it runs the same batches.
var dedupWMInput = [][]string{
	{"a 0", "b 5", "a 0", "c 20", "b 5"},
	{"a 0", "d 12", "b 6", "c 20", "e 15"},
	{"a 3", "f 40", "a 30", "d 12", "g 11"},
	{"b 20", "h 35", "g 11", "c 25", "f 40"},
	{"c 31", "h 36", "b 29", "i 50", "c 31"},
}

func produceDedupWM(t testing.TB, addr string, topics []string, batches [][]string) {
	t.Helper()
	var recs []*kgo.Record
	for _, topic := range topics {
		for _, b := range batches {
			for _, r := range b {
				var k string
				var s int
				fmt.Sscanf(r, "%s %d", &k, &s)
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(fmt.Sprintf("%s@%d", k, s)),
					Timestamp: dedupWMT0.Add(time.Duration(s) * time.Second)})
			}
		}
	}
	produceSync(t, addr, recs)
}

// dedupWMCase is one watermark case: dropDuplicates("key", "timestamp") with a watermark, or
// dropDuplicatesWithinWatermark("key").
type dedupWMCase struct {
	name      string
	ckptArgs  []string
	sparkKey  string
	sparkCols []string
}

var dedupWMCases = []dedupWMCase{
	{"wm", []string{"--drop-duplicates", "key, timestamp"}, "dropDuplicates", []string{"key", "timestamp"}},
	{"within", []string{"--drop-duplicates-within-watermark", "key"}, "dropDuplicatesWithinWatermark", []string{"key"}},
}

// dedupWatermarkHandOver: for each case, `ckpt run` runs batches 0-1, Spark 2-3, `ckpt run`
// 4 and the no-data batch 5; a Spark-only run over the same input runs 0-5. The outputs are
// the same records; Spark's statestore reader reads the state after batches 1, 3 and 5 of
// the hand-over as the Spark-only run's; offsets/N's batchWatermarkMs and commits/N's
// nextBatchWatermarkMs are the Spark-only run's.
func dedupWatermarkHandOver(t *testing.T, rel string) {
	var specs []embedkafka.TopicSpec
	for _, c := range dedupWMCases {
		for _, s := range []string{"in", "out", "ref"} {
			specs = append(specs, embedkafka.TopicSpec{Name: c.name + "-" + s, Partitions: 1})
		}
	}
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: specs})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ckptRun := func(c dedupWMCase, progress string) []int64 {
		args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + b.Addr(), "--option", "subscribe=" + c.name + "-in",
			"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=5",
			"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + b.Addr(), "--sink-option", "topic=" + c.name + "-out",
			"--checkpoint", filepath.Join(dir, c.name), "--trigger", "availableNow", "--progress-log", progress, "--spark-version", Line(rel),
			"--conf", "spark.sql.shuffle.partitions=2", "--watermark", "timestamp=10 seconds",
			"--select", "string(key) AS key", "--select", "timestamp", "--select", "string(value) AS value"}
		if code, stdout, stderr := ckpt(t, append(args, c.ckptArgs...)...); code != 0 {
			t.Fatalf("ckpt run %s: exit %d\n%s\n%s", c.name, code, stdout, stderr)
		}
		return progressBatches(t, progress)
	}
	sparkQuery := func(c dedupWMCase, name, out string) map[string]any {
		return map[string]any{"result": filepath.Join(dir, name+".json"), "checkpoint": filepath.Join(dir, name), "bootstrap": b.Addr(),
			"topic": c.name + "-in", "outTopic": out, "select": []string{"CAST(key AS STRING) AS key", "timestamp", "CAST(value AS STRING) AS value"},
			c.sparkKey: c.sparkCols, "watermark": []string{"timestamp", "10 seconds"}, "outputMode": "append",
			"maxOffsetsPerTrigger": "5", "shufflePartitions": "2"}
	}
	sparkRan := func(name, batches string) {
		t.Helper()
		if r := readAggResult(t, filepath.Join(dir, name+".json")); r.Outcome != "ok" || fmt.Sprint(r.Batches) != batches {
			t.Fatalf("Spark %s: %s %s, batches %v (want ok, %s)", name, r.Outcome, r.Error, r.Batches, batches)
		}
	}
	topics := []string{dedupWMCases[0].name + "-in", dedupWMCases[1].name + "-in"}

	t0 := time.Now()
	produceDedupWM(t, b.Addr(), topics, dedupWMInput[:2])
	for _, c := range dedupWMCases {
		if got := ckptRun(c, filepath.Join(dir, c.name+"-p1.jsonl")); fmt.Sprint(got) != "[0 1]" {
			t.Fatalf("%s: ckpt run ran batches %v, want [0 1]", c.name, got)
		}
	}
	produceDedupWM(t, b.Addr(), topics, dedupWMInput[2:4])
	var reqs []map[string]any
	for _, c := range dedupWMCases {
		q := sparkQuery(c, c.name, c.name+"-out")
		q["result"] = filepath.Join(dir, c.name+"-spark.json")
		reqs = append(reqs, q)
	}
	aggRequests(t, rel, reqs)
	for _, c := range dedupWMCases {
		sparkRan(c.name+"-spark", "[2 3]")
	}
	produceDedupWM(t, b.Addr(), topics, dedupWMInput[4:])
	for _, c := range dedupWMCases {
		if got := ckptRun(c, filepath.Join(dir, c.name+"-p2.jsonl")); fmt.Sprint(got) != "[4 5]" {
			t.Fatalf("%s: ckpt run after Spark ran batches %v, want [4 5] (batch 5: no data, the watermark moved)", c.name, got)
		}
	}

	reqs = nil
	var reads []stateRead
	for _, c := range dedupWMCases {
		reqs = append(reqs, sparkQuery(c, c.name+"-ref", c.name+"-ref"))
		for _, n := range []int{1, 3, 5} {
			reads = append(reads, stateRead{fmt.Sprintf("%s-%d", c.name, n), filepath.Join(dir, c.name), n},
				stateRead{fmt.Sprintf("%s-ref-%d", c.name, n), filepath.Join(dir, c.name+"-ref"), n})
		}
	}
	requestsAndReads(t, rel, dir, reqs, reads)
	for _, c := range dedupWMCases {
		t.Run(c.name, func(t *testing.T) {
			sparkRan(c.name+"-ref", "[0 1 2 3 4 5]")
			want := map[string]int{}
			for _, v := range consume(t, b.Addr(), c.name+"-ref") {
				want[v]++
			}
			checkOutput(t, consume(t, b.Addr(), c.name+"-out"), want)
			sameReads(t, dir, [][2]string{{c.name + "-1", c.name + "-ref-1"}, {c.name + "-3", c.name + "-ref-3"}, {c.name + "-5", c.name + "-ref-5"}})
			for id := range 6 {
				for _, f := range []struct{ log, field string }{{"offsets", "batchWatermarkMs"}, {"commits", "nextBatchWatermarkMs"}} {
					got, ref := logField(t, filepath.Join(dir, c.name, f.log, fmt.Sprint(id)), f.field), logField(t, filepath.Join(dir, c.name+"-ref", f.log, fmt.Sprint(id)), f.field)
					if got != ref {
						t.Errorf("%s/%d %s: hand-over %s, Spark-only %s", f.log, id, f.field, got, ref)
					}
				}
			}
			t.Logf("%s: %d records out, as Spark's", c.name, len(want))
		})
	}
	t.Logf("dedup watermark hand-over on Spark %s: %s", rel, time.Since(t0).Round(time.Millisecond))
}

// logField is a field of the JSON line after the version line of an offsets or commits file.
func logField(t *testing.T, path, field string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var m map[string]json.RawMessage
	if len(lines) < 2 || json.Unmarshal([]byte(lines[1]), &m) != nil {
		t.Fatalf("%s: no JSON second line", path)
	}
	return string(m[field])
}
