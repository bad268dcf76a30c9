package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
)

// The runbook "Restart from a point in time" (docs/runbooks/restart-from-a-point-in-time.md): a
// stateless query on topic events (2 partitions, one record a minute each since 00:00), batches
// 0-5 committed, batch b ending at offset 10(b+1), planned at the minute its last record arrived.
func init() { runbooks = append(runbooks, pointInTime()) }

var pit = struct {
	topic   string
	first   time.Time
	batches int
	per     int64
}{topic: "events", first: runbookNow.Add(-3 * time.Hour), batches: 6, per: 10}

func pitCheckpoint(dir string) func(t *testing.T, wd string) {
	return func(t *testing.T, wd string) {
		root := filepath.Join(wd, dir)
		write := func(rel, data string) {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("metadata", `{"id":"4b1c7f2e-8a1d-4d3e-9c55-0a1b2c3d4e5f"}`)
		write("sources/0/0", "v1\n{\""+pit.topic+"\":{\"0\":0,\"1\":0}}")
		for b := 0; b < pit.batches; b++ {
			end := pit.per * int64(b+1)
			ts := pit.first.Add(time.Duration(end) * time.Minute).UnixMilli()
			write(fmt.Sprintf("offsets/%d", b), fmt.Sprintf("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"%s\":{\"1\":%d,\"0\":%d}}", ts, pit.topic, end, end))
			write(fmt.Sprintf("commits/%d", b), "v1\n{\"nextBatchWatermarkMs\":0}")
		}
	}
}

func stagePointInTime(sc *rbScene) {
	t := sc.T
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b, err := embedkafka.Start(ctx, embedkafka.Options{Port: 0, Topics: []embedkafka.TopicSpec{{Name: pit.topic, Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	n := pit.per*int64(pit.batches) + 15 // a quarter of an hour not yet read
	for p := range int32(2) {
		recs := make([]*kgo.Record, n)
		for o := range recs {
			recs[o] = &kgo.Record{Topic: pit.topic, Partition: p, Value: []byte(strconv.Itoa(o)), Timestamp: pit.first.Add(time.Duration(o) * time.Minute)}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sc.Run["bootstrap"] = b.Addr()
	sc.Show[b.Addr()] = rbBootstrap
}

func pointInTime() runbook {
	at := func(min int) string {
		return pit.first.Add(time.Duration(min) * time.Minute).UTC().Format(time.RFC3339)
	}
	return runbook{
		file:  "restart-from-a-point-in-time.md",
		title: "Restart from a point in time",
		intro: `
A deploy at ` + at(33) + ` wrote wrong output; the code is fixed, and the query should process the records
since then again. Deleting the checkpoint starts over from ` + "`startingOffsets`" + ` and loses the rest of the
query's progress; editing offsets files by hand is how checkpoints break. ckpt moves the position
with a plan first, a backup and a journal, and ` + "`ckpt repair undo`" + ` puts every byte back.

Two ways, for different needs:

- ` + "`ckpt rewind --to-time T`" + ` goes back to the last batch planned at or before T. The batches after it
  run again with the offsets Spark plans then. It works for stateful queries too (state versions
  move into the backup with the batches).
- ` + "`ckpt offsets reset --to-datetime T`" + ` moves the Kafka offsets to the first record at or after T
  (Kafka's ListOffsets by timestamp), record-exact. Stateless queries only: state built from the
  records before cannot follow the sources.

Output the query already wrote stays: a file sink or a Kafka sink gets the re-processed records
again (see [rewind](../offsets.md#ckpt-rewind) for the sink rules).

The example: a stateless query reading ` + "`events`" + ` (2 partitions, one record a minute), batches 0-5
committed, the query stopped.`,
		steps: []rbStep{
			{setup: pitCheckpoint("ckpt"), stage: stagePointInTime,
				text: "## 1. Where does the query stand?", cmd: "offsets export ckpt --bootstrap-server {bootstrap}"},
			{text: "## 2a. Rewind to a batch\n\n`--to-time` picks the last batch whose batch timestamp is at or before the time; the plan lists every file that moves into the backup and what the restart does afterwards, as the recovery planner predicts it.", cmd: "rewind ckpt --to-time " + at(33)},
			{cmd: "rewind ckpt --to-time " + at(33) + " --execute --yes"},
			{cmd: "replay ckpt"},
			{text: "Undo restores the checkpoint byte for byte:", cmd: "repair undo {journal} --yes"},
			{text: "## 2b. Reset the offsets to the exact time\n\nWith the broker, the first record at or after the time on each partition; the plan shows the old and new offsets and how many records are read again.", cmd: "offsets reset ckpt --to-datetime " + at(33) + " --bootstrap-server {bootstrap}"},
			{cmd: "offsets reset ckpt --to-datetime " + at(33) + " --bootstrap-server {bootstrap} --execute --yes"},
			{cmd: "replay ckpt"},
			{text: "## Or start a new checkpoint there\n\nTo leave a checkpoint untouched, give a new one its position as `startingOffsets` (with `--bootstrap-server` every current partition is listed, as Spark requires). Here, the position the reset wrote:", cmd: "offsets export ckpt -o plain"},
		},
		outro: `
A reset or a rewind that stops half-way (a crash, a storage error) leaves its journal and the repair
lock: ` + "`ckpt repair resume <journal>`" + ` finishes it, ` + "`ckpt repair undo <journal>`" + ` reverts it. Both refuse while
the query runs: ` + "`ckpt run`" + ` keeps a liveness record in ` + "`_ckpt/run.json`" + `, and for checkpoints Spark writes ckpt
waits until no log file is younger than ` + "`--active-window`" + ` (2 minutes). See [offsets](../offsets.md).`,
	}
}
