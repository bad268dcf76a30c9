package kafka

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Clock is the source's notion of now, for minOffsetsPerTrigger/maxTriggerDelay. Tests inject one.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// ReadLimit is Spark's ReadLimit for one call of Latest. The zero value has no cap and no
// minimum: everything available.
type ReadLimit struct {
	// MaxRows caps the records of the batch (maxOffsetsPerTrigger). Default (0): no cap.
	MaxRows int64
	// MinRows delays the batch until this many records are available (minOffsetsPerTrigger).
	// Default (0): no minimum.
	MinRows int64
	// MaxTriggerDelay ends a MinRows delay this long after the previous batch. Used only with
	// MinRows; SourceOptions.DefaultReadLimit fills in 15m.
	MaxTriggerDelay time.Duration
	// AllAvailable ignores the other limits (Trigger.Once, and Spark's ReadAllAvailable).
	AllAvailable bool
}

// AssertionError is Spark's java.lang.AssertionError, e.g. for startingOffsets JSON that does not
// list every assigned partition.
type AssertionError struct {
	Message string // the assertion's message, without "assertion failed: "
}

func (e *AssertionError) Error() string { return "assertion failed: " + e.Message }

// Source is a Kafka source with Spark 3.5's micro-batch semantics (KafkaMicroBatchStream over
// KafkaOffsetReaderAdmin). Its methods are safe for concurrent use, though an engine calls them
// from one goroutine in order: InitialOffsets once, then per batch Latest, then Read.
type Source struct {
	o       *SourceOptions
	cfg     *clientConfig
	clock   Clock
	cl      *kgo.Client
	groupID string

	mu                sync.Mutex // serialises offset listing state
	lastTriggerMillis int64      // Spark's lastTriggerMillis: 0 until a batch was allowed
	availableNow      bool
	availableNowEnd   map[logformat.TopicPartition]int64

	readersMu sync.Mutex
	readers   []*kgo.Client // idle consumers for Read, reused across batches
	closed    bool
}

// NewSource connects to the cluster (lazily: the first request dials) and returns the source.
// clock nil means SystemClock.
func NewSource(ctx context.Context, o *SourceOptions, clock Clock) (*Source, error) {
	if o == nil {
		return nil, errors.New("kafka: nil SourceOptions")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	cfg, err := parseClientConfig(o.Kafka)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(cfg.opts()...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	s := &Source{o: o, cfg: cfg, clock: clock, cl: cl}
	s.groupID = o.GroupID
	if s.groupID == "" {
		// Spark: "<groupIdPrefix>-<random UUID>-<metadataPath.hashCode>", "-executor" on executors.
		s.groupID = fmt.Sprintf("%s-%s-%d-executor", o.GroupIDPrefix, randomUUID(), javaHashCode(o.CheckpointLocation))
	}
	return s, nil
}

// Options returns the options the source was created with.
func (s *Source) Options() *SourceOptions { return s.o }

// GroupID is the executor group id that data-loss messages name (ckpt never joins a group).
func (s *Source) GroupID() string { return s.groupID }

// Close releases the clients.
func (s *Source) Close() {
	s.readersMu.Lock()
	s.closed = true
	readers := s.readers
	s.readers = nil
	s.readersMu.Unlock()
	for _, r := range readers {
		r.Close()
	}
	s.cl.Close()
}

// PrepareForTriggerAvailableNow is Spark's prepareForTriggerAvailableNow: from now on, Latest
// lists the latest offsets once and keeps using that snapshot, so the query stops after the data
// that existed at start (rate limits still split it into several batches).
func (s *Source) PrepareForTriggerAvailableNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.availableNow = true
}

// topicMeta is one topic of a metadata response.
type topicMeta struct {
	err      error
	internal bool
	leaders  map[int32]int32 // partition -> leader broker
}

// describe asks for fresh metadata of topics (nil: every topic). It bypasses franz-go's metadata
// cache, as Spark's AdminClient describeTopics/listTopics do, so that deleted, recreated and
// grown topics are seen at once.
func (s *Source) describe(ctx context.Context, topics []string) (map[string]topicMeta, error) {
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata: %w", err)
	}
	out := make(map[string]topicMeta, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		m := topicMeta{err: kerr.ErrorForCode(t.ErrorCode), internal: t.IsInternal, leaders: make(map[int32]int32, len(t.Partitions))}
		for _, p := range t.Partitions {
			m.leaders[p.Partition] = p.Leader
		}
		out[*t.Topic] = m
	}
	return out, nil
}

