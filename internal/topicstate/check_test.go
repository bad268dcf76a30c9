package topicstate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

func codes(issues []recovery.BrokerIssue) []string {
	var out []string
	for _, is := range issues {
		out = append(out, is.Code+" "+sparkTP(is.Topic, is.Partition))
	}
	return out
}

func TestReadOffsets(t *testing.T) {
	tb := newBroker(t)
	topic, missing := uniqueTopic(t, "a"), uniqueTopic(t, "nope")
	tb.CreateTopic(topic, 3)
	tb.produce(topic, 0, 10, nil)
	tb.produce(topic, 2, 4, nil)
	tb.DeleteRecords(topic, 0, 6)
	st := tb.read(topic, missing, topic)
	if len(st.Topics) != 1 || st.Topics[0].Topic != topic || !slices.Equal(st.Missing, []string{missing}) || !st.IsMissing(missing) {
		t.Fatalf("state %+v", st)
	}
	want := []recovery.BrokerPartition{{Partition: 0, Start: 6, End: 10}, {Partition: 1, Start: 0, End: 0}, {Partition: 2, Start: 0, End: 4}}
	if !slices.Equal(st.Topics[0].Partitions, want) {
		t.Fatalf("partitions %+v, want %+v", st.Topics[0].Partitions, want)
	}
	if p, ok := st.Lookup(topic, 0); !ok || p.Records() != 4 {
		t.Fatalf("lookup %+v %v", p, ok)
	}
	if _, ok := st.Lookup(topic, 3); ok {
		t.Fatal("partition 3 should not exist")
	}
	if st.Topics[0].ID == "" || st.ReadAt.IsZero() {
		t.Fatalf("topic id %q, read at %v", st.Topics[0].ID, st.ReadAt)
	}
	// The state is plain data: it round-trips through JSON.
	b, err := json.Marshal(st)
	if err != nil || !strings.Contains(string(b), `"start":6,"end":10`) {
		t.Fatalf("json %s %v", b, err)
	}
}

// Retention (here DeleteRecords) removed offsets the checkpoint has not read.
func TestCheckOffsetsOutOfRange(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "in")
	tb.CreateTopic(topic, 2)
	tb.produce(topic, 0, 20, nil)
	tb.produce(topic, 1, 20, nil)
	tb.DeleteRecords(topic, 0, 12) // the checkpoint is at 5: 7 records gone
	tb.DeleteRecords(topic, 1, 8)  // the checkpoint is at 8: nothing lost
	st := tb.read(topic)
	ck := offsets(topic+":0=5", topic+":1=8")

	issues := recovery.CheckBroker(ck, st, true)
	if len(issues) != 1 {
		t.Fatalf("issues %v", codes(issues))
	}
	is := issues[0]
	tp := topic + "-0"
	want := recovery.BrokerIssue{
		Code: recovery.ReasonOffsetsOutOfRange, Topic: topic, Partition: 0, CheckpointOffset: 5, LogStart: 12, LogEnd: 20,
		Records: 7, DataLoss: true, Fails: true, Class: dataloss.IllegalState, Executor: true,
		Message:             tp + ": the checkpoint is at offset 5 but the log starts at 12: 7 records were deleted (retention or DeleteRecords) before the query read them",
		SparkMessage:        "Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + tp + "). " + dataloss.InstructionTrue,
		FailOnDataLossFalse: "Spark logs the message as a warning, skips offsets [5, 12) (7 records) and reads on from offset 12.",
	}
	if is != want {
		t.Fatalf("issue\n%+v\nwant\n%+v", is, want)
	}
	// Spark's full text, byte for byte.
	if !strings.HasPrefix(is.SparkMessage, "Cannot fetch offset 5 (GroupId: ") ||
		!strings.Contains(is.SparkMessage, "\nSome data may have been lost because they are not available in Kafka any more; either the\n data was aged out by Kafka") ||
		!strings.HasSuffix(is.SparkMessage, "set the\n source option \"failOnDataLoss\" to \"false\".\n    ") {
		t.Fatalf("spark message %q", is.SparkMessage)
	}

	// failOnDataLoss=false: the restart goes on, Spark only warns.
	lenient := recovery.CheckBroker(ck, st, false)
	if len(lenient) != 1 || lenient[0].Fails || !lenient[0].DataLoss || lenient[0].Records != 7 ||
		!strings.HasSuffix(lenient[0].SparkMessage, dataloss.InstructionFalse) {
		t.Fatalf("failOnDataLoss=false: %+v", lenient)
	}
}

