package topicstate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// memCheckpoint writes files into an in-memory checkpoint and loads it.
type memCheckpoint struct {
	t *testing.T
	s storage.Store
}

var memCount int

func newMemCheckpoint(t *testing.T) *memCheckpoint {
	t.Helper()
	memCount++
	name := fmt.Sprintf("%s-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), memCount)
	s, err := storage.Open(context.Background(), "mem://"+name, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { storage.ForgetMem(name) })
	return &memCheckpoint{t: t, s: s}
}

func (m *memCheckpoint) write(path, data string) *memCheckpoint {
	m.t.Helper()
	if err := m.s.WriteFile(context.Background(), path, []byte(data)); err != nil {
		m.t.Fatal(err)
	}
	return m
}

func (m *memCheckpoint) offsets(id int, sources ...string) *memCheckpoint {
	return m.write(fmt.Sprintf("offsets/%d", id), "v1\n"+`{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`+"\n"+strings.Join(sources, "\n"))
}

func (m *memCheckpoint) commit(id int) *memCheckpoint {
	return m.write(fmt.Sprintf("commits/%d", id), "v1\n{\"nextBatchWatermarkMs\":0}")
}

// plan loads the checkpoint and returns it with the planner's prediction (sync, Spark 3.5).
func (m *memCheckpoint) plan() (*checkpoint.Checkpoint, *recovery.Result) {
	m.t.Helper()
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, m.s)
	if err != nil {
		m.t.Fatal(err)
	}
	res, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		m.t.Fatal(err)
	}
	return cp, res
}

// planWith plans the restart with the broker's state (Options.Broker).
func (m *memCheckpoint) planWith(st *recovery.BrokerState, failOnDataLossFalse bool) *recovery.Result {
	m.t.Helper()
	cp, err := checkpoint.Load(context.Background(), m.s)
	if err != nil {
		m.t.Fatal(err)
	}
	res, err := recovery.Plan(context.Background(), cp, recovery.Options{Broker: st, FailOnDataLossFalse: failOnDataLossFalse})
	if err != nil {
		m.t.Fatal(err)
	}
	if res.Broker == nil || res.Broker.CheckpointOutcome != recovery.OutcomeResume {
		m.t.Fatalf("broker verdict %+v", res.Broker)
	}
	return res
}

func (m *memCheckpoint) restart() (*checkpoint.Checkpoint, *recovery.Result, *recovery.KafkaRestart) {
	m.t.Helper()
	cp, res := m.plan()
	r, err := recovery.PlanKafkaRestart(context.Background(), cp, res)
	if err != nil {
		m.t.Fatal(err)
	}
	return cp, res, r
}

