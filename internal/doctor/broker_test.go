package doctor_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate/brokertest"
)

// brokerDoctor runs doctor on the checkpoint with the broker's state for its topics, as
// `ckpt doctor --bootstrap-server` does.
func brokerDoctor(t *testing.T, e *brokertest.Env, c *brokertest.Checkpoint, scene string, lenient bool) *doctor.Report {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, c.Dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	topics, err := recovery.CheckpointTopics(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Run(ctx, cp, doctor.Options{
		Location: "/data/ckpt/" + scene,
		Broker:   &doctor.Broker{State: e.State(topics...), FailOnDataLossFalse: lenient, CommandArgs: []string{"--bootstrap-server", "kafka:9092"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// brokerGolden compares the report with testdata/broker/<scene>.golden.json (-update rewrites
// it). TestCodeCoverage counts these files, so every broker code has a reviewed example.
func brokerGolden(t *testing.T, scene string, rep *doctor.Report) {
	t.Helper()
	p := filepath.Join("testdata", "broker", scene+".golden.json")
	got := render1(rep)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/doctor -run Broker -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (review, then -update):\n%s", p, got)
	}
}

// brokerFindings returns the findings with a broker code.
func brokerFindings(rep *doctor.Report) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Kafka != nil {
			out = append(out, f)
		}
	}
	return out
}

func findingCodes(fs []doctor.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Code+" "+f.Path)
	}
	return out
}

// DeleteRecords past the latest commit: the next batch cannot fetch its first offset.
func TestBrokerOffsetsOutOfRange(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 2)
	e.Produce(topic, 0, 20)
	e.Produce(topic, 1, 20)
	c := brokertest.NewCheckpoint(t, "ck").
		Offsets(0, brokertest.Kafka(topic, 5, 5)).Commit(0).
		Offsets(1, brokertest.Kafka(topic, 10, 12)).Commit(1)
	e.DeleteRecords(topic, 0, 15)

	rep := brokerDoctor(t, e, c, "offsets-out-of-range", false)
	brokerGolden(t, "offsets-out-of-range", rep)
	fs := brokerFindings(rep)
	if got := findingCodes(fs); !slices.Equal(got, []string{"error offsets-out-of-range kafka:" + topic + "-0"}) {
		t.Fatalf("findings %v", got)
	}
	f := fs[0]
	if *f.Batch != 2 || f.Files[0] != "offsets/1" || f.Kafka.Records != 5 || !f.Kafka.Fails || f.Kafka.CheckpointOffset != 10 || f.Kafka.LogStart != 15 {
		t.Fatalf("finding %+v / %+v", f, f.Kafka)
	}
	want := "java.lang.IllegalStateException: Cannot fetch offset 10 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + topic + "-0). " + kafka.InstructionFailOnDataLossTrue
	if *f.SparkError != want {
		t.Fatalf("spark error\n%q\nwant\n%q", *f.SparkError, want)
	}
	if !strings.Contains(f.Explanation, "With failOnDataLoss=false instead: Spark logs the message as a warning, skips offsets [10, 15) (5 records) and reads on from offset 15.") {
		t.Fatalf("explanation %q", f.Explanation)
	}
	if f.Commands[0] != "ckpt replay /data/ckpt/offsets-out-of-range --bootstrap-server kafka:9092 --fail-on-data-loss=false" {
		t.Fatalf("commands %q", f.Commands)
	}
	if !rep.Restart.Failed() || !strings.HasPrefix(rep.Restart.Verdict(), "Restart will FAIL: java.lang.IllegalStateException: Cannot fetch offset 10 (GroupId: ") {
		t.Fatalf("restart %s", rep.Restart.Verdict())
	}

	// failOnDataLoss=false: still an error (the data is lost silently), but the restart runs.
	lenient := brokerDoctor(t, e, c, "offsets-out-of-range", true)
	lf := brokerFindings(lenient)
	if len(lf) != 1 || lf[0].Severity != doctor.Error || lf[0].Kafka.Fails || lenient.Restart.Failed() ||
		!strings.HasPrefix(*lf[0].SparkError, "WARN KafkaDataConsumer: Cannot fetch offset 10 (GroupId: ") ||
		!strings.HasSuffix(*lf[0].SparkError, kafka.InstructionFailOnDataLossFalse) ||
		!strings.Contains(lf[0].Explanation, "With failOnDataLoss=false, as given: Spark logs") {
		t.Fatalf("lenient %+v", lf)
	}
}

