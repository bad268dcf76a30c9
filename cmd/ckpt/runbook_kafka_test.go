package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/embedkafka/kafkatest"
	"github.com/ckpt-dev/ckpt/internal/topicstate/brokertest"
)

// The Kafka pages stage their incident on a real broker: the embedded one (internal/embedkafka,
// kfake over the Kafka wire protocol), started in-process on a free port. The page shows its
// address as rbBootstrap.
const rbBootstrap = "localhost:9092"

// agedOut is the scene of "Kafka data aged out": the checkpoint of the scenario "committed"
// (topic events, 3 partitions, batch 7 committed with next offsets 80, 88 and 96), and a topic
// that went on receiving records while the query was down, until retention deleted the oldest.
var agedOut = struct {
	topic string
	// next is the checkpoint's next offset per partition (the end offsets of batch 7).
	next []int64
	// produced is the number of records written to each partition.
	produced int64
	// logStart is the log start of each partition after retention: partitions 0 and 1 lost
	// records the query had not read, partition 2 did not (its log start is below 96).
	logStart []int64
	// firstRecord is the time of offset 0; offset o was written o*recordEvery later.
	firstRecord time.Time
	recordEvery time.Duration
	// committedAt is the time of the checkpoint's files (lag shows the age of the last commit):
	// when offset 96 was written, so the query had read everything before it was stopped.
	committedAt time.Time
}{
	topic:       "events",
	next:        []int64{80, 88, 96},
	produced:    150,
	logStart:    []int64{104, 120, 90},
	firstRecord: runbookNow.Add(-25 * time.Hour),
	recordEvery: 10 * time.Minute,
	committedAt: runbookNow.Add(-9 * time.Hour),
}

// agedOutLost is the number of records deleted before the query read them, per partition.
func agedOutLost() []int64 {
	lost := make([]int64, len(agedOut.next))
	for p, n := range agedOut.next {
		lost[p] = max(0, agedOut.logStart[p]-n)
	}
	return lost
}

