// Listing offsets from the cluster: initial, earliest and latest offsets, with Spark's retries.

package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

type offsetSpec int

const (
	specEarliest offsetSpec = iota
	specLatest
)

// listOffsets lists the earliest or latest offset of tps, asking each partition's leader
// directly. Latest is the last stable offset under read_committed, as Spark's admin listOffsets
// with the consumer's isolation level.
func (s *Source) listOffsets(ctx context.Context, tps map[logformat.TopicPartition]bool, spec offsetSpec) (map[logformat.TopicPartition]int64, error) {
	out := make(map[logformat.TopicPartition]int64, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	var topics []string
	for tp := range tps {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	slices.Sort(topics)
	meta, err := s.describe(ctx, topics)
	if err != nil {
		return nil, err
	}
	ts := int64(-1)
	if spec == specEarliest {
		ts = -2
	}
	byLeader := map[int32]*kmsg.ListOffsetsRequest{}
	for _, tp := range setKeys(tps) {
		m, ok := meta[tp.Topic]
		leader, pok := m.leaders[tp.Partition]
		if !ok || m.err != nil || !pok {
			return nil, fmt.Errorf("kafka: list offsets of %s: %w", sparkTP(tp), kerr.UnknownTopicOrPartition)
		}
		req := byLeader[leader]
		if req == nil {
			req = kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			if s.cfg.readCommitted {
				req.IsolationLevel = 1
			}
			byLeader[leader] = req
		}
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.Timestamp = ts
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	for leader, req := range byLeader {
		resp, err := req.RequestWith(ctx, s.cl.Broker(int(leader)))
		if err != nil {
			return nil, fmt.Errorf("kafka: list offsets: %w", err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				tp := logformat.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("kafka: list offsets of %s: %w", sparkTP(tp), err)
				}
				out[tp] = p.Offset
			}
		}
	}
	for tp := range tps {
		if _, ok := out[tp]; !ok {
			return nil, fmt.Errorf("kafka: list offsets: no answer for %s", sparkTP(tp))
		}
	}
	return out, nil
}

// withRetries is KafkaOffsetReaderAdmin.withRetries: fetchOffset.numRetries attempts with
// fetchOffset.retryIntervalMs between them. Assertion failures are final at once (Spark retries
// them too, to the same end).
func (s *Source) withRetries(ctx context.Context, body func() (map[logformat.TopicPartition]int64, error)) (map[logformat.TopicPartition]int64, error) {
	var last error
	for attempt := 1; attempt <= max(1, s.o.FetchOffsetNumRetries); attempt++ {
		r, err := body()
		if err == nil {
			return r, nil
		}
		var ae *AssertionError
		if errors.As(err, &ae) || ctx.Err() != nil {
			return nil, err
		}
		last = err
		if attempt < s.o.FetchOffsetNumRetries {
			if err := sleepCtx(ctx, s.o.FetchOffsetRetryInterval); err != nil {
				return nil, err
			}
		}
	}
	return nil, last
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// InitialOffsets resolves startingOffsets against the cluster: what Spark writes to
// sources/<i>/0 the first time the query needs a start (getOrCreateInitialPartitionOffsets).
// Specific offsets must name every assigned partition (Spark's assertion); -2 and -1 resolve to
// the earliest and latest offsets, other offsets are kept as given, even when out of range (the
// first batch then reports data loss, as in Spark).
func (s *Source) InitialOffsets(ctx context.Context) (logformat.KafkaOffsets, error) {
	m, err := s.withRetries(ctx, func() (map[logformat.TopicPartition]int64, error) {
		tps, err := s.assigned(ctx)
		if err != nil {
			return nil, err
		}
		switch s.o.StartingOffsets.Kind {
		case StartEarliest:
			return s.listOffsets(ctx, tps, specEarliest)
		case StartLatest:
			return s.listOffsets(ctx, tps, specLatest)
		}
		spec := s.o.StartingOffsets.Specific
		if !sameKeys(tps, spec) {
			return nil, &AssertionError{Message: "If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n" +
				"Use -1 for latest, -2 for earliest, if you don't care.\n" +
				"Specified: " + dataloss.PartitionSet(keysOf(spec)) + " Assigned: " + dataloss.PartitionSet(setKeys(tps))}
		}
		var early, late map[logformat.TopicPartition]bool
		for tp, off := range spec {
			switch off {
			case OffsetEarliest:
				early = addTP(early, tp)
			case OffsetLatest:
				late = addTP(late, tp)
			}
		}
		out := make(map[logformat.TopicPartition]int64, len(spec))
		for tp, off := range spec {
			out[tp] = off
		}
		for _, r := range []struct {
			tps  map[logformat.TopicPartition]bool
			spec offsetSpec
		}{{early, specEarliest}, {late, specLatest}} {
			got, err := s.listOffsets(ctx, r.tps, r.spec)
			if err != nil {
				return nil, err
			}
			for tp, off := range got {
				out[tp] = off
			}
		}
		return out, nil
	})
	if err != nil {
		return logformat.KafkaOffsets{}, err
	}
	return logformat.NewKafkaOffsets(m), nil
}

func addTP(m map[logformat.TopicPartition]bool, tp logformat.TopicPartition) map[logformat.TopicPartition]bool {
	if m == nil {
		m = map[logformat.TopicPartition]bool{}
	}
	m[tp] = true
	return m
}

func sameKeys(a map[logformat.TopicPartition]bool, b map[logformat.TopicPartition]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for tp := range b {
		if !a[tp] {
			return false
		}
	}
	return true
}

func setKeys(m map[logformat.TopicPartition]bool) []logformat.TopicPartition {
	out := make([]logformat.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	return sortedTPs(out)
}

// fetchLatest is fetchLatestOffsets(Some(known)): the latest offset of every assigned partition,
// listed again (up to fetchOffset.numRetries times) while one is below a known offset, which
// Kafka can briefly report after a leader change (KAFKA-7703).
func (s *Source) fetchLatest(ctx context.Context, known map[logformat.TopicPartition]int64) (map[logformat.TopicPartition]int64, []string, error) {
	var warnings []string
	latest, err := s.withRetries(ctx, func() (map[logformat.TopicPartition]int64, error) {
		tps, err := s.assigned(ctx)
		if err != nil {
			return nil, err
		}
		var got map[logformat.TopicPartition]int64
		for attempt := 1; ; attempt++ {
			got, err = s.listOffsets(ctx, tps, specLatest)
			if err != nil {
				return nil, err
			}
			var bad []string
			for _, tp := range keysOf(got) {
				if k, ok := known[tp]; ok && k > got[tp] {
					bad = append(bad, fmt.Sprintf("(%s,%d,%d)", sparkTP(tp), k, got[tp]))
				}
			}
			if len(bad) == 0 || attempt >= s.o.FetchOffsetNumRetries {
				break
			}
			warnings = append(warnings, "Found incorrect offsets in some partitions (partition, previous offset, fetched offset): List("+strings.Join(bad, ", ")+")",
				"Retrying to fetch latest offsets because of incorrect offsets")
			if err := sleepCtx(ctx, s.o.FetchOffsetRetryInterval); err != nil {
				return nil, err
			}
		}
		return got, nil
	})
	return latest, warnings, err
}

// fetchEarliestOf is fetchEarliestOffsets(newPartitions): the earliest offsets of those of tps
// that still exist; vanished ones are simply absent from the result.
func (s *Source) fetchEarliestOf(ctx context.Context, tps []logformat.TopicPartition) (map[logformat.TopicPartition]int64, error) {
	if len(tps) == 0 {
		return map[logformat.TopicPartition]int64{}, nil
	}
	return s.withRetries(ctx, func() (map[logformat.TopicPartition]int64, error) {
		cur, err := s.assigned(ctx)
		if err != nil {
			return nil, err
		}
		want := map[logformat.TopicPartition]bool{}
		for _, tp := range tps {
			if cur[tp] {
				want[tp] = true
			}
		}
		return s.listOffsets(ctx, want, specEarliest)
	})
}

// Latest is Spark's latestOffset(start, limit): the end offsets of the next batch. It lists the
// latest offset of every assigned partition (new partitions included) and applies limit:
//   - AllAvailable: everything.
//   - MinRows: while fewer than MinRows records are new (a new partition counts from 0) and
//     MaxTriggerDelay has not passed since the last batch that was allowed, it returns start,
//     i.e. no new batch. The first call always allows a batch, as in Spark.
//   - MaxRows: Spark's proportional split (see rateLimit); new partitions start at their
//     earliest offset.
//
// Latest never fails for data loss: Spark reports it when planning the batch, after offsets/N
// is written, so do Ranges and Read. An end with no partitions is Spark's null: no batch.
// Warnings are what Spark would log.
func (s *Source) Latest(ctx context.Context, start logformat.KafkaOffsets, limit ReadLimit) (logformat.KafkaOffsets, []string, error) {
	end, _, warnings, err := s.LatestAvailable(ctx, start, limit)
	return end, warnings, err
}

// LatestAvailable is Latest that also returns the latest offsets it listed before applying the
// limit (Spark's reportLatestOffset, progress "latestOffset"): the snapshot under
// Trigger.AvailableNow, and also when MinRows delays the batch (end is then start).
func (s *Source) LatestAvailable(ctx context.Context, start logformat.KafkaOffsets, limit ReadLimit) (end, available logformat.KafkaOffsets, warnings []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := start.Map()
	var latest map[logformat.TopicPartition]int64
	if s.availableNow && s.availableNowEnd != nil {
		latest = s.availableNowEnd
	} else {
		latest, warnings, err = s.fetchLatest(ctx, from)
		if err != nil {
			return logformat.KafkaOffsets{}, logformat.KafkaOffsets{}, warnings, err
		}
		if s.availableNow {
			s.availableNowEnd = latest
		}
	}
	available = logformat.NewKafkaOffsets(latest)
	if limit.AllAvailable {
		return available, available, warnings, nil
	}
	if limit.MinRows > 0 && s.delayBatch(limit.MinRows, latest, from, limit.MaxTriggerDelay) {
		return logformat.NewKafkaOffsets(from), available, warnings, nil
	}
	if limit.MaxRows > 0 {
		var newTPs []logformat.TopicPartition
		for tp := range latest {
			if _, ok := from[tp]; !ok {
				newTPs = append(newTPs, tp)
			}
		}
		fromNew, err := s.fetchEarliestOf(ctx, newTPs)
		if err != nil {
			return logformat.KafkaOffsets{}, logformat.KafkaOffsets{}, warnings, err
		}
		return logformat.NewKafkaOffsets(rateLimit(limit.MaxRows, from, latest, fromNew)), available, warnings, nil
	}
	return available, available, warnings, nil
}