// The topic was deleted and recreated with fewer records (and fewer partitions).
func TestCheckTopicRecreated(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "in")
	tb.CreateTopic(topic, 3)
	for p := range int32(3) {
		tb.produce(topic, p, 10, nil)
	}
	ck := offsets(topic+":0=10", topic+":1=6", topic+":2=10")
	if issues := recovery.CheckBroker(ck, tb.read(topic), true); len(issues) != 0 {
		t.Fatalf("before: %v", codes(issues))
	}
	tb.DeleteTopic(topic)
	tb.CreateTopic(topic, 2)
	tb.produce(topic, 0, 3, nil) // 10 > 3: the offset went back
	tb.produce(topic, 1, 8, nil) // 6 <= 8: indistinguishable from progress, not flagged
	st := tb.read(topic)
	issues := recovery.CheckBroker(ck, st, true)
	if got := codes(issues); !slices.Equal(got, []string{recovery.ReasonPartitionsRemoved + " " + topic + "-2", recovery.ReasonTopicRecreated + " " + topic + "-0"}) {
		t.Fatalf("issues %v", got)
	}
	rm, rc := issues[0], issues[1]
	if rm.CheckpointOffset != 10 || rm.LogStart != recovery.Unknown || rm.Records != recovery.Unknown || !rm.Fails ||
		rm.SparkMessage != "Set("+topic+"-2) are gone. Some data may have been missed.. "+dataloss.InstructionTrue {
		t.Fatalf("partitions-removed %+v", rm)
	}
	if rc.CheckpointOffset != 10 || rc.LogStart != 0 || rc.LogEnd != 3 || rc.Records != 3 || !rc.DataLoss || !rc.Fails {
		t.Fatalf("topic-recreated %+v", rc)
	}
	if want := "Partition " + topic + "-0's offset was changed from 10 to 3, some data may have been missed. " + dataloss.InstructionTrue; rc.SparkMessage != want {
		t.Fatalf("spark message\n%q\nwant\n%q", rc.SparkMessage, want)
	}
	if !strings.Contains(rc.FailOnDataLossFalse, "continues from offset 3: the 3 records now in [0, 3) are never read") {
		t.Fatalf("failOnDataLoss=false: %q", rc.FailOnDataLossFalse)
	}
}

// Partitions were added; one of them lost its first records before the query saw it.
func TestCheckPartitionsAdded(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "in")
	tb.CreateTopic(topic, 1)
	tb.produce(topic, 0, 5, nil)
	ck := offsets(topic + ":0=5")
	tb.AddPartitions(topic, 2) // partitions 1 and 2
	tb.produce(topic, 1, 4, nil)
	tb.produce(topic, 2, 9, nil)
	tb.DeleteRecords(topic, 2, 3)
	st := tb.read(topic)
	issues := recovery.CheckBroker(ck, st, true)
	if got := codes(issues); !slices.Equal(got, []string{recovery.ReasonPartitionsAdded + " " + topic + "-1", recovery.ReasonPartitionsAdded + " " + topic + "-2"}) {
		t.Fatalf("issues %v", got)
	}
	atZero, notZero := issues[0], issues[1]
	if atZero.DataLoss || atZero.Fails || atZero.Records != 0 || atZero.SparkMessage != "" || atZero.CheckpointOffset != recovery.Unknown || atZero.LogEnd != 4 {
		t.Fatalf("partition starting at 0: %+v", atZero)
	}
	if want := "Added partition " + topic + "-2 starts from 3 instead of 0. Some data may have been missed. " + dataloss.InstructionTrue; notZero.SparkMessage != want {
		t.Fatalf("spark message\n%q\nwant\n%q", notZero.SparkMessage, want)
	}
	if !notZero.DataLoss || !notZero.Fails || notZero.Records != 3 || notZero.LogStart != 3 || notZero.LogEnd != 9 {
		t.Fatalf("partition starting at 3: %+v", notZero)
	}
	if !strings.Contains(notZero.FailOnDataLossFalse, "reads the partition from offset 3") {
		t.Fatalf("failOnDataLoss=false: %q", notZero.FailOnDataLossFalse)
	}
}