// CheckBrokerRerun models the re-run of a recorded range: new partitions on the driver, then the
// executors' reads.
func TestCheckRerunOffline(t *testing.T) {
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{{Topic: "a", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 10, End: 20}, {Partition: 1, Start: 0, End: 5}, {Partition: 2, Start: 3, End: 9}, {Partition: 4, Start: 0, End: 2}}}}}
	start := offsets("a:0=4", "a:1=2", "a:4=0", "a:5=1")
	end := offsets("a:0=15", "a:1=8", "a:2=6", "a:3=4", "a:4=2", "a:6=0")
	got := recovery.CheckBrokerRerun(start, end, st, true)
	if c := codes(got); !slices.Equal(c, []string{
		"partitions-removed a-3", "partitions-removed a-6", "partitions-added a-2", "offsets-out-of-range a-0", "topic-recreated a-1",
	}) {
		t.Fatalf("issues %v", c)
	}
	gone, added, aged, beyond := got[0], got[2], got[3], got[4]
	if want := "Cannot find earliest offsets of Set(a-3, a-6). Some data may have been missed. " + dataloss.InstructionTrue; gone.SparkMessage != want || got[1].SparkMessage != want {
		t.Errorf("cannot find earliest: %q", gone.SparkMessage)
	}
	if gone.CheckpointOffset != 4 || gone.Records != recovery.Unknown || !gone.Fails || !gone.DataLoss {
		t.Errorf("gone %+v", gone)
	}
	if want := "Added partition a-2 starts from 3 instead of 0. Some data may have been missed. " + dataloss.InstructionTrue; added.SparkMessage != want || added.Records != 3 {
		t.Errorf("added %+v", added)
	}
	wantAged := recovery.BrokerIssue{Code: recovery.ReasonOffsetsOutOfRange, Topic: "a", Partition: 0, CheckpointOffset: 4, LogStart: 10, LogEnd: 20, Records: 6, DataLoss: true, Fails: true, Class: dataloss.IllegalState, Executor: true,
		Message:             "a-0: the re-run reads offsets [4, 15) but the log starts at 10: 6 of them were deleted (retention or DeleteRecords) before the query read them",
		SparkMessage:        "Cannot fetch offset 4 (GroupId: " + dataloss.ExecutorGroupID + ", TopicPartition: a-0). " + dataloss.InstructionTrue,
		FailOnDataLossFalse: "Spark logs the message as a warning, skips offsets [4, 10) (6 records) and reads [10, 15).",
	}
	if aged != wantAged {
		t.Errorf("aged out\n%+v\nwant\n%+v", aged, wantAged)
	}
	if beyond.Records != 3 || beyond.CheckpointOffset != 2 || !strings.HasPrefix(beyond.SparkMessage, "Cannot fetch offset 5 (GroupId: ") ||
		beyond.Message != "a-1: the re-run reads offsets [2, 8) but the log ends at 5: [5, 8) (3 offsets) no longer exist: the topic was deleted and recreated (or the high watermark went backwards)" ||
		!strings.Contains(beyond.FailOnDataLossFalse, "AvailableOffsetRange(0,5). Offset 5 is out of range, and records in [5, 8) will be skipped") {
		t.Errorf("beyond the end %+v", beyond)
	}

	// A range wholly below the log start, and one wholly above the end; failOnDataLoss=false.
	lenient := recovery.CheckBrokerRerun(offsets("a:0=1", "a:1=7"), offsets("a:0=6", "a:1=9"), st, false)
	if c := codes(lenient); !slices.Equal(c, []string{"offsets-out-of-range a-0", "topic-recreated a-1"}) {
		t.Fatalf("issues %v", c)
	}
	if lenient[0].Fails || lenient[0].Records != 5 || !strings.Contains(lenient[0].FailOnDataLossFalse, "the re-run reads nothing from the partition") ||
		!strings.HasSuffix(lenient[0].SparkMessage, dataloss.InstructionFalse) {
		t.Errorf("below the start %+v", lenient[0])
	}
	if lenient[1].Records != 2 || !strings.Contains(lenient[1].Message, "none of them exist") || !strings.HasPrefix(lenient[1].SparkMessage, "Cannot fetch offset 7 ") {
		t.Errorf("above the end %+v", lenient[1])
	}
	// Nothing to say about a range the log holds, an empty range or an unread topic.
	if issues := recovery.CheckBrokerRerun(offsets("a:0=10", "a:1=5", "b:0=1"), offsets("a:0=20", "a:1=5", "b:0=9"), st, true); len(issues) != 0 {
		t.Errorf("issues %v", codes(issues))
	}
}

func TestPlanRestart(t *testing.T) {
	ctx := context.Background()
	// Batch 2 uncommitted: it re-runs from offsets/1 to offsets/2; source 1 is not Kafka.
	m := newMemCheckpoint(t).
		offsets(0, `{"t":{"0":0}}`, `{"logOffset":0}`).commit(0).
		offsets(1, `{"t":{"0":5}}`, `{"logOffset":1}`).commit(1).
		offsets(2, `{"t":{"0":15,"1":3}}`, `{"logOffset":2}`)
	_, _, r := m.restart()
	if len(r.Sources) != 1 {
		t.Fatalf("sources %+v", r.Sources)
	}
	s := r.Sources[0]
	if s.Index != 0 || !s.Rerun || s.Batch != 2 || s.StartFile != "offsets/1" || s.EndFile != "offsets/2" || s.Start.JSON() != `{"t":{"0":5}}` || s.End.JSON() != `{"t":{"0":15,"1":3}}` {
		t.Fatalf("re-run source %+v", s)
	}
	if got := r.Topics(); !slices.Equal(got, []string{"t"}) {
		t.Fatalf("topics %v", got)
	}

	// Committed: the next batch starts from offsets/2.
	m.commit(2)
	_, _, r = m.restart()
	if len(r.Sources) != 1 || r.Sources[0].Rerun || r.Sources[0].Batch != 3 || r.Sources[0].StartFile != "offsets/2" || r.Sources[0].End != nil {
		t.Fatalf("next batch %+v", r.Sources)
	}

	// Batch 0 re-runs from the initial offsets; without them the start is unknown.
	first := newMemCheckpoint(t).offsets(0, `{"u":{"0":7}}`).write("sources/0/0", "\x00v1\n"+`{"u":{"0":2}}`)
	_, _, r = first.restart()
	if s := r.Sources[0]; !s.Rerun || s.Batch != 0 || s.StartFile != "sources/0/0" || s.Start.JSON() != `{"u":{"0":2}}` {
		t.Fatalf("initial offsets %+v", s)
	}
	if err := first.s.Delete(ctx, "sources/0/0"); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, first.s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err = recovery.PlanKafkaRestart(ctx, cp, res)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Sources[0]; s.Start != nil || s.StartFile != "startingOffsets (sources/0/0 is missing)" || s.End == nil {
		t.Fatalf("no initial offsets %+v", s)
	}
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{{Topic: "u", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 3, End: 9}}}}}
	if issues := r.Check(st, true); len(issues) != 0 {
		t.Fatalf("unknown start: only the end is checked, and 7 is in [3, 9): %+v", issues)
	}
	if counts := CountRestart(r, st); len(counts) != 0 {
		t.Fatalf("unknown start: no counts, got %+v", counts)
	}

	// An empty checkpoint has no sources; topics come from the files without the planner.
	_, _, r = newMemCheckpoint(t).write("metadata", `{"id":"x"}`).restart()
	if len(r.Sources) != 0 {
		t.Fatalf("sources %+v", r.Sources)
	}
	topics, err := recovery.CheckpointTopics(ctx, cp)
	if err != nil || !slices.Equal(topics, []string{"u"}) {
		t.Fatalf("checkpoint topics %v %v", topics, err)
	}
}

