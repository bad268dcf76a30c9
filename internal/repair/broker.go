package repair

import (
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// counter counts the Kafka records between two offsets of a partition: their difference, or,
// with the broker's state, the offsets of the range that still exist on the broker (inside its
// log start and end): what a restart really reads again, or never reads. A partition of a topic
// the state was not read for is counted by difference.
type counter struct {
	st *recovery.BrokerState
}

func newCounter(st *recovery.BrokerState) counter { return counter{st: st} }

// records counts [from, until) of tp.
func (c counter) records(tp logformat.TopicPartition, from, until int64) int64 {
	if until <= from {
		return 0
	}
	if c.st == nil || c.st.Topic(tp.Topic) == nil && !c.st.IsMissing(tp.Topic) {
		return until - from
	}
	p, ok := c.st.Lookup(tp.Topic, tp.Partition)
	if !ok {
		return 0 // the partition is gone: nothing can be read
	}
	return max(0, min(until, p.End)-max(from, p.Start))
}

// rerun counts one partition of the planner's re-run; ok is false when its size is unknown. A
// partition new since the start offsets is read from its earliest offset, which the broker
// knows.
func (c counter) rerun(k recovery.PartitionRange) (int64, bool) {
	tp := logformat.TopicPartition{Topic: k.Topic, Partition: k.Partition}
	switch {
	case k.End == nil:
		return 0, false
	case k.Start != nil && k.Records != nil:
		return c.records(tp, *k.Start, *k.End), true
	case k.Start == nil && k.Note == "new partition: read from its earliest offset" && c.st != nil:
		if p, ok := c.st.Lookup(tp.Topic, tp.Partition); ok {
			return c.records(tp, p.Start, *k.End), true
		}
	}
	if k.Records != nil {
		return *k.Records, true
	}
	return 0, false
}
