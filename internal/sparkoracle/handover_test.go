package sparkoracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/root"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// ckpt runs the ckpt CLI in process and returns its exit code, stdout and stderr.
func ckpt(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	io, _, stdout, stderr := iostreams.Test()
	env := &cli.Env{IO: io, Version: "test", Now: time.Now, Getenv: func(string) string { return "" }}
	code := root.Execute(context.Background(), env, args)
	return code, stdout.String(), stderr.String()
}

// produce appends n records to each partition of topic, values "<topic>-<partition>-<seq>"
// continuing from the counts in next.
func produce(t testing.TB, addr, topic string, next []int, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range next {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%s-%d-%d", topic, p, next[p]))})
			next[p]++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// ckptRunFile runs `ckpt run` Kafka → file sink (the harness's columns) with availableNow.
func ckptRunFile(t testing.TB, addr, topic, ck, out, progress string, extra ...string) {
	t.Helper()
	args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + addr, "--option", "subscribe=" + topic,
		"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=10",
		"--select", "CAST(key AS STRING) AS key", "--select", "CAST(value AS STRING) AS value",
		"--select", "topic", "--select", "partition", "--select", "offset",
		"--sink", "file", "--sink-option", "path=" + out, "--sink-option", "format=json",
		"--checkpoint", ck, "--trigger", "availableNow", "--progress-log", progress}
	args = append(args, extra...)
	if code, stdout, stderr := ckpt(t, args...); code != 0 {
		t.Fatalf("ckpt run: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// progressBatches reads the batch ids of a --progress-log file, in order.
func progressBatches(t testing.TB, path string) []int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			BatchID *int64 `json:"batchId"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.BatchID == nil {
			t.Fatalf("progress log line %q: %v", sc.Text(), err)
		}
		ids = append(ids, *ev.BatchID)
	}
	return ids
}

// handOver: `ckpt run` (Kafka → file sink, --spark-version of the release) writes two batches
// and stops; Spark continues the same query on the same checkpoint and output with no batch
// re-run; then `ckpt run` continues after Spark's last batch; a last Spark restart runs no batch
// (ckpt wrote the Kafka offsets in the order that release writes them), and its spark.read of the
// output (through _spark_metadata) holds every input record exactly once.
func handOver(t *testing.T, h *harness, rel string) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "in", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "checkpoint"), filepath.Join(dir, "output")
	next := make([]int, 3)
	produce(t, b.Addr(), "in", next, 10)

	ckptRunFile(t, b.Addr(), "in", ck, out, filepath.Join(dir, "p1.jsonl"), "--max-batches", "2", "--spark-version", Line(rel))
	first := progressBatches(t, filepath.Join(dir, "p1.jsonl"))
	if len(first) != 2 || first[0] != 0 || first[1] != 1 {
		t.Fatalf("ckpt run wrote batches %v, want [0 1]", first)
	}

	produce(t, b.Addr(), "in", next, 10)
	r := h.run(map[string]any{"name": "handover-spark", "checkpoint": ck, "output": out, "bootstrap": b.Addr(),
		"sink": "file", "trigger": "availableNow", "options": map[string]string{"maxOffsetsPerTrigger": "10"}, "countOutput": true})
	if r.Outcome != "ok" || len(r.Batches) == 0 {
		t.Fatalf("Spark did not continue ckpt run's checkpoint: %s %s %v", r.Outcome, deref(r.Error), r.DriverLog)
	}
	if r.Batches[0].ID != 2 {
		t.Errorf("Spark's first batch is %d, want 2 (no re-run of ckpt's batch 1)", r.Batches[0].ID)
	}
	offsets1, err := os.ReadFile(filepath.Join(ck, "offsets", "1"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(offsets1), "\n")
	if !sameJSON(r.Batches[0].Sources[0].StartOffset, json.RawMessage(lines[len(lines)-1])) {
		t.Errorf("Spark's batch 2 starts at %s, ckpt's batch 1 ended at %s", r.Batches[0].Sources[0].StartOffset, lines[len(lines)-1])
	}
	sparkLast := r.Batches[len(r.Batches)-1].ID
	var rows int64
	for _, bt := range r.Batches {
		rows += bt.Sources[0].Rows()
	}
	var end map[string]map[string]int64
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil {
		t.Fatal(err)
	}
	var ckptRead int64
	for _, o := range end["in"] {
		ckptRead += o
	}
	if rows != 60-ckptRead {
		t.Errorf("Spark read %d records, want the %d that ckpt had not", rows, 60-ckptRead)
	}

	produce(t, b.Addr(), "in", next, 5)
	ckptRunFile(t, b.Addr(), "in", ck, out, filepath.Join(dir, "p2.jsonl"))
	second := progressBatches(t, filepath.Join(dir, "p2.jsonl"))
	if len(second) == 0 || second[0] != sparkLast+1 {
		t.Errorf("ckpt run continued with batches %v, want %d first (after Spark's last)", second, sparkLast+1)
	}

	final := h.run(map[string]any{"name": "handover-count", "checkpoint": ck, "output": out, "bootstrap": b.Addr(),
		"sink": "file", "trigger": "availableNow", "countOutput": true})
	total := int64(next[0] + next[1] + next[2])
	// Spark compares offsets by their JSON text: had ckpt run written another key order than
	// this release's (Scala 2.12's on 4.x), Spark would run one empty batch here.
	if final.Outcome != "ok" || len(final.Batches) != 0 {
		t.Errorf("Spark's last restart: %s, batches %+v (want ok and none: ckpt run consumed everything, in this release's offset order)", final.Outcome, final.Batches)
	}
	if final.Output == nil || final.Output.Rows != total || final.Output.Distinct != total {
		t.Errorf("spark.read of the output: %+v, want %d rows, all distinct", final.Output, total)
	}
	t.Logf("hand-over: ckpt batches %v, Spark batches %d..%d, ckpt batches %v; spark.read: %+v of %d records", first, r.Batches[0].ID, sparkLast, second, final.Output, total)
}

// ckptCtx is ckpt with a context: cancelling it stops `ckpt run` gracefully (the running batch
// completes), as a SIGTERM does.
func ckptCtx(ctx context.Context, t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	io, _, stdout, stderr := iostreams.Test()
	env := &cli.Env{IO: io, Version: "test", Now: time.Now, Getenv: func(string) string { return "" }}
	code := root.Execute(ctx, env, args)
	return code, stdout.String(), stderr.String()
}

// ckptKafkaArgs is `ckpt run` Kafka → Kafka sink (topic out, the harness's key and value
// columns), maxOffsetsPerTrigger 10.
func ckptKafkaArgs(addr, topics, ck, progress string, extra ...string) []string {
	args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + addr, "--option", "subscribe=" + topics,
		"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=10",
		"--select", "key", "--select", "value",
		"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + addr, "--sink-option", "topic=out",
		"--checkpoint", ck, "--progress-log", progress}
	return append(args, extra...)
}

// progressRun reads a --progress-log as the harness reports Spark's batches.
func progressRun(t testing.TB, path string) []Batch {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	// A run still writing may have a partial last line: only whole lines count.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	} else {
		data = nil
	}
	var out []Batch
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		var ev struct {
			BatchID int64         `json:"batchId"`
			Sources []BatchSource `json:"sources"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("progress log line %q: %v", l, err)
		}
		out = append(out, Batch{ID: ev.BatchID, Sources: ev.Sources})
	}
	return out
}

// replayPrediction is `ckpt replay CK --spark-version LINE --mode MODE -o json`: what ckpt
// predicts the next restart of ck does, taken before it.
func replayPrediction(t testing.TB, ck, rel, mode string) (Prediction, string) {
	t.Helper()
	code, stdout, stderr := ckpt(t, "replay", ck, "--spark-version", Line(rel), "--mode", mode, "-o", "json")
	if code != 0 {
		t.Fatalf("ckpt replay %s: exit %d\n%s%s", ck, code, stdout, stderr)
	}
	var p Prediction
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("ckpt replay -o json: %v: %s", err, stdout)
	}
	return p, stdout
}

