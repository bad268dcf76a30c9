// Package brokertest sets the scene for tests of the broker checks of doctor, replay, inspect
// and repair: an embedded Kafka (internal/embedkafka, kfake over the real wire protocol) arranged
// with an admin client (DeleteRecords, CreatePartitions, DeleteTopics), and checkpoints written
// to a directory. Tests only.
package brokertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/embedkafka/kafkatest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// Env is an embedded broker with an admin client (internal/embedkafka/kafkatest), with the
// helpers that need topicstate.
type Env struct {
	*kafkatest.Env
}

// New starts a broker on a free port; it stops when the test ends.
func New(t testing.TB) *Env {
	t.Helper()
	return &Env{kafkatest.New(t)}
}

// Timeout is the broker timeout the tests give commands (cli.BrokerFlags.Timeout): generous
// for a loaded machine.
const Timeout = 20 * time.Second

// Produce writes n records to one partition.
func (e *Env) Produce(topic string, partition int32, n int) {
	e.T.Helper()
	if n == 0 {
		return
	}
	e.Env.Produce(topic, partition, n, nil)
}

// State reads the topics as ckpt does (topicstate.Read, within Timeout).
func (e *Env) State(topics ...string) *recovery.BrokerState {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(e.Ctx, Timeout)
	defer cancel()
	st, err := topicstate.Read(ctx, e.Adm, topics)
	if err != nil {
		e.T.Fatal(err)
	}
	return st
}

// Checkpoint writes checkpoint files into Dir.
type Checkpoint struct {
	T   testing.TB
	Dir string
}

// NewCheckpoint makes an empty checkpoint directory below the test's temporary directory, with
// a metadata file.
func NewCheckpoint(t testing.TB, name string) *Checkpoint {
	c := &Checkpoint{T: t, Dir: filepath.Join(t.TempDir(), name)}
	return c.Write("metadata", `{"id":"0e5fa2b4-4e0c-4f0a-8a3c-1c2b3d4e5f60"}`)
}

// Write writes one file.
func (c *Checkpoint) Write(rel, data string) *Checkpoint {
	c.T.Helper()
	p := filepath.Join(c.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		c.T.Fatal(err)
	}
	return c
}

// Offsets writes offsets/id with one line per source.
func (c *Checkpoint) Offsets(id int, sources ...string) *Checkpoint {
	return c.Write(fmt.Sprintf("offsets/%d", id), "v1\n"+`{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`+"\n"+strings.Join(sources, "\n"))
}

// Commit writes commits/id.
func (c *Checkpoint) Commit(id int) *Checkpoint {
	return c.Write(fmt.Sprintf("commits/%d", id), "v1\n{\"nextBatchWatermarkMs\":0}")
}

// Initial writes sources/<i>/0, the Kafka initial offsets, as Spark does.
func (c *Checkpoint) Initial(i int, json string) *Checkpoint {
	return c.Write(fmt.Sprintf("sources/%d/0", i), "\x00v1\n"+json)
}

// Kafka renders one topic's offsets as Spark writes them: {"topic":{"0":a,"1":b}}, partition i
// at offsets[i].
func Kafka(topic string, offsets ...int64) string {
	m := map[int32]int64{}
	for i, o := range offsets {
		m[int32(i)] = o
	}
	return KafkaMap(topic, m)
}

// KafkaMap renders one topic's offsets from a partition map.
func KafkaMap(topic string, offsets map[int32]int64) string {
	ps := make([]int32, 0, len(offsets))
	for p := range offsets {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%q:%d", strconv.Itoa(int(p)), offsets[p])
	}
	return fmt.Sprintf("{%q:{%s}}", topic, strings.Join(parts, ","))
}

// The scenes: one topic of two partitions with 20 records each, and a checkpoint whose batch 1
// is committed at offsets 5, 5 and whose batch 2 (offsets 15, 12) is not, so that a restart
// re-runs batch 2 over [5, 15) and [5, 12): 17 records by subtracting offsets. Then the broker
// changes. Each scene is a case of the broker checks.
const (
	// SceneDeleteRecords: DeleteRecords moves partition 0's log start to 8, past the re-run's
	// start 5: 3 records are gone.
	SceneDeleteRecords = "delete-records"
	// SceneTopicRecreated: the topic is deleted and recreated with 2 partitions holding 3 and
	// 20 records: the re-run's range [5, 15) of partition 0 is beyond the log end 3, and the
	// batch after it starts at 15 > 3. Partition 1's range lies inside the new log (Spark
	// cannot tell it apart from progress).
	SceneTopicRecreated = "topic-recreated"
	// ScenePartitionsAdded: partitions 2 and 3 are added with 6 and 4 records, and partition 2's
	// log start moved to 2: the batch after the re-run reads them from their earliest offsets.
	ScenePartitionsAdded = "partitions-added"
	// ScenePartitionsRemoved: the topic is recreated with 1 partition of 20 records: partition 1
	// is gone.
	ScenePartitionsRemoved = "partitions-removed"
	// SceneTopicMissing: the topic is deleted.
	SceneTopicMissing = "topic-missing"
)