// Retention ran into the batch a restart re-runs: the re-run meets it first, on the executors.
func TestBrokerOffsetsOutOfRangeRerun(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 2)
	e.Produce(topic, 0, 20)
	e.Produce(topic, 1, 20)
	c := brokertest.NewCheckpoint(t, "ck").
		Offsets(0, brokertest.Kafka(topic, 5, 5)).Commit(0).
		Offsets(1, brokertest.Kafka(topic, 10, 12)).Commit(1).
		Offsets(2, brokertest.Kafka(topic, 18, 20))
	e.DeleteRecords(topic, 0, 15)

	rep := brokerDoctor(t, e, c, "offsets-out-of-range-rerun", false)
	brokerGolden(t, "offsets-out-of-range-rerun", rep)
	fs := brokerFindings(rep)
	if len(fs) != 1 || fs[0].Code != doctor.CodeOffsetsOutOfRange || *fs[0].Batch != 2 || !fs[0].Kafka.Rerun || fs[0].Kafka.Records != 5 ||
		fs[0].Message != "re-run of batch 2: "+topic+"-0: the re-run reads offsets [10, 18) but the log starts at 15: 5 of them were deleted (retention or DeleteRecords) before the query read them" {
		t.Fatalf("findings %+v", fs)
	}
	if !rep.Has(doctor.CodeUncommittedBatch) || !rep.Restart.Failed() {
		t.Fatalf("report %v, restart %s", findingCodes(rep.Findings), rep.Restart.Verdict())
	}
}

// The topic was deleted and recreated with fewer records: the checkpoint is past the log end.
func TestBrokerTopicRecreated(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 2)
	e.Produce(topic, 0, 10)
	e.Produce(topic, 1, 10)
	c := brokertest.NewCheckpoint(t, "ck").Offsets(0, brokertest.Kafka(topic, 10, 10)).Commit(0)
	e.DeleteTopic(topic)
	e.CreateTopic(topic, 2)
	e.Produce(topic, 0, 3)

	rep := brokerDoctor(t, e, c, "topic-recreated", false)
	brokerGolden(t, "topic-recreated", rep)
	fs := brokerFindings(rep)
	if got := findingCodes(fs); !slices.Equal(got, []string{"error topic-recreated kafka:" + topic + "-0", "error topic-recreated kafka:" + topic + "-1"}) {
		t.Fatalf("findings %v", got)
	}
	if fs[0].Kafka.Records != 3 || fs[1].Kafka.Records != 0 || !strings.HasSuffix(fs[0].Message, "(records affected: 3)") {
		t.Fatalf("records %+v %+v", fs[0].Kafka, fs[1].Kafka)
	}
	want := "java.lang.IllegalStateException: Partition " + topic + "-0's offset was changed from 10 to 3, some data may have been missed. " + kafka.InstructionFailOnDataLossTrue
	if *fs[0].SparkError != want {
		t.Fatalf("spark error %q", *fs[0].SparkError)
	}
}