// predictedStart is where the restart ckpt predicts starts reading: the re-run batch's start, or
// the end of the batch before the next one (the checkpoint's offsets file); nil for none.
func predictedStart(t testing.TB, ck string, p Prediction) map[string]map[string]int64 {
	t.Helper()
	var raw json.RawMessage
	switch {
	case p.RerunBatch != nil && p.RerunRange != nil && len(p.RerunRange.Start) > 0:
		raw = p.RerunRange.Start[0]
	case p.NextBatch > 0:
		raw = json.RawMessage(lastLine(t, filepath.Join(ck, "offsets", fmt.Sprint(p.NextBatch-1))))
	}
	return offsetMap(t, raw)
}

func lastLine(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return ls[len(ls)-1]
}

func offsetMap(t testing.TB, raw json.RawMessage) map[string]map[string]int64 {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]map[string]int64
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("offsets %s: %v", raw, err)
	}
	return m
}

// restart is one step of a hand-over as the test checks it: what ckpt predicted and what ran.
type restart struct {
	who     string // "Spark" or "ckpt run"
	pred    Prediction
	start   map[string]map[string]int64 // predictedStart
	batches []Batch
}

// checkRestart compares a restart (Spark's or ckpt run's) with ckpt replay's prediction, as
// TestGoldens does (first batch, re-run batch and range), and checks that it ran no empty batch
// (4.x compares offsets by their JSON text: an order ckpt got wrong shows as an empty batch).
func checkRestart(t *testing.T, rel string, r restart) {
	t.Helper()
	g := Golden{Case: "hand-over " + r.who, Release: rel, Spark: Result{Outcome: "ok", Batches: r.batches}}
	for _, d := range Compare(g, r.pred) {
		if d.Field == "firstBatch" && d.Spark == "none" {
			// Nothing new to read: replay cannot know the broker has no data, the caller
			// checks that nothing ran.
			continue
		}
		t.Errorf("%s's restart differs from ckpt replay --spark-version %s: %s", r.who, Line(rel), d.Line())
	}
	for _, b := range r.batches {
		for _, s := range b.Sources {
			if s.Rows() == 0 {
				t.Errorf("%s ran batch %d without data (%s → %s)", r.who, b.ID, s.StartOffset, s.EndOffset)
			}
		}
	}
	if len(r.batches) > 0 && r.start != nil {
		if got := offsetMap(t, r.batches[0].Sources[0].StartOffset); !sameOffsets(got, r.start) {
			t.Errorf("%s's batch %d starts at %v, ckpt replay predicted %v", r.who, r.batches[0].ID, got, r.start)
		}
	}
}