// assigned lists the partitions the strategy assigns (ConsumerStrategy.assignedTopicPartitions).
func (s *Source) assigned(ctx context.Context) (map[logformat.TopicPartition]bool, error) {
	var topics []string
	switch {
	case s.o.SubscribePattern != nil:
		all, err := s.describe(ctx, nil)
		if err != nil {
			return nil, err
		}
		for t, m := range all {
			// Like the AdminClient's listTopics, leave out internal topics.
			if !m.internal && s.o.SubscribePattern.MatchString(t) {
				topics = append(topics, t)
			}
		}
		slices.Sort(topics)
	case len(s.o.Assign) > 0:
		for _, tp := range s.o.Assign {
			if !slices.Contains(topics, tp.Topic) {
				topics = append(topics, tp.Topic)
			}
		}
	default:
		topics = s.o.Subscribe
	}
	out := map[logformat.TopicPartition]bool{}
	if len(topics) == 0 {
		return out, nil
	}
	details, err := s.describe(ctx, topics)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, t := range topics {
		d, ok := details[t]
		if !ok || errors.Is(d.err, kerr.UnknownTopicOrPartition) {
			missing = append(missing, t)
			continue
		}
		if d.err != nil {
			return nil, fmt.Errorf("kafka: describe topic %q: %w", t, d.err)
		}
		if d.internal {
			continue
		}
		for p := range d.leaders {
			out[logformat.TopicPartition{Topic: t, Partition: p}] = true
		}
	}
	if len(missing) > 0 {
		// Pattern topics come from a listing, so only a race can lose them; Spark's
		// describeTopics fails then too, and withRetries tries again.
		slices.Sort(missing)
		return nil, &UnknownTopicError{Topics: missing}
	}
	if len(s.o.Assign) > 0 {
		want := map[logformat.TopicPartition]bool{}
		for _, tp := range s.o.Assign {
			want[tp] = true
		}
		for tp := range out {
			if !want[tp] {
				delete(out, tp)
			}
		}
	}
	return out, nil
}

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
				"Specified: " + sparkSet(keysOf(spec)) + " Assigned: " + sparkSet(setKeys(tps))}
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

// delayBatch is Spark's delayBatch: true skips this trigger.
func (s *Source) delayBatch(minRows int64, latest, current map[logformat.TopicPartition]int64, maxDelay time.Duration) bool {
	now := s.clock.Now().UnixMilli()
	if now-s.lastTriggerMillis >= maxDelay.Milliseconds() {
		s.lastTriggerMillis = now
		return false
	}
	var newRecords int64
	for tp, off := range latest {
		newRecords += off - current[tp] // a partition not in current counts from 0
	}
	if float64(newRecords) < float64(minRows) {
		return true
	}
	s.lastTriggerMillis = now
	return false
}

// rateLimit is KafkaMicroBatchStream.rateLimit: distribute limit records over the partitions in
// proportion to their backlog. Partition p with backlog size gets prorate = limit * (size /
// total) computed in floating point (Long / Double in Scala), rounded up when below 1 so that
// small partitions are not starved and down otherwise; its end is min(until, begin + prorate).
// begin is from[p], or fromNew[p] for a partition new since the last batch. Partitions with
// nothing to read, or whose begin is unknown, keep their until offset.
func rateLimit(limit int64, from, until, fromNew map[logformat.TopicPartition]int64) map[logformat.TopicPartition]int64 {
	begin := func(tp logformat.TopicPartition) (int64, bool) {
		if b, ok := from[tp]; ok {
			return b, true
		}
		b, ok := fromNew[tp]
		return b, ok
	}
	sizes := map[logformat.TopicPartition]int64{}
	var sum int64 // Spark sums the Long sizes, then converts the sum to Double
	for tp := range until {
		b, ok := begin(tp)
		if !ok {
			continue
		}
		if size := until[tp] - b; size > 0 {
			sizes[tp] = size
			sum += size
		}
	}
	total := float64(sum)
	out := make(map[logformat.TopicPartition]int64, len(until))
	if total < 1 {
		for tp, end := range until {
			out[tp] = end
		}
		return out
	}
	for tp, end := range until {
		size, ok := sizes[tp]
		if !ok {
			out[tp] = end
			continue
		}
		b, _ := begin(tp)
		prorate := float64(limit) * (float64(size) / total)
		var pl int64
		switch {
		case prorate < 1:
			pl = int64(math.Ceil(prorate))
		case prorate >= math.MaxInt64:
			pl = math.MaxInt64 // Double.toLong saturates
		default:
			pl = int64(math.Floor(prorate))
		}
		off := int64(math.MaxInt64)
		if pl <= math.MaxInt64-b {
			off = b + pl
		}
		out[tp] = min(end, off)
	}
	return out
}

