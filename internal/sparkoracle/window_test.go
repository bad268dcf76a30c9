package sparkoracle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// windowT0 is the event time the window test's records count from (2026-01-01T00:00:00Z).
var windowT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The window test's phases: the event times (seconds after windowT0) of the records each
// phase appends to the input topic. Phase 2 holds a row for the window [0s, 60s) closed by
// phase 1 (50s), phase 3 one far behind (10s): Spark drops them. 85s is behind the latest
// event time but its window is open: it counts.
var windowPhases = [][]int{{5, 20, 40, 55, 70, 75}, {50, 80, 130, 85, 140, 150}, {200, 260, 10}}

// windowCase is one windowed count with a watermark of 10 seconds: ckpt's and Spark's
// spellings of the same query, written to Kafka as key CAST(window AS STRING) and value the
// count.
type windowCase struct {
	name, mode, window string
	noWatermark        bool
}

var windowCases = []windowCase{
	{"append", "append", "window(timestamp, '1 minute')", false},
	{"update", "update", "window(timestamp, '1 minute', '30 seconds')", false},
	// No watermark: nothing late, nothing evicted, no no-data batch; the window column's
	// metadata holds spark.timeWindow alone.
	{"nowm", "update", "window(timestamp, '1 minute')", true},
}

func produceAt(t testing.TB, addr, topic string, secs []int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, s := range secs {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(s)), Value: []byte(fmt.Sprint(s)), Timestamp: windowT0.Add(time.Duration(s) * time.Second)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestSparkLiveWindowHandOver: a count per event-time window with a 10-second watermark, in
// append mode (tumbling 1-minute windows) and update mode (1-minute windows sliding by 30
// seconds), and in update mode without a watermark (nothing late, nothing evicted), over
// three phases of input with late rows. The hand-over runs ckpt, then Spark,
// then ckpt on one checkpoint and output; a Spark-only run reads the same input in the same
// phases. Each phase runs the same batches (no-data batches included) in both; the last output
// per window, every offsets/N batchWatermarkMs and commits/N nextBatchWatermarkMs, and Spark's
// statestore reading of the state after ckpt's first phase and at the end are the same. Spark
// refuses append mode with a watermark that no grouping column carries, with ckpt's text.
func TestSparkLiveWindowHandOver(t *testing.T) {
	for _, rel := range ciRelease(t, false) { // CI: the newest release only
		t.Run(rel, func(t *testing.T) {
			requireSpark(t, rel)
			if strings.HasPrefix(rel, "3.") {
				requireSpark(t, "4.0.0") // reads the state: 3.5 has no statestore reader
			}
			windowHandOver(t, rel)
		})
	}
}

func windowHandOver(t *testing.T, rel string) {
	topics := []embedkafka.TopicSpec{{Name: "in", Partitions: 1}, {Name: "refused", Partitions: 1}}
	for _, c := range windowCases {
		topics = append(topics, embedkafka.TopicSpec{Name: "out-" + c.name, Partitions: 1}, embedkafka.TopicSpec{Name: "ref-" + c.name, Partitions: 1})
	}
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck := func(who string, c windowCase) string { return filepath.Join(dir, who+"-"+c.name) }
	ckptRun := func(c windowCase, progress string) []int64 {
		args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + b.Addr(), "--option", "subscribe=in",
			"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=3",
			"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + b.Addr(), "--sink-option", "topic=out-" + c.name,
			"--checkpoint", ck("handover", c), "--trigger", "availableNow", "--progress-log", progress, "--spark-version", Line(rel),
			"--conf", "spark.sql.shuffle.partitions=2",
			"--group-by", c.window + " AS key", "--agg", "count(*) AS value", "--output-mode", c.mode}
		if !c.noWatermark {
			args = append(args, "--watermark", "timestamp=10 seconds")
		}
		if code, stdout, stderr := ckpt(t, args...); code != 0 {
			t.Fatalf("ckpt run (%s): exit %d\n%s\n%s", c.name, code, stdout, stderr)
		}
		return progressBatches(t, progress)
	}
	sparkQuery := func(result, checkpoint, out string, c windowCase) map[string]any {
		q := map[string]any{"result": result, "checkpoint": checkpoint, "bootstrap": b.Addr(), "topic": "in", "outTopic": out,
			"groupBy": []string{c.window + " AS key"}, "agg": []string{"count(*) AS value"},
			"project": []string{"CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value"}, "watermark": []string{"timestamp", "10 seconds"},
			"outputMode": c.mode, "maxOffsetsPerTrigger": "3", "shufflePartitions": "2"}
		if c.noWatermark {
			delete(q, "watermark")
		}
		return q
	}
	reader := rel
	if strings.HasPrefix(rel, "3.") {
		reader = "4.0.0"
	}
	readReq := func(name, checkpoint string, batch int64) map[string]any {
		return map[string]any{"result": filepath.Join(dir, name+".jsonl"), "read": checkpoint, "batchId": batch}
	}
	// phase runs Spark's requests of one phase (the reads in the reader's JVM when rel has none).
	phase := func(reqs, reads []map[string]any) {
		if reader == rel {
			aggRequests(t, rel, append(reqs, reads...))
			return
		}
		aggRequests(t, rel, reqs)
		if len(reads) > 0 {
			aggRequests(t, reader, reads)
		}
	}
	sparkBatches := func(name string) []int64 {
		r := readAggResult(t, filepath.Join(dir, name+".json"))
		if r.Outcome != "ok" {
			t.Fatalf("Spark %s: %s %s", name, r.Outcome, r.Error)
		}
		return r.Batches
	}

	// Phase 1: ckpt runs the hand-over; Spark runs the reference.
	produceAt(t, b.Addr(), "in", windowPhases[0])
	first := map[string][]int64{}
	var reqs []map[string]any
	for _, c := range windowCases {
		first[c.name] = ckptRun(c, filepath.Join(dir, "p1-"+c.name+".jsonl"))
		reqs = append(reqs, sparkQuery(filepath.Join(dir, "ref1-"+c.name+".json"), ck("ref", c), "ref-"+c.name, c))
	}
	t0 := time.Now()
	phase(reqs, nil)
	for _, c := range windowCases {
		if got, want := first[c.name], sparkBatches("ref1-"+c.name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s phase 1: ckpt ran batches %v, Spark %v", c.name, got, want)
		}
	}
	// Phase 2: Spark continues the hand-over and the reference; the state ckpt wrote in
	// phase 1 is read.
	produceAt(t, b.Addr(), "in", windowPhases[1])
	reqs, reads := nil, []map[string]any(nil)
	for _, c := range windowCases {
		last := first[c.name][len(first[c.name])-1]
		reqs = append(reqs, sparkQuery(filepath.Join(dir, "hand2-"+c.name+".json"), ck("handover", c), "out-"+c.name, c),
			sparkQuery(filepath.Join(dir, "ref2-"+c.name+".json"), ck("ref", c), "ref-"+c.name, c))
		reads = append(reads, readReq("ckpt1-"+c.name, ck("handover", c), last), readReq("ref1-"+c.name, ck("ref", c), last))
	}
	// Reads first: the runs of this phase add state versions, the reads name phase 1's.
	if reader == rel {
		aggRequests(t, rel, append(reads, reqs...))
	} else {
		phase(reqs, reads)
	}
	for _, c := range windowCases {
		if got, want := sparkBatches("hand2-"+c.name), sparkBatches("ref2-"+c.name); fmt.Sprint(got) != fmt.Sprint(want) || len(got) == 0 {
			t.Fatalf("%s phase 2: Spark on ckpt's checkpoint ran batches %v, on its own %v", c.name, got, want)
		}
	}
	// Phase 3: ckpt continues after Spark; the reference too; the final states are read.
	produceAt(t, b.Addr(), "in", windowPhases[2])
	third := map[string][]int64{}
	reqs, reads = nil, nil
	for _, c := range windowCases {
		third[c.name] = ckptRun(c, filepath.Join(dir, "p3-"+c.name+".jsonl"))
		reqs = append(reqs, sparkQuery(filepath.Join(dir, "ref3-"+c.name+".json"), ck("ref", c), "ref-"+c.name, c))
		last := third[c.name][len(third[c.name])-1]
		reads = append(reads, readReq("hand3-"+c.name, ck("handover", c), last), readReq("ref3-"+c.name, ck("ref", c), last))
	}
	refused := sparkQuery(filepath.Join(dir, "refused.json"), filepath.Join(dir, "refused"), "refused", windowCase{name: "refused", mode: "append"})
	refused["groupBy"] = []string{"CAST(key AS STRING) AS key"}
	reqs = append(reqs, refused)
	phase(reqs, reads)
	sparkTime := time.Since(t0)

	for _, c := range windowCases {
		if got, want := third[c.name], sparkBatches("ref3-"+c.name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s phase 3: ckpt ran batches %v, Spark %v", c.name, got, want)
		}
		got, want := lastPerKey(t, b.Addr(), "out-"+c.name), lastPerKey(t, b.Addr(), "ref-"+c.name)
		if len(want) < 3 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: last output per window: hand-over %v, Spark-only %v", c.name, got, want)
		}
		t.Logf("%s on Spark %s: ckpt %v, Spark %v, ckpt %v; last output per window %v", c.name, rel, first[c.name], sparkBatches("hand2-"+c.name), third[c.name], got)
		for _, pair := range [][2]string{{"ckpt1-", "ref1-"}, {"hand3-", "ref3-"}} {
			a, r := readingOf(t, dir, pair[0]+c.name), readingOf(t, dir, pair[1]+c.name)
			if r == "" || a != r {
				t.Errorf("%s: Spark reads %s as\n%s\nand %s as\n%s", c.name, pair[0], a, pair[1], r)
			}
		}
		sameWatermarks(t, c.name, ck("handover", c), ck("ref", c))
	}
	if c := windowCases[0]; c.mode == "append" {
		// The late rows (50s, 85s, 10s) are dropped: [0s, 60s) counts 5, 20, 40, 55.
		key := "{2026-01-01 00:00:00, 2026-01-01 00:01:00}"
		if got := lastPerKey(t, b.Addr(), "ref-append")[key]; got != "4" {
			t.Errorf("Spark's count of window %s: %q, want 4 (the late rows dropped)", key, got)
		}
	}
	refusal := query.SparkAppendAggregation4
	if strings.HasPrefix(rel, "3.") {
		refusal = query.SparkAppendAggregation
	}
	_, qerr := (&query.Query{Checkpoint: "x", Sink: "noop", GroupBy: []string{"string(key) AS key"}, Agg: []string{"count(*) AS n"}, Watermark: "timestamp=10 seconds"}).Validate()
	if r := readAggResult(t, filepath.Join(dir, "refused.json")); r.Outcome != "error" || !strings.Contains(r.Error, refusal) || qerr == nil || !strings.Contains(qerr.Error(), refusal) {
		t.Errorf("Spark's refusal of append mode with a watermark on no grouping column: %s %q; ckpt run says %v", r.Outcome, r.Error, qerr)
	}
	t.Logf("Spark %s: the Spark phases took %s with the JVM starts", rel, sparkTime.Round(time.Millisecond))
}

func readingOf(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name+".jsonl")
	if e, err := os.ReadFile(p + ".error"); err == nil {
		t.Fatalf("Spark's statestore reader on %s: %s", name, e)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameWatermarks compares batchWatermarkMs of every offsets file and nextBatchWatermarkMs of
// every commit file of two checkpoints.
func sameWatermarks(t *testing.T, mode, a, b string) {
	t.Helper()
	ctx := context.Background()
	marks := func(dir string) string {
		st, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, id := range cp.Offsets.IDs() {
			seq, err := cp.ReadOffsets(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			c, err := cp.ReadCommit(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d:%d/%d", id, seq.Metadata.BatchWatermarkMs, c.NextBatchWatermarkMs))
		}
		return strings.Join(out, " ")
	}
	if x, y := marks(a), marks(b); x != y || x == "" {
		t.Errorf("%s: batch:batchWatermarkMs/nextBatchWatermarkMs of the hand-over %s, of Spark's run %s", mode, x, y)
	} else {
		t.Logf("%s: watermarks %s", mode, x)
	}
}