func sameOffsets(a, b map[string]map[string]int64) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return string(ab) == string(bb)
}

// reread is how many times each input record is read again by a restart: the records between
// where the restart starts and where the run before it ended (a re-run batch, or batches whose
// commit async progress tracking had not persisted). Records are "<topic>-<partition>-<offset>".
func reread(counts map[string]int, start, prevEnd map[string]map[string]int64) {
	for topic, parts := range prevEnd {
		for p, end := range parts {
			from, ok := start[topic][p]
			if !ok {
				from = 0
			}
			for o := from; o < end; o++ {
				counts[fmt.Sprintf("%s-%s-%d", topic, p, o)]++
			}
		}
	}
}

// lastEnd is the end offsets of the last batch of a run (nil: none ran).
func lastEnd(t testing.TB, bs []Batch) map[string]map[string]int64 {
	if len(bs) == 0 {
		return nil
	}
	return offsetMap(t, bs[len(bs)-1].Sources[0].EndOffset)
}

// consume reads every record of topic's partition 0 (values, in order).
func consume(t testing.TB, addr, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		t.Fatalf("end offset of %s: %+v", topic, end)
	}
	var out []string
	for int64(len(out)) < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// checkOutput compares the output topic with the input: each record as many times as want says
// (1 each, plus what restarts re-read).
func checkOutput(t *testing.T, got []string, want map[string]int) {
	t.Helper()
	have := map[string]int{}
	for _, v := range got {
		have[v]++
	}
	var bad []string
	for v, n := range want {
		if have[v] != n {
			bad = append(bad, fmt.Sprintf("%s ×%d (want %d)", v, have[v], n))
		}
	}
	for v, n := range have {
		if _, ok := want[v]; !ok {
			bad = append(bad, fmt.Sprintf("%s ×%d (not an input)", v, n))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("output topic: %d records, %d wrong: %s", len(got), len(bad), strings.Join(bad[:min(len(bad), 20)], ", "))
	}
}

// checkSparkOrder checks that every offsets file of batches (Spark's, or ckpt run's, which must
// write the same) reproduces, byte for byte, from its offsets in the order ckpt writes for rel's line (logformat's Scala 2.12 or 2.13
// HashMap order), and with update saves the last one in
// testdata/spark-written/<rel>/kafka-offset-order/ (the engine's TestKafkaOffsetOrderMatchesSpark).
func checkSparkOrder(t *testing.T, ck, rel, who string, batches []Batch, update bool) {
	t.Helper()
	for _, b := range batches {
		name := filepath.Join(ck, "offsets", fmt.Sprint(b.ID))
		text := lastLine(t, name)
		k, err := logformat.ParseKafkaOffsets(name, text)
		if err != nil {
			t.Fatal(err)
		}
		want := logformat.NewKafkaOffsets(k.Map())
		if !strings.HasPrefix(rel, "3.") {
			want = logformat.NewKafkaOffsetsScala213(k.Map())
		}
		if want.JSON() != text {
			t.Errorf("%s (Spark %s) wrote offsets/%d as %s, ckpt's order for %s is %s", who, rel, b.ID, text, Line(rel), want.JSON())
		}
	}
	if update && len(batches) > 0 {
		id := batches[len(batches)-1].ID
		data, err := os.ReadFile(filepath.Join(ck, "offsets", fmt.Sprint(id)))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(writtenDir, rel, "kafka-offset-order", fmt.Sprintf("offsets-%d", id)), data)
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Input topics of the Kafka hand-over: two, whose names Scala 2.12's and 2.13's HashMaps
// iterate in different orders, so that the order check covers topics as well as partitions.
const kafkaTopicA, kafkaTopicB = "orders", "events"

// handOverKafka: `ckpt run` (Kafka → Kafka sink, --spark-version of the release) writes batches 0
// and 1 and stops; Spark continues with the Kafka sink; `ckpt run` (no --spark-version: it keeps
// the order Spark wrote) continues; a last Spark restart finds nothing new and runs no batch.
// Each restart is what ckpt replay predicted, and the output topic holds every input record
// exactly once (clean stops: the Kafka sink's at-least-once never shows).
func handOverKafka(t *testing.T, h *harness, rel string, update bool) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{
		{Name: kafkaTopicA, Partitions: 3}, {Name: kafkaTopicB, Partitions: 2}, {Name: "out", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck := filepath.Join(dir, "checkpoint")
	topics := kafkaTopicA + "," + kafkaTopicB
	nextA, nextB := make([]int, 3), make([]int, 2)
	more := func(n int) {
		produce(t, b.Addr(), kafkaTopicA, nextA, n)
		produce(t, b.Addr(), kafkaTopicB, nextB, n)
	}
	more(4)
	run := func(name string, extra ...string) []Batch {
		p := filepath.Join(dir, name+".jsonl")
		args := ckptKafkaArgs(b.Addr(), topics, ck, p, append([]string{"--trigger", "availableNow"}, extra...)...)
		if code, stdout, stderr := ckpt(t, args...); code != 0 {
			t.Fatalf("ckpt run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return progressRun(t, p)
	}
	first := run("p1", "--max-batches", "2", "--spark-version", Line(rel))
	if len(first) != 2 || first[0].ID != 0 || first[1].ID != 1 {
		t.Fatalf("ckpt run wrote batches %v, want 0 and 1", first)
	}

	spark := func(name string) restart {
		pred, _ := replayPrediction(t, ck, rel, "sync")
		r := h.run(map[string]any{"name": name, "checkpoint": ck, "output": filepath.Join(dir, "unused"), "bootstrap": b.Addr(),
			"sink": "kafka", "trigger": "availableNow", "options": map[string]string{"subscribe": topics, "maxOffsetsPerTrigger": "10", "sink.topic": "out"}})
		if r.Outcome != "ok" {
			t.Fatalf("Spark %s: %s %s %v", name, r.Outcome, deref(r.Error), r.DriverLog)
		}
		return restart{who: "Spark", pred: pred, start: predictedStart(t, ck, pred), batches: r.Batches}
	}
	more(6)
	s1 := spark("handover-kafka-spark")
	checkRestart(t, rel, s1)
	if len(s1.batches) == 0 || s1.batches[0].ID != 2 {
		t.Fatalf("Spark continued with batches %v, want 2 first", s1.batches)
	}
	checkSparkOrder(t, ck, rel, "Spark", s1.batches, update)
	checkSparkOrder(t, ck, rel, "ckpt run --spark-version", first, false)

	more(3)
	pred, _ := replayPrediction(t, ck, rel, "sync")
	start := predictedStart(t, ck, pred)
	second := run("p2")
	checkRestart(t, rel, restart{who: "ckpt run", pred: pred, start: start, batches: second})
	checkSparkOrder(t, ck, rel, "ckpt run after Spark", second, false)

	s2 := spark("handover-kafka-last")
	checkRestart(t, rel, s2)
	if len(s2.batches) != 0 {
		t.Errorf("Spark's last restart ran batches %v, want none: ckpt run consumed everything (and wrote Spark's order)", s2.batches)
	}

	want := map[string]int{}
	for p, n := range nextA {
		for o := 0; o < n; o++ {
			want[fmt.Sprintf("%s-%d-%d", kafkaTopicA, p, o)] = 1
		}
	}
	for p, n := range nextB {
		for o := 0; o < n; o++ {
			want[fmt.Sprintf("%s-%d-%d", kafkaTopicB, p, o)] = 1
		}
	}
	checkOutput(t, consume(t, b.Addr(), "out"), want)
	t.Logf("Kafka hand-over: ckpt batches %d-%d, Spark %s, ckpt %s, Spark %s; %d records exactly once",
		first[0].ID, first[1].ID, ids(s1.batches), ids(second), ids(s2.batches), len(want))
}

func ids(bs []Batch) string {
	if len(bs) == 0 {
		return "none"
	}
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = fmt.Sprint(b.ID)
	}
	return strings.Join(s, ",")
}

// runUntilCaughtUp runs `ckpt run` (a processing-time trigger) until its last batch ends at end,
// then stops it gracefully, as the harness stops Spark once caught up.
func runUntilCaughtUp(t *testing.T, args []string, progress string, end map[string]map[string]int64) []Batch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type res struct {
		code           int
		stdout, stderr string
	}
	done := make(chan res, 1)
	go func() {
		code, stdout, stderr := ckptCtx(ctx, t, args...)
		done <- res{code, stdout, stderr}
	}()
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			t.Fatalf("ckpt run ended before catching up: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		case <-deadline:
			cancel()
			r := <-done
			t.Fatalf("ckpt run did not reach %v in 3 minutes: %v\n%s", end, progressRun(t, progress), r.stderr)
		case <-tick.C:
			if !sameOffsets(lastEnd(t, progressRun(t, progress)), end) {
				continue
			}
			cancel()
			r := <-done
			if r.code != 0 {
				t.Fatalf("ckpt run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			return progressRun(t, progress)
		}
	}
}

// ends is the end offsets of the produced records: topic → partition → count.
func ends(topic string, next []int) map[string]map[string]int64 {
	m := map[string]int64{}
	for p, n := range next {
		m[fmt.Sprint(p)] = int64(n)
	}
	return map[string]map[string]int64{topic: m}
}

// Async progress tracking persists offsets and commits only every interval, so a restart (of
// either engine) goes back to the last persisted commit and re-reads what the run before it had
// already written: the Kafka sink's at-least-once, exactly predicted. ckpt runs at 300 ms with a
// 100 ms trigger, Spark at its default 1000 ms with a 300 ms trigger: both leave gaps in the logs
// that the other engine's restart must read.
const ckptAsyncInterval, sparkAsyncInterval = "300", "1000"

// handOverAsync: `ckpt run` with asynchronous progress tracking (Kafka sink, interval 300 ms)
// runs until caught up and stops; Spark's async engine continues; `ckpt run` async continues;
// a last Spark async restart. Before each restart ckpt replay --mode async predicts it: the
// restart must do that (first batch, re-run batch and range, start offsets), and the output
// topic must hold each input record once plus once more for every restart whose predicted
// start lies before it and the previous run's end (the records it re-reads).
func handOverAsync(t *testing.T, h *harness, rel string) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{
		{Name: "in", Partitions: 3}, {Name: "out", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck := filepath.Join(dir, "checkpoint")
	next := make([]int, 3)
	want := map[string]int{}
	more := func(n int) {
		for p := range next {
			for o := next[p]; o < next[p]+n; o++ {
				want[fmt.Sprintf("in-%d-%d", p, o)]++
			}
		}
		produce(t, b.Addr(), "in", next, n)
	}
	async := []string{"--trigger", "100ms", "--sink-option", "asyncProgressTrackingEnabled=true",
		"--sink-option", "asyncProgressTrackingCheckpointIntervalMs=" + ckptAsyncInterval}
	var steps []string
	ckptStep := func(name string, prev []Batch, extra ...string) []Batch {
		var pred Prediction
		var start map[string]map[string]int64
		if prev != nil {
			pred, _ = replayPrediction(t, ck, rel, "async")
			start = predictedStart(t, ck, pred)
		}
		p := filepath.Join(dir, name+".jsonl")
		bs := runUntilCaughtUp(t, ckptKafkaArgs(b.Addr(), "in", ck, p, append(async, extra...)...), p, ends("in", next))
		if prev != nil {
			checkRestart(t, rel, restart{who: "ckpt run", pred: pred, start: start, batches: bs})
			reread(want, start, lastEnd(t, prev))
		}
		steps = append(steps, fmt.Sprintf("ckpt %s (offsets %v, commits %v)", ids(bs), logIDs(t, ck, "offsets"), logIDs(t, ck, "commits")))
		return bs
	}
	spark := func(name string, prev []Batch) []Batch {
		pred, _ := replayPrediction(t, ck, rel, "async")
		start := predictedStart(t, ck, pred)
		r := h.run(map[string]any{"name": name, "checkpoint": ck, "output": filepath.Join(dir, "unused"), "bootstrap": b.Addr(),
			"sink": "kafka", "trigger": "processingTime=300", "options": map[string]string{"subscribe": "in", "maxOffsetsPerTrigger": "10",
				"sink.topic": "out", "sink.asyncProgressTrackingEnabled": "true", "sink.asyncProgressTrackingCheckpointIntervalMs": sparkAsyncInterval}})
		if r.Outcome != "ok" {
			t.Fatalf("Spark %s: %s %s %v", name, r.Outcome, deref(r.Error), r.DriverLog)
		}
		checkRestart(t, rel, restart{who: "Spark", pred: pred, start: start, batches: r.Batches})
		reread(want, start, lastEnd(t, prev))
		steps = append(steps, fmt.Sprintf("Spark %s (offsets %v, commits %v)", ids(r.Batches), logIDs(t, ck, "offsets"), logIDs(t, ck, "commits")))
		return r.Batches
	}

	more(10)
	c1 := ckptStep("a1", nil, "--spark-version", Line(rel))
	more(10)
	s1 := spark("handover-async-spark", c1)
	if len(s1) == 0 {
		t.Fatal("Spark's async engine ran no batch on ckpt's async checkpoint")
	}
	more(5)
	c2 := ckptStep("a2", s1)
	s2 := spark("handover-async-last", c2)
	got := consume(t, b.Addr(), "out")
	checkOutput(t, got, want)
	dups := 0
	for _, n := range want {
		dups += n - 1
	}
	t.Logf("async hand-over: %s; %d records, %d re-read as predicted", strings.Join(steps, " → "), len(got), dups)
	_ = s2
}

// logIDs lists the batch ids of a checkpoint log (offsets, commits).
func logIDs(t testing.TB, ck, dir string) []int64 {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(ck, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range es {
		var id int64
		if _, err := fmt.Sscanf(e.Name(), "%d", &id); err == nil && fmt.Sprint(id) == e.Name() {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