// Scenes lists the scenes.
var Scenes = []string{SceneDeleteRecords, SceneTopicRecreated, ScenePartitionsAdded, ScenePartitionsRemoved, SceneTopicMissing}

// Expect is what ckpt must say about a scene.
type Expect struct {
	// Codes are the broker codes doctor reports, "code topic-partition" ("code topic" for
	// topic-missing) in the order of doctor's findings, with the batch that meets each.
	Codes []string
	// Spark is the first line of the exception the restart fails with (failOnDataLoss=true).
	Spark string
	// Records, AgedOut and BeyondEnd are the re-run's broker counts for partitions 0 and 1.
	Records, AgedOut, BeyondEnd [2]int64
	// Lost are the records affected of each issue, in the order of Codes (-1 unknown).
	Lost []int64
}

// Scene builds a scene on the broker and returns the checkpoint, the topic and what ckpt must
// say.
func Scene(e *Env, name string) (*Checkpoint, string, Expect) {
	e.T.Helper()
	topic := e.Topic(name, 2)
	e.Produce(topic, 0, 20)
	e.Produce(topic, 1, 20)
	c := NewCheckpoint(e.T, "ck").
		Offsets(0, Kafka(topic, 0, 0)).Commit(0).
		Offsets(1, Kafka(topic, 5, 5)).Commit(1).
		Offsets(2, Kafka(topic, 15, 12))
	tp := func(p int) string { return fmt.Sprintf("%s-%d", topic, p) }
	var x Expect
	switch name {
	case SceneDeleteRecords:
		e.DeleteRecords(topic, 0, 8)
		x = Expect{
			Codes:   []string{"offsets-out-of-range " + tp(0) + " batch 2"},
			Spark:   "java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + tp(0) + ").",
			Records: [2]int64{7, 7}, AgedOut: [2]int64{3, 0},
			Lost: []int64{3},
		}
	case SceneTopicRecreated:
		e.DeleteTopic(topic)
		e.CreateTopic(topic, 2)
		e.Produce(topic, 0, 3)
		e.Produce(topic, 1, 20)
		x = Expect{
			Codes:   []string{"topic-recreated " + tp(0) + " batch 2", "topic-recreated " + tp(0) + " batch 3"},
			Spark:   "java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + tp(0) + ").",
			Records: [2]int64{0, 7}, BeyondEnd: [2]int64{10, 0},
			Lost: []int64{10, 3},
		}
	case ScenePartitionsAdded:
		e.AddPartitions(topic, 2)
		e.Produce(topic, 2, 6)
		e.Produce(topic, 3, 4)
		e.DeleteRecords(topic, 2, 2)
		x = Expect{
			Codes:   []string{"partitions-added " + tp(2) + " batch 3", "partitions-added " + tp(3) + " batch 3"},
			Spark:   "java.lang.IllegalStateException: Added partition " + tp(2) + " starts from 2 instead of 0. Some data may have been missed.",
			Records: [2]int64{10, 7},
			Lost:    []int64{2, 0},
		}
	case ScenePartitionsRemoved:
		e.DeleteTopic(topic)
		e.CreateTopic(topic, 1)
		e.Produce(topic, 0, 20)
		x = Expect{
			Codes:   []string{"partitions-removed " + tp(1) + " batch 3"},
			Spark:   "java.lang.IllegalStateException: Set(" + tp(1) + ") are gone. Some data may have been missed..",
			Records: [2]int64{10, 0},
			Lost:    []int64{-1},
		}
	case SceneTopicMissing:
		e.DeleteTopic(topic)
		x = Expect{
			Codes:   []string{"topic-missing " + topic + " batch 3"},
			Spark:   "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic " + topic + " not found.",
			Records: [2]int64{0, 0},
			Lost:    []int64{-1},
		}
	default:
		e.T.Fatalf("no scene %q", name)
	}
	return c, topic, x
}