// OffsetRange is one partition's part of a batch: offsets [From, Until).
type OffsetRange struct {
	logformat.TopicPartition
	From, Until int64 // the first offset to read and the offset to stop before
}

// Size is the number of offsets in the range.
func (r OffsetRange) Size() int64 { return r.Until - r.From }

// Ranges plans the batch (start, end] as Spark's getOffsetRangesFromResolvedOffsets: new
// partitions start at their earliest offset, and the data-loss checks run in Spark's order:
//  1. new partitions that vanished: "Cannot find earliest offsets of Set(...). Some data may have been missed"
//  2. a new partition not starting at 0: "Added partition t-p starts from X instead of 0. Some data may have been missed"
//  3. partitions of start missing from end: "Set(...) are gone. Some data may have been missed."
//  4. an end below its start: "Partition t-p's offset was changed from X to Y, some data may have been missed"
//
// With failOnDataLoss the first one is a *DataLossError with Spark's full message; without,
// each becomes a warning, gone partitions are dropped and ranges with nothing to read (negative
// ones included) are left out. The ranges are sorted by topic and partition.
func (s *Source) Ranges(ctx context.Context, start, end logformat.KafkaOffsets) ([]OffsetRange, []string, error) {
	from, until := start.Map(), end.Map()
	var newTPs []logformat.TopicPartition
	for _, tp := range keysOf(until) {
		if _, ok := from[tp]; !ok {
			newTPs = append(newTPs, tp)
		}
	}
	newInitial, err := s.fetchEarliestOf(ctx, newTPs)
	if err != nil {
		return nil, nil, err
	}
	rep := &reporter{fail: s.o.FailOnDataLoss}
	var vanished []logformat.TopicPartition
	for _, tp := range newTPs {
		if _, ok := newInitial[tp]; !ok {
			vanished = append(vanished, tp)
		}
	}
	if len(vanished) > 0 {
		if err := rep.driver(LossCannotFindEarliest, dataloss.CannotFindEarliest(sparkSet(vanished)), vanished...); err != nil {
			return nil, nil, err
		}
	}
	for _, tp := range keysOf(newInitial) {
		if o := newInitial[tp]; o != 0 {
			if err := rep.driver(LossAddedPartitionNotAtZero, dataloss.AddedPartition(sparkTP(tp), o), tp); err != nil {
				return nil, nil, err
			}
		}
	}
	var gone []logformat.TopicPartition
	for _, tp := range keysOf(from) {
		if _, ok := until[tp]; !ok {
			gone = append(gone, tp)
		}
	}
	if len(gone) > 0 {
		msg := dataloss.Gone(sparkSet(gone), s.o.GroupID != "")
		// reportDataLoss appends ". " + instruction to this message too.
		if err := rep.driver(LossPartitionsGone, msg, gone...); err != nil {
			return nil, nil, err
		}
	}
	var ranges []OffsetRange
	for _, tp := range keysOf(until) {
		f, ok := from[tp]
		if !ok {
			if f, ok = newInitial[tp]; !ok {
				continue // vanished: no from offset
			}
		}
		u := until[tp]
		if u < f {
			if err := rep.driver(LossOffsetChanged, dataloss.OffsetChanged(sparkTP(tp), f, u), tp); err != nil {
				return nil, nil, err
			}
		}
		if u > f {
			ranges = append(ranges, OffsetRange{TopicPartition: tp, From: f, Until: u})
		}
	}
	return ranges, rep.warnings, nil
}

func (s *Source) warn(msg string) {
	if s.o.Warn != nil {
		s.o.Warn(msg)
	}
}

// javaHashCode is java.lang.String.hashCode over UTF-16 code units.
func javaHashCode(str string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(str)) {
		h = 31*h + int32(u)
	}
	return h
}

func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