// The topic was removed.
func TestCheckTopicMissing(t *testing.T) {
	tb := newBroker(t)
	topic, other := uniqueTopic(t, "gone"), uniqueTopic(t, "kept")
	tb.CreateTopic(topic, 2)
	tb.CreateTopic(other, 1)
	tb.produce(other, 0, 2, nil)
	tb.DeleteTopic(topic)
	st := tb.read(topic, other)
	if !st.IsMissing(topic) || st.Topic(topic) != nil {
		t.Fatalf("state %+v", st)
	}
	ck := offsets(topic+":0=4", topic+":1=2", other+":0=2")
	for _, fail := range []bool{true, false} {
		issues := recovery.CheckBroker(ck, st, fail)
		if len(issues) != 1 {
			t.Fatalf("issues %v", codes(issues))
		}
		is := issues[0]
		if is.Code != recovery.ReasonTopicMissing || is.Topic != topic || is.Partition != -1 || is.Records != recovery.Unknown || !is.Fails || !is.DataLoss {
			t.Fatalf("issue %+v", is)
		}
		if want := "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic " + topic + " not found."; is.SparkMessage != want {
			t.Fatalf("spark message %q", is.SparkMessage)
		}
		if !strings.Contains(is.FailOnDataLossFalse, "Set("+topic+"-0, "+topic+"-1) are gone") {
			t.Fatalf("failOnDataLoss=false: %q", is.FailOnDataLossFalse)
		}
	}
}

// Issues come in the order Spark meets them; offline state (no broker) exercises every code.
func TestCheckOrder(t *testing.T) {
	st := &recovery.BrokerState{
		Topics: []recovery.BrokerTopic{
			{Topic: "a", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 10, End: 20}, {Partition: 1, Start: 0, End: 5}, {Partition: 2, Start: 7, End: 9}}},
			{Topic: "b", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 0, End: 3}}},
		},
		Missing: []string{"c"},
	}
	ck := offsets("a:0=4", "a:1=9", "a:3=1", "b:0=3", "c:0=1")
	got := codes(recovery.CheckBroker(ck, st, true))
	want := []string{
		"topic-missing c--1",
		"partitions-added a-2",
		"partitions-removed a-3",
		"topic-recreated a-1",
		"offsets-out-of-range a-0",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// Nothing to say when the checkpoint is within the log.
	if issues := recovery.CheckBroker(offsets("a:0=10", "a:1=5", "a:2=8", "b:0=0"), st, true); len(issues) != 0 {
		t.Fatalf("issues %v", codes(issues))
	}
}

// A topic the state was not read for is not reported missing.
func TestCheckUnreadTopic(t *testing.T) {
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{{Topic: "a", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 0, End: 5}}}}}
	if issues := recovery.CheckBroker(offsets("a:0=5", "b:0=1"), st, true); len(issues) != 0 {
		t.Fatalf("issues %v", codes(issues))
	}
	if issues := recovery.CheckBroker(offsets("a:0=5"), nil, true); len(issues) != 0 {
		t.Fatalf("nil state: %v", codes(issues))
	}
}
