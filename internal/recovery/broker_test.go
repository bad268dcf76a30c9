package recovery_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// brokerCheckpoint writes offsets 0..2 and commits 0..1 of one Kafka source: batch 2 re-runs
// (offsets/1, offsets/2] = t-0 [5, 15).
func brokerCheckpoint(t *testing.T) *checkpoint.Checkpoint {
	t.Helper()
	ctx := context.Background()
	s := storage.NewMem()
	md := `{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`
	for id, off := range []string{`{"t":{"0":0}}`, `{"t":{"0":5}}`, `{"t":{"0":15}}`} {
		if err := s.WriteFile(ctx, "offsets/"+string(rune('0'+id)), []byte("v1\n"+md+"\n"+off)); err != nil {
			t.Fatal(err)
		}
		if id < 2 {
			if err := s.WriteFile(ctx, "commits/"+string(rune('0'+id)), []byte("v1\n{\"nextBatchWatermarkMs\":0}")); err != nil {
				t.Fatal(err)
			}
		}
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// Given the broker's offsets as plain data, the planner decides what the restart meets there:
// retention below the re-run's start fails it with a broker reason naming the file whose offsets
// the broker no longer serves; failOnDataLoss=false turns it into a warning.
func TestPlanWithBroker(t *testing.T) {
	ctx := context.Background()
	cp := brokerCheckpoint(t)
	st := &recovery.BrokerState{Topics: []recovery.BrokerTopic{{Topic: "t", Partitions: []recovery.BrokerPartition{{Partition: 0, Start: 8, End: 30}}}}}

	alone, err := recovery.Plan(ctx, cp, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if alone.Failed() || alone.Broker != nil {
		t.Fatalf("checkpoint alone: %s, broker %+v", alone.Outcome, alone.Broker)
	}

	res, err := recovery.Plan(ctx, cp, recovery.Options{Broker: st})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed() || res.Reason != recovery.ReasonOffsetsOutOfRange || res.FailedFile != "offsets/1" || res.NextBatch != 2 ||
		res.Exception != dataloss.IllegalState || !strings.HasPrefix(res.ErrorText(), "Cannot fetch offset 5 (GroupId: "+dataloss.ExecutorGroupID) {
		t.Fatalf("with broker: %+v", res)
	}
	if !slices.Contains(recovery.BrokerReasons, res.Reason) {
		t.Errorf("reason %q is not one of BrokerReasons", res.Reason)
	}
	if b := res.Broker; b == nil || b.CheckpointOutcome != recovery.OutcomeResume || len(b.Issues) != 1 || !b.Issues[0].Executor || !b.Issues[0].Rerun {
		t.Fatalf("verdict %+v", res.Broker)
	}

	lenient, err := recovery.Plan(ctx, cp, recovery.Options{Broker: st, FailOnDataLossFalse: true})
	if err != nil {
		t.Fatal(err)
	}
	if lenient.Failed() || !strings.Contains(lenient.Warnings[len(lenient.Warnings)-1], "Spark logs a warning (failOnDataLoss=false): Cannot fetch offset 5") {
		t.Fatalf("failOnDataLoss=false: %s %q", lenient.Outcome, lenient.Warnings)
	}

	// The topic is gone: the batch after the re-run cannot list it, whatever failOnDataLoss says.
	gone, err := recovery.Plan(ctx, cp, recovery.Options{Broker: &recovery.BrokerState{Missing: []string{"t"}}, FailOnDataLossFalse: true})
	if err != nil {
		t.Fatal(err)
	}
	if !gone.Failed() || gone.Reason != recovery.ReasonTopicMissing || gone.Exception != dataloss.UnknownTopic || gone.ErrorText() != "Topic t not found." {
		t.Fatalf("topic missing: %s %q %q %q", gone.Outcome, gone.Reason, gone.Exception, gone.ErrorText())
	}
}

// The topics a restart can read come from the checkpoint alone.
func TestCheckpointTopics(t *testing.T) {
	topics, err := recovery.CheckpointTopics(context.Background(), brokerCheckpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(topics, []string{"t"}) {
		t.Fatalf("topics %v", topics)
	}
}
