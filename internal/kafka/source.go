package kafka

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

	readersMu   sync.Mutex
	readers     map[logformat.TopicPartition]*reader // idle consumers for Read, kept across batches
	readersBusy int                                  // readers taken by running tasks
	closed      bool
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
	s := &Source{o: o, cfg: cfg, clock: clock, cl: cl, readers: map[logformat.TopicPartition]*reader{}}
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
	// In parallel: a client's Close waits for its last round trips (1.5–2 ms each on a local
	// broker), and a source keeps a reader per partition it read.
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Go(r.cl.Close)
	}
	s.cl.Close()
	wg.Wait()
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