// The topic was recreated with fewer partitions: one partition of the checkpoint is gone.
func TestBrokerPartitionsRemoved(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 3)
	for p := range int32(3) {
		e.Produce(topic, p, 10)
	}
	c := brokertest.NewCheckpoint(t, "ck").Offsets(0, brokertest.Kafka(topic, 10, 10, 10)).Commit(0)
	e.DeleteTopic(topic)
	e.CreateTopic(topic, 2)
	e.Produce(topic, 0, 12)
	e.Produce(topic, 1, 12)

	rep := brokerDoctor(t, e, c, "partitions-removed", false)
	brokerGolden(t, "partitions-removed", rep)
	fs := brokerFindings(rep)
	if got := findingCodes(fs); !slices.Equal(got, []string{"error partitions-removed kafka:" + topic + "-2"}) {
		t.Fatalf("findings %v", got)
	}
	if want := "java.lang.IllegalStateException: Set(" + topic + "-2) are gone. Some data may have been missed.. " + kafka.InstructionFailOnDataLossTrue; *fs[0].SparkError != want {
		t.Fatalf("spark error %q", *fs[0].SparkError)
	}
	if fs[0].Kafka.Records != recovery.Unknown || !strings.HasSuffix(fs[0].Message, "(records affected: unknown)") {
		t.Fatalf("finding %+v", fs[0])
	}
}

// Partitions were added; one lost its first records before the query saw it.
func TestBrokerPartitionsAdded(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 1)
	e.Produce(topic, 0, 5)
	c := brokertest.NewCheckpoint(t, "ck").Offsets(0, brokertest.Kafka(topic, 5)).Commit(0)
	e.AddPartitions(topic, 2)
	e.Produce(topic, 1, 4)
	e.Produce(topic, 2, 9)
	e.DeleteRecords(topic, 2, 3)

	rep := brokerDoctor(t, e, c, "partitions-added", false)
	brokerGolden(t, "partitions-added", rep)
	fs := brokerFindings(rep)
	if got := findingCodes(fs); !slices.Equal(got, []string{"error partitions-added kafka:" + topic + "-2", "info partitions-added kafka:" + topic + "-1"}) {
		t.Fatalf("findings %v", got)
	}
	if want := "java.lang.IllegalStateException: Added partition " + topic + "-2 starts from 3 instead of 0. Some data may have been missed. " + kafka.InstructionFailOnDataLossTrue; *fs[0].SparkError != want {
		t.Fatalf("spark error %q", *fs[0].SparkError)
	}
	if fs[0].Kafka.Records != 3 || fs[1].SparkError != nil || fs[1].Kafka.DataLoss || len(fs[1].Commands) != 0 {
		t.Fatalf("findings %+v %+v", fs[0].Kafka, fs[1])
	}
}

// The topic was removed: the restart fails whatever failOnDataLoss says.
func TestBrokerTopicMissing(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 2)
	c := brokertest.NewCheckpoint(t, "ck").Offsets(0, brokertest.Kafka(topic, 4, 2)).Commit(0)
	e.DeleteTopic(topic)

	for _, lenient := range []bool{false, true} {
		rep := brokerDoctor(t, e, c, "topic-missing", lenient)
		if !lenient {
			brokerGolden(t, "topic-missing", rep)
		}
		fs := brokerFindings(rep)
		if got := findingCodes(fs); !slices.Equal(got, []string{"error topic-missing kafka:" + topic}) {
			t.Fatalf("findings %v", got)
		}
		if *fs[0].SparkError != "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic "+topic+" not found." || !rep.Restart.Failed() ||
			rep.Restart.Exception != "org.apache.kafka.common.errors.UnknownTopicOrPartitionException" {
			t.Fatalf("lenient %v: %q, restart %s", lenient, *fs[0].SparkError, rep.Restart.Verdict())
		}
	}
}

// Without a broker problem there are no broker findings and the restart is the planner's.
func TestBrokerClean(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 1)
	e.Produce(topic, 0, 10)
	c := brokertest.NewCheckpoint(t, "ck").Offsets(0, brokertest.Kafka(topic, 4)).Commit(0).Offsets(1, brokertest.Kafka(topic, 8))
	rep := brokerDoctor(t, e, c, "clean", false)
	if fs := brokerFindings(rep); len(fs) != 0 || rep.Restart.Failed() || rep.Restart.Verdict() != "Restart re-runs batch 1, then continues at batch 2" {
		t.Fatalf("findings %v, restart %s", findingCodes(fs), rep.Restart.Verdict())
	}
}
