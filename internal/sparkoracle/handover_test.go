package sparkoracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/root"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
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

// handOver: `ckpt run` (Kafka → file sink) writes two batches and stops; Spark continues the
// same query on the same checkpoint and output with no batch re-run; then `ckpt run` continues
// after Spark's last batch; Spark's spark.read of the output (through _spark_metadata) holds every
// input record exactly once.
func handOver(t *testing.T, h *harness) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "in", Partitions: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "checkpoint"), filepath.Join(dir, "output")
	next := make([]int, 3)
	produce(t, b.Addr(), "in", next, 10)

	ckptRunFile(t, b.Addr(), "in", ck, out, filepath.Join(dir, "p1.jsonl"), "--max-batches", "2")
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
		rows += bt.Sources[0].NumInputRows
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
	// Spark 4 (Scala 2.13) may run one empty batch here: it compares offsets by their JSON text, and
	// ckpt run writes Kafka partitions in Scala 2.12's order. It must read nothing.
	var finalRows int64
	for _, bt := range final.Batches {
		for _, src := range bt.Sources {
			finalRows += src.NumInputRows
		}
	}
	if final.Outcome != "ok" || finalRows != 0 {
		t.Errorf("Spark's last restart: %s, read %d records in batches %+v (want ok and none: ckpt run consumed everything)", final.Outcome, finalRows, final.Batches)
	}
	if len(final.Batches) > 0 {
		t.Logf("Spark's last restart ran %d empty batch(es): offsets %s → %s", len(final.Batches), final.Batches[0].Sources[0].StartOffset, final.Batches[0].Sources[0].EndOffset)
	}
	if final.Output == nil || final.Output.Rows != total || final.Output.Distinct != total {
		t.Errorf("spark.read of the output: %+v, want %d rows, all distinct", final.Output, total)
	}
	t.Logf("hand-over: ckpt batches %v, Spark batches %d..%d, ckpt batches %v; spark.read: %+v of %d records", first, r.Batches[0].ID, sparkLast, second, final.Output, total)
}
