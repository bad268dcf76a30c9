package doctor

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/shell"
)

// Broker is what doctor compares the checkpoint with on the Kafka broker (Options.Broker, from
// `ckpt doctor --bootstrap-server`). The broker was read by the caller; doctor does no I/O here.
type Broker struct {
	// State is the broker's log start and end offsets for the checkpoint's topics: topicstate.Read
	// of recovery.CheckpointTopics. Topics it did not read are not checked.
	State *recovery.BrokerState
	// FailOnDataLossFalse models the Kafka source option failOnDataLoss=false. The default
	// (false) is Spark's default, failOnDataLoss=true.
	FailOnDataLossFalse bool
	// CommandArgs are added to the ckpt commands the findings print so that they reach the same
	// broker, e.g. ["--bootstrap-server", "kafka:9092"] (cli.BrokerFlags.CommandArgs: never
	// secrets).
	CommandArgs []string
}

// broker reports, with one finding per issue, what the restart meets on the broker. The
// planner decided it (recovery.Plan with Options.Broker: the recorded range of a batch that
// re-runs and then its end, or the latest committed end offsets, against the broker's offsets),
// and its prediction already says what the broker makes of the restart, as `ckpt replay
// --bootstrap-server` does, so doctor and replay agree.
func (r *runner) broker() {
	b := r.opts.Broker
	if b == nil || r.res.Broker == nil {
		return
	}
	for _, is := range r.res.Broker.Issues {
		r.add(r.brokerFinding(is, b))
	}
}

// brokerFinding turns one issue into a finding. Severity: error when records are, or may be,
// lost or the restart fails (DataLoss or Fails); info otherwise, which is only a partition added
// at offset 0 (Spark reads it from the start: expected behaviour worth knowing).
func (r *runner) brokerFinding(is recovery.RestartIssue, b *Broker) Finding {
	sev := Info
	if is.DataLoss || is.Fails {
		sev = Error
	}
	path := "kafka:" + is.Topic
	if is.Partition >= 0 {
		path = fmt.Sprintf("kafka:%s-%d", is.Topic, is.Partition)
	}
	msg := is.Where() + ": " + is.Message
	if is.DataLoss && is.Code != CodeOffsetsOutOfRange { // its message counts already
		if is.Records == recovery.Unknown {
			msg += " (records affected: unknown)"
		} else {
			msg += fmt.Sprintf(" (records affected: %d)", is.Records)
		}
	}
	c, _ := Lookup(is.Code)
	expl := firstParagraph(c.Explanation)
	switch {
	case !is.FailOnDataLoss:
		expl += " With failOnDataLoss=false, as given: " + is.FailOnDataLossFalse
	case is.Code == CodeTopicMissing:
		expl += " failOnDataLoss=false does not help: " + is.FailOnDataLossFalse
	case is.DataLoss || is.Fails:
		expl += " With failOnDataLoss=false instead: " + is.FailOnDataLossFalse
	}
	f := Finding{
		Code:        is.Code,
		Severity:    sev,
		Batch:       ptr(is.Batch),
		Path:        path,
		Files:       []string{is.File},
		Message:     msg,
		Explanation: expl,
		SparkError:  brokerSparkError(is),
		Fix:         brokerFix(is),
		Kafka:       &is,
	}
	if sev == Error && is.Code != CodeTopicMissing {
		args := make([]string, 0, len(b.CommandArgs)+1)
		for _, a := range b.CommandArgs {
			args = append(args, shell.Quote(a))
		}
		f.Commands = []string{r.cmd("replay", append(args, "--fail-on-data-loss=false")...)}
	}
	return f
}

// brokerSparkError is what Spark prints: the exception when the issue fails the restart, else
// the WARN line it logs (KafkaMicroBatchStream on the driver, KafkaDataConsumer on the
// executors); nil when Spark says nothing.
func brokerSparkError(is recovery.RestartIssue) *string {
	if is.SparkMessage == "" {
		return nil
	}
	if is.Fails {
		class, msg := is.Exception()
		return ptr(class + ": " + msg)
	}
	logger := "KafkaMicroBatchStream"
	if is.Executor {
		logger = "KafkaDataConsumer"
	}
	return ptr("WARN " + logger + ": " + is.SparkMessage)
}

// brokerFix says what to do about one issue; the codes' pages say more.
func brokerFix(is recovery.RestartIssue) string {
	switch is.Code {
	case CodeOffsetsOutOfRange:
		return "The records are gone from Kafka. Re-ingest them from their origin, or accept the loss: restart once with the source option " +
			"failOnDataLoss=false (the command below shows that restart), then set it back to true. Keep the topic's retention above the longest time " +
			"the query can be down or behind."
	case CodeTopicRecreated:
		return "If the topic was recreated on purpose, start the query on a new checkpoint (startingOffsets earliest reads the new topic from its start), " +
			"or restart once with failOnDataLoss=false and accept that the records the new log holds now are skipped (the command below shows that restart)."
	case CodePartitionsRemoved:
		return "The topic was recreated with fewer partitions. Start the query on a new checkpoint, or restart once with failOnDataLoss=false and accept " +
			"the loss (the command below shows that restart)."
	case CodePartitionsAdded:
		if !is.DataLoss {
			return "Nothing to do: the query reads the new partition from offset 0."
		}
		return fmt.Sprintf("Offsets [0, %d) of the new partition are gone from Kafka: re-ingest them, or restart once with failOnDataLoss=false to accept "+
			"the loss. Restart queries soon after adding partitions, and keep retention above that delay.", is.LogStart)
	case CodeTopicMissing:
		return "Check that --bootstrap-server names the query's cluster. Recreate the topic if it was deleted by mistake, or start the query on a new " +
			"checkpoint if it reads other topics now."
	}
	return ""
}
