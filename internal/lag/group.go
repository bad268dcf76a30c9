package lag

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// GroupMirror is the outcome of mirroring the committed offsets into a consumer group.
type GroupMirror struct {
	// Group is the consumer group.
	Group string `json:"group"`
	// Partitions is how many partitions the group holds offsets for (from ckpt).
	Partitions int `json:"partitions"`
	// Committed is how many offsets this refresh wrote: 0 when none changed.
	Committed int `json:"committed"`
	// Error is why the commit failed ("" when it did not): an active group, no authorization.
	Error string `json:"error,omitempty"`
}

// MirrorMetadata is the metadata string of every offset ckpt commits, so that whoever finds
// the group learns where it comes from and that Spark ignores it.
const MirrorMetadata = "ckpt lag --commit-group: mirrored from a Spark checkpoint; Spark never reads this group"

// GroupOffsets are the offsets a group mirror holds for the positions: every partition with a
// committed offset. A partition several sources or checkpoints read gets the lowest offset, so
// the group never claims more progress than the slowest reader made.
func GroupOffsets(positions []*Position) kadm.Offsets {
	lowest := map[logformat.TopicPartition]int64{}
	for _, p := range positions {
		if p == nil {
			continue
		}
		for _, s := range p.Sources {
			if s.Committed == nil {
				continue
			}
			for tp, off := range s.Committed.Map() {
				if prev, ok := lowest[tp]; !ok || off < prev {
					lowest[tp] = off
				}
			}
		}
	}
	var os kadm.Offsets
	for tp, off := range lowest {
		os.Add(kadm.Offset{Topic: tp.Topic, Partition: tp.Partition, At: off, LeaderEpoch: -1, Metadata: MirrorMetadata})
	}
	return os
}

// Mirror commits offsets into group with the admin API (a "simple" commit: no member, no
// generation), which Kafka accepts only while the group has no active members. Spark never
// reads the group back: it is for kafka-consumer-groups, Burrow, kafka-lag-exporter and the
// like. It writes to the broker; nothing else in ckpt's lag does.
func Mirror(ctx context.Context, cl *kgo.Client, group string, os kadm.Offsets) error {
	if len(os) == 0 {
		return nil
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err != nil {
		return fmt.Errorf("kafka: commit offsets to group %s: %w", group, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("kafka: commit offsets to group %s: %w", group, err)
	}
	return nil
}

// mirror commits the offsets that changed since the last successful commit.
func (c *Collector) mirror(ctx context.Context, positions []*Position) *GroupMirror {
	all := GroupOffsets(positions)
	m := &GroupMirror{Group: c.CommitGroup}
	flat := map[string]int64{}
	var changed kadm.Offsets
	all.Each(func(o kadm.Offset) {
		k := o.Topic + "\x00" + strconv.Itoa(int(o.Partition))
		flat[k] = o.At
		if prev, ok := c.mirrored[k]; !ok || prev != o.At {
			changed.Add(o)
		}
	})
	m.Partitions = len(flat)
	if err := Mirror(ctx, c.Client, c.CommitGroup, changed); err != nil {
		m.Error = err.Error()
		return m
	}
	changed.Each(func(kadm.Offset) { m.Committed++ })
	c.mirrored = maps.Clone(flat)
	return m
}