// Retention ran past the start of the batch a restart re-runs: the re-run meets it, the counts
// say what really exists, and the planner, given the broker, turns the prediction into Spark's failure.
func TestRestartAgainstBroker(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "in")
	tb.CreateTopic(topic, 2)
	tb.produce(topic, 0, 20, nil)
	tb.produce(topic, 1, 4, nil)
	m := newMemCheckpoint(t).
		offsets(0, fmt.Sprintf(`{%q:{"0":0,"1":0}}`, topic)).commit(0).
		offsets(1, fmt.Sprintf(`{%q:{"0":5,"1":4}}`, topic)).commit(1).
		offsets(2, fmt.Sprintf(`{%q:{"0":15,"1":4}}`, topic))
	tb.DeleteRecords(topic, 0, 8)
	_, _, r := m.restart()
	st := tb.read(r.Topics()...)

	issues := r.Check(st, true)
	if len(issues) != 1 {
		t.Fatalf("issues %+v", issues)
	}
	is := issues[0]
	if is.Code != recovery.ReasonOffsetsOutOfRange || !is.Rerun || is.Batch != 2 || is.File != "offsets/1" || is.Records != 3 || !is.Fails || is.Where() != "re-run of batch 2" {
		t.Fatalf("issue %+v", is)
	}
	counts := CountRestart(r, st)[0]
	if len(counts) != 2 || counts[0].Records != 7 || counts[0].AgedOut != 3 || counts[0].Offsets != 10 || counts[1].Records != 0 {
		t.Fatalf("counts %+v", counts)
	}

	res := m.planWith(st, false)
	if !res.Failed() || res.Exception != "java.lang.IllegalStateException" || res.NextBatch != 2 || res.Reason != recovery.ReasonOffsetsOutOfRange || res.FailedFile != "offsets/1" ||
		!strings.HasPrefix(res.ErrorText(), "Cannot fetch offset 5 (GroupId: ") {
		t.Fatalf("result %+v", res)
	}
	if w := res.Warnings[len(res.Warnings)-1]; !strings.HasPrefix(w, "Kafka, re-run of batch 2: "+topic+"-0: the re-run reads offsets [5, 15) but the log starts at 8") ||
		!strings.Contains(w, ". The restart fails: java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: ") ||
		!strings.Contains(w, "With failOnDataLoss=false: Spark logs the message as a warning, skips offsets [5, 8)") {
		t.Fatalf("warning %q", w)
	}
	if v := res.Verdict(); !strings.HasPrefix(v, "Restart will FAIL: java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: "+topic+"-0).") {
		t.Fatalf("verdict %q", v)
	}

	// failOnDataLoss=false: a warning, the restart goes on.
	res = m.planWith(st, true)
	if res.Failed() || !strings.Contains(res.Warnings[len(res.Warnings)-1], "Spark logs a warning (failOnDataLoss=false): Cannot fetch offset 5") {
		t.Fatalf("lenient %+v", res)
	}

	// The topic is gone: the batch after the re-run cannot list it, and it fails whatever
	// failOnDataLoss says.
	tb.DeleteTopic(topic)
	st = tb.read(r.Topics()...)
	gone := r.Check(st, false)
	if len(gone) != 1 || gone[0].Code != recovery.ReasonTopicMissing || gone[0].Batch != 3 || gone[0].Rerun || !gone[0].Fails {
		t.Fatalf("topic missing %+v", gone)
	}
	if class, msg := gone[0].Exception(); class != "org.apache.kafka.common.errors.UnknownTopicOrPartitionException" || msg != "Topic "+topic+" not found." {
		t.Fatalf("exception %q %q", class, msg)
	}
}