// stageAgedOut starts the broker with the topic, writes the records with pinned timestamps,
// deletes the oldest as retention would (kadm DeleteRecords), and pins the times of the
// checkpoint's files. {bootstrap} is the broker's address.
func stageAgedOut(dir string) func(sc *rbScene) {
	return func(sc *rbScene) {
		t := sc.T
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		parts := int32(len(agedOut.logStart))
		b, err := embedkafka.Start(ctx, embedkafka.Options{Port: 0, Topics: []embedkafka.TopicSpec{{Name: agedOut.topic, Partitions: parts}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		env := &brokertest.Env{Env: &kafkatest.Env{T: t, Ctx: ctx, B: b, Adm: kadm.NewClient(cl), Addr: b.Addr()}}
		for p := range parts {
			recs := make([]*kgo.Record, agedOut.produced)
			for o := range recs {
				recs[o] = &kgo.Record{
					Topic: agedOut.topic, Partition: p,
					Key: []byte("k" + strconv.Itoa(o)), Value: []byte(strconv.Itoa(o)),
					Timestamp: agedOut.firstRecord.Add(time.Duration(o) * agedOut.recordEvery),
				}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce to %s-%d: %v", agedOut.topic, p, err)
			}
		}
		for p, start := range agedOut.logStart {
			env.DeleteRecords(agedOut.topic, int32(p), start)
		}
		err = filepath.WalkDir(filepath.Join(sc.WD, dir), func(path string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Chtimes(path, agedOut.committedAt, agedOut.committedAt)
		})
		if err != nil {
			t.Fatal(err)
		}
		sc.Run["bootstrap"] = b.Addr()
		sc.Show[b.Addr()] = rbBootstrap
	}
}

func kafkaDataAgedOut() runbook {
	lost := agedOutLost()
	var total, lag int64
	for p := range lost {
		total += lost[p]
		lag += agedOut.produced - agedOut.next[p]
	}
	tp := func(p int) string { return fmt.Sprintf("%s-%d", agedOut.topic, p) }
	skipped := func(p int) string {
		return fmt.Sprintf("`%s` [%d, %d) (%d records)", tp(p), agedOut.next[p], agedOut.logStart[p], lost[p])
	}
	var starting []string
	for p := range agedOut.next {
		starting = append(starting, fmt.Sprintf("%q:%d", strconv.Itoa(p), max(agedOut.next[p], agedOut.logStart[p])))
	}
	startingOffsets := fmt.Sprintf("{%q:{%s}}", agedOut.topic, strings.Join(starting, ","))
	return runbook{
		file:  "kafka-data-aged-out.md",
		title: "Kafka data aged out",
		intro: `
The query was stopped for longer than the topic's retention, or fell behind it. On restart the first
batch asks Kafka for offsets that no longer exist. With the default ` + "`failOnDataLoss=true`" + ` its tasks
fail on the executors, and after the task retries the query stops, with:

` + "```" + `
java.lang.IllegalStateException: Cannot fetch offset 80 (GroupId: spark-kafka-source-…-executor, TopicPartition: events-0).
Some data may have been lost because they are not available in Kafka any more; either the
 data was aged out by Kafka or the topic may have been deleted before all the data in the
 topic was processed. …
` + "```" + `

Restarting again fails the same way. The records between the checkpoint's position and the
partition's log start are gone from Kafka; nothing in the checkpoint can bring them back. What is left
to decide is how to carry on, and ckpt gives the exact positions and counts for that decision. Leave
the query stopped until you have decided.

The example below was staged on a real Kafka broker (ckpt's embedded one, shown as ` + "`" + rbBootstrap + "`" + `): the
query stopped after batch 7, the topic ` + "`" + agedOut.topic + "`" + ` kept receiving records, and retention then deleted the
oldest ones. Give ckpt the bootstrap servers the query reads from, and the same client options
Spark gets (` + "`--kafka-option kafka.security.protocol=SASL_SSL`" + `…, or ` + "`--kafka-option-file client.properties`" + `;
see [lag](../lag.md)). ckpt only reads from the broker: metadata, earliest and latest offsets, a few
record timestamps.`,
		steps: []rbStep{
			{
				setup: scenarioAt("committed", "ckpt"), stage: stageAgedOut("ckpt"),
				text: "## 1. Confirm that the data aged out\n\n" +
					"`ckpt doctor --bootstrap-server` compares the offsets the restart reads next with each partition's earliest and latest offsets on the broker, and quotes what Spark will throw (exit status 3: problems found). `offsets-out-of-range` is this incident: the checkpoint's next offset is below the log start, and the difference is the number of records deleted before the query read them. " +
					fmt.Sprintf("Here %s and %s lost %d and %d records; `%s` is not listed because its log start (%d) is still below the checkpoint's offset (%d).",
						"`"+tp(0)+"`", "`"+tp(1)+"`", lost[0], lost[1], tp(2), agedOut.logStart[2], agedOut.next[2]) +
					"\n\nA different code means a different incident: `topic-recreated` (offsets above the log end), `topic-missing`, `partitions-removed` or `partitions-added`; `ckpt doctor --explain CODE` describes each.",
				cmd: "doctor ckpt --bootstrap-server {bootstrap}",
			},
			{
				text: "## 2. What a restart does\n\n" +
					"`ckpt replay --bootstrap-server` predicts the restart as Spark runs it against this broker. With the options the query has now, it fails (exit status 3):",
				cmd: "replay ckpt --bootstrap-server {bootstrap}",
			},
			{
				text: "`--fail-on-data-loss=false` predicts the restart with the source option `failOnDataLoss=false`: it resumes at batch 8, Spark logs one WARN for each partition that lost records and reads it on from its log start. " +
					fmt.Sprintf("It skips %s and %s, %d records in all, and nothing else: no batch runs twice and no other partition loses a record.", skipped(0), skipped(1), total),
				cmd: "replay ckpt --bootstrap-server {bootstrap} --fail-on-data-loss=false",
			},
			{
				text: "## 3. How far behind the query is\n\n" +
					"`ckpt lag` reads the position from the checkpoint (Spark commits no consumer-group offsets, so `kafka-consumer-groups` shows nothing). " +
					fmt.Sprintf("LAG is LATEST − COMMITTED, the deleted records included: of the %d records, %d are gone and the restart reads the other %d. ", lag, total, lag-total) +
					"LAG-TIME is the record time still to read, from the first record that still exists; the header's \"last commit … ago\" is how long the query has been down. Exit status 0: lag reports problems in STATUS, doctor is the command that fails on them.",
				cmd: "lag ckpt --bootstrap-server {bootstrap}",
			},
			{
				text: "## 4. The checkpoint is not the problem\n\n" +
					"`ckpt repair` has nothing to change: the checkpoint is consistent, and the gap is in Kafka. Its `Restart:` line is what the checkpoint alone predicts; the warnings under it add what the broker does to that restart. Do not edit the offsets files by hand and do not delete the checkpoint: either loses the state and the query id, and neither brings the records back.",
				cmd: "repair ckpt --bootstrap-server {bootstrap}",
			},
		},
		outro: `
## 5. Decide how to carry on

**What ckpt recommends: accept the loss, keep the checkpoint.** Restart once with the Kafka source
option ` + "`failOnDataLoss=false`" + ` (` + "`.option(\"failOnDataLoss\", \"false\")`" + ` on ` + "`readStream`" + `). That is
the restart ` + "`ckpt replay … --fail-on-data-loss=false`" + ` showed in step 2: Spark logs a WARN for each
partition that lost records (` + "`Cannot fetch offset 80 …`" + `, then ` + "`records in [80, 104) will be skipped`" + `),
skips only the records that are already gone, and keeps the state, the query id and the batch ids
that idempotent sinks rely on. Copy the skipped ranges from step 2 into the incident record: once the
query has read past the gap, ckpt no longer reports them. When batch 8 has committed,
` + "`ckpt doctor <checkpoint> --bootstrap-server …`" + ` no longer reports ` + "`offsets-out-of-range`" + `; then set the
option back to ` + "`true`" + ` and restart, so that the next loss stops the query instead of passing silently.

**If the records matter**, re-ingest them from where they came from (a replay from the producer, a
backup of the topic) before the restart. They get new offsets at the end of the log, so the gap in
the checkpoint's offsets stays: the restart still needs ` + "`failOnDataLoss=false`" + ` once, and the query
reads the re-ingested records after the newer ones (mind event-time windows and the watermark).

**Starting over with a new checkpoint location** is the other way out, and rarely the better one. It
throws away the state (aggregations, deduplication, joins start empty) and the query id, and batch ids
start again at 0: a file sink whose ` + "`_spark_metadata`" + ` already has batches 0-7 skips them as "already
committed", so point a new checkpoint at a new output directory too. ` + "`startingOffsets`" + ` is read only
for a new checkpoint (an existing one ignores it). To continue where this one would, give the
positions explicitly, per partition the log start where it is above the checkpoint's offset and the
checkpoint's offset otherwise (doctor gives the log starts, lag's COMMITTED column the offsets):

` + "```" + `
startingOffsets = ` + startingOffsets + `
` + "```" + `

` + "`earliest`" + ` would read ` + "`" + tp(2) + "`" + fmt.Sprintf(" [%d, %d)", agedOut.logStart[2], agedOut.next[2]) + ` a second time; ` + "`latest`" + ` would skip everything that arrived
while the query was down.

ckpt repair does not rewrite source offsets: moving them past the gap by hand changes nothing Spark
would not do with ` + "`failOnDataLoss=false`" + `, and hides the loss. To keep this from happening again, keep
the topic's retention well above the longest time the query can be down or behind, and alert on
` + "`ckpt lag --serve`" + ` (` + "`ckpt_issue{code=\"offsets-out-of-range\"}`" + `); see [lag](../lag.md).`,
	}
}
