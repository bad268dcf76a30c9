package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MarkerTopicSuffix names the exactly-once sink's batch-marker topic: "<topic>.ckpt-batches".
const MarkerTopicSuffix = ".ckpt-batches"

// DefaultTransactionTimeout is the exactly-once sink's transaction timeout unless
// kafka.transaction.timeout.ms is set (Kafka's producer default).
const DefaultTransactionTimeout = 60 * time.Second

// OutRow is one record for the Kafka sink, Spark's sink columns: key, value, topic, partition,
// headers.
type OutRow struct {
	// Key and Value are the record's; nil is null.
	Key, Value []byte
	// Topic is used when the sink has no topic option (the option wins, as in Spark).
	Topic string
	// Partition, when set, is the partition; otherwise Kafka's partitioner picks one (murmur2 of
	// the key, sticky for null keys), as Spark's producer does.
	Partition *int32
	// Headers are the record headers (Spark's headers column). Default: none.
	Headers []Header
}

// sinkOptionNames are the accepted non-kafka.* sink options.
var sinkOptionNames = []string{"topic", "exactlyOnce", "checkpointLocation"}

// Sink is the Kafka sink. By default it is at least once, like Spark's: AddBatch returns once
// every record is acknowledged (idempotent producer, acks=all), and a re-run batch writes its
// records again; a streaming writer calls Produce per chunk and Flush once per batch instead.
// With exactlyOnce=true each batch is one Kafka transaction that also writes a
// marker naming the batch, so a batch that already committed is skipped when it is re-run; see
// docs/kafka.md for the design and its limits.
type Sink struct {
	cl          *kgo.Client
	topic       string // the topic option, "" if unset
	exactlyOnce bool
	queryID     string
	txnID       string
	markerTopic string
	cfg         *clientConfig

	mu        sync.Mutex
	last      int64 // last committed batch id, valid if hasLast
	hasLast   bool
	closeOnce sync.Once

	// BeforeCommit, when set, runs inside an exactly-once AddBatch once the batch's records and
	// its marker are acknowledged and right before the transaction commits: the transaction is
	// open, so a crash here leaves nothing visible to read_committed consumers (the --fail-at
	// phase=mid-sink crash drill). Set it before AddBatch, not concurrently with it.
	BeforeCommit func()

	// Records produced and not yet finished (their promise has not run), and the first error
	// since the last Flush. Flush waits for outstanding to reach 0: kgo's Flush alone can return
	// before the promise of a record that failed before it was buffered.
	outstanding atomic.Int64
	pmu         sync.Mutex
	idle        chan struct{} // closed when outstanding reaches 0, if a Flush waits
	perr        error
	promise     func(*kgo.Record, error)
	produceMu   sync.Mutex // held by enqueue
}

// NewSink validates the options and connects. Options: kafka.bootstrap.servers (required);
// topic (default: none, every row names its topic); exactlyOnce (default false; true needs
// topic); checkpointLocation (ignored); kafka.* client options as ClientOpts. queryID is the
// query's id from the checkpoint metadata; the exactly-once transactional id is derived from
// it and the topic, so it is stable across restarts.
//
// With exactlyOnce, NewSink initialises the transactional producer first (fencing an older
// instance of the query and letting the broker finish or abort its open transaction) and then
// reads the last committed batch from the marker topic, creating that topic if needed.
func NewSink(ctx context.Context, opts map[string]string, queryID string) (*Sink, error) {
	p := lowerKeys(opts)
	kafka := map[string]string{}
	for lk, e := range p {
		if strings.HasPrefix(lk, "kafka.") {
			kafka[lk] = e.value
			continue
		}
		if !slices.ContainsFunc(sinkOptionNames, func(n string) bool { return strings.EqualFold(n, lk) }) {
			return nil, optErr(e.key, e.value, sinkOptionNames, "unknown Kafka sink option '%s'; accepted options: %s, and kafka.* client options (see docs/kafka.md)", e.key, strings.Join(sinkOptionNames, ", "))
		}
	}
	if err := refusedKafkaOption(p, false); err != nil {
		return nil, err
	}
	if _, ok := kafka["kafka.bootstrap.servers"]; !ok {
		return nil, optErr("kafka.bootstrap.servers", "", nil, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
	}
	cfg, err := parseClientConfig(kafka)
	if err != nil {
		return nil, err
	}
	s := &Sink{queryID: queryID, cfg: cfg}
	s.promise = s.recordDone
	if e, ok := p["topic"]; ok {
		s.topic = strings.TrimSpace(e.value)
	}
	if e, ok := p["exactlyonce"]; ok {
		v, err := parseScalaBool(e.key, e.value)
		if err != nil {
			return nil, err
		}
		s.exactlyOnce = v
	}
	// The producer defaults first, so that kafka.compression.type and kafka.linger.ms win.
	kopts := append(ProducerDefaults(), cfg.opts()...)
	kopts = append(kopts, kgo.RecordPartitioner(sinkPartitioner{kgo.StickyKeyPartitioner(nil)}))
	if s.exactlyOnce {
		if s.topic == "" {
			return nil, optErr("exactlyOnce", p["exactlyonce"].value, nil, "Kafka sink option 'exactlyOnce' needs the 'topic' option: the batch markers live in '<topic>%s'", MarkerTopicSuffix)
		}
		if queryID == "" {
			return nil, errors.New("kafka: the exactly-once sink needs the query id")
		}
		s.txnID = "ckpt-" + queryID + "-" + s.topic
		s.markerTopic = s.topic + MarkerTopicSuffix
		if cfg.txnTimeout == 0 {
			kopts = append(kopts, kgo.TransactionTimeout(DefaultTransactionTimeout))
		}
		kopts = append(kopts, kgo.TransactionalID(s.txnID))
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: sink client: %w", err)
	}
	s.cl = cl
	if s.exactlyOnce {
		// Initialising the producer id bumps the epoch: an older instance is fenced, and the
		// broker completes or aborts its open transaction before we read the markers.
		if _, _, err := cl.ProducerID(ctx); err != nil {
			cl.Close()
			return nil, fmt.Errorf("kafka: init transactional producer %q: %w", s.txnID, err)
		}
		if err := s.ensureMarkerTopic(ctx); err != nil {
			cl.Close()
			return nil, err
		}
		if _, _, err := s.LastCommittedBatch(ctx); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return s, nil
}

// TransactionalID is the exactly-once transactional id ("ckpt-<queryID>-<topic>"), or "".
func (s *Sink) TransactionalID() string { return s.txnID }

// MarkerTopic is the exactly-once marker topic ("<topic>.ckpt-batches"), or "".
func (s *Sink) MarkerTopic() string { return s.markerTopic }

// ProducerDefaults are the sink producer's options before the kafka.* client options: no
// compression (Kafka's compression.type default; franz-go's would be snappy), franz-go's 10 ms
// linger and 1 MB batches, and room for 100k buffered records. PlainConsumeProduce uses the same,
// so that benchmarks compare like with like.
func ProducerDefaults() []kgo.Opt {
	return []kgo.Opt{
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(10 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(1_000_012),
		kgo.MaxBufferedRecords(maxBufferedRecords),
	}
}

// Close flushes nothing (AddBatch and Flush already waited) and releases the client.
func (s *Sink) Close() {
	s.closeOnce.Do(func() { s.cl.Close() })
}

// ensureMarkerTopic creates "<topic>.ckpt-batches": one partition, compacted, so it keeps one
// marker per transactional id. An existing topic is fine.
func (s *Sink) ensureMarkerTopic(ctx context.Context) error {
	adm := kadm.NewClient(s.cl)
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, s.markerTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka: create the exactly-once marker topic %q (create it yourself: 1 partition, cleanup.policy=compact): %w", s.markerTopic, err)
	}
	return nil
}

// marker is the value of a batch marker record; its key is the transactional id.
type marker struct {
	QueryID string `json:"queryId"`
	Topic   string `json:"topic"`
	BatchID int64  `json:"batchId"`
	Records int    `json:"records"`
}

// LastCommittedBatch is the highest batch id whose transaction committed, read from the marker
// topic with read_committed. ok is false when no batch committed, or the sink is at least once
// (it keeps no record). The answer is cached: after NewSink only this instance can commit for
// the transactional id, and a newer instance fences it.
func (s *Sink) LastCommittedBatch(ctx context.Context) (int64, bool, error) {
	if !s.exactlyOnce {
		return 0, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasLast {
		return s.last, true, nil
	}
	last, ok, err := s.scanMarkers(ctx)
	if err != nil {
		return 0, false, err
	}
	s.last, s.hasLast = last, ok
	return last, ok, nil
}

// scanMarkers reads the marker partition from its start to its last stable offset.
func (s *Sink) scanMarkers(ctx context.Context) (int64, bool, error) {
	adm := kadm.NewClient(s.cl)
	starts, err := adm.ListStartOffsets(ctx, s.markerTopic)
	if err != nil {
		return 0, false, fmt.Errorf("kafka: list %s: %w", s.markerTopic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, s.markerTopic) // the LSO: nothing undecided
	if err != nil {
		return 0, false, fmt.Errorf("kafka: list %s: %w", s.markerTopic, err)
	}
	so, ok1 := starts.Lookup(s.markerTopic, 0)
	eo, ok2 := ends.Lookup(s.markerTopic, 0)
	if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
		return 0, false, fmt.Errorf("kafka: list %s partition 0: %v %v", s.markerTopic, so.Err, eo.Err)
	}
	if eo.Offset <= so.Offset {
		return 0, false, nil
	}
	c, err := kgo.NewClient(append(s.cfg.opts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.markerTopic: {0: kgo.NewOffset().At(so.Offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // markers of aborted transactions end in a control record
		kgo.FetchMaxWait(100*time.Millisecond),
	)...)
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	var (
		last  int64
		found bool
		next  = so.Offset
	)
	for next < eo.Offset {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return 0, false, fmt.Errorf("kafka: read %s: %w", s.markerTopic, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= next {
				next = r.Offset + 1
			}
			if r.Attrs.IsControl() || string(r.Key) != s.txnID {
				return
			}
			var m marker
			if json.Unmarshal(r.Value, &m) == nil && (!found || m.BatchID > last) {
				last, found = m.BatchID, true
			}
		})
	}
	return last, found, nil
}

// AddBatch writes a batch and returns when it is durable. At least once: Produce and Flush, every
// record is acknowledged. Exactly once: a batch id at or below LastCommittedBatch is skipped (a
// re-run after a crash between the sink's commit and the checkpoint's); otherwise the records and
// the marker are one transaction, committed before AddBatch returns and aborted on any error
// (BeforeCommit, if set, runs just before the commit).
func (s *Sink) AddBatch(ctx context.Context, batchID int64, rows []OutRow) error {
	if !s.exactlyOnce {
		return s.produceAll(ctx, rows, nil)
	}
	last, ok, err := s.LastCommittedBatch(ctx)
	if err != nil {
		return err
	}
	if ok && batchID <= last {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("kafka: begin transaction for batch %d: %w", batchID, err)
	}
	mv, _ := json.Marshal(marker{QueryID: s.queryID, Topic: s.topic, BatchID: batchID, Records: len(rows)})
	mk := &kgo.Record{Topic: s.markerTopic, Partition: 0, Key: []byte(s.txnID), Value: mv}
	if err := s.produceAll(ctx, rows, mk); err != nil {
		return errors.Join(err, s.abort(ctx))
	}
	if f := s.BeforeCommit; f != nil {
		f()
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return errors.Join(fmt.Errorf("kafka: commit batch %d: %w", batchID, err), s.abort(ctx))
	}
	s.last, s.hasLast = batchID, true
	return nil
}

// abort drops buffered records and aborts the open transaction.
func (s *Sink) abort(ctx context.Context) error {
	err := s.cl.AbortBufferedRecords(ctx)
	s.pmu.Lock()
	s.perr = nil // the aborted records' errors belong to this batch, which failed already
	s.pmu.Unlock()
	if err != nil {
		return fmt.Errorf("kafka: abort buffered records: %w", err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("kafka: abort transaction: %w", err)
	}
	return nil
}

// Produce starts producing rows on the at-least-once sink and returns without waiting for the
// acknowledgements (franz-go's asynchronous Produce; it blocks only while 100k records are
// buffered). A failed record's error is kept and returned by Flush, and by later Produce calls
// so that a batch can stop early. Produce may be called concurrently; Flush once per batch, after
// its last Produce, makes the batch durable. Rows without a topic (and no topic option) fail with
// Spark's error before any of them is produced. The exactly-once sink refuses Produce: its
// batches are transactions, written whole by AddBatch.
func (s *Sink) Produce(ctx context.Context, rows []OutRow) error {
	if s.exactlyOnce {
		return errors.New("kafka: Produce is for the at-least-once sink; the exactly-once sink writes whole batches with AddBatch")
	}
	return s.enqueue(ctx, len(rows), func(i int) OutRow { return rows[i] }, nil)
}

// ProduceFunc is Produce for the n rows row(0) … row(n-1), made on demand: a writer that converts
// its own rows need not build a slice of them first. row may be called more than once per row.
func (s *Sink) ProduceFunc(ctx context.Context, n int, row func(i int) OutRow) error {
	if s.exactlyOnce {
		return errors.New("kafka: Produce is for the at-least-once sink; the exactly-once sink writes whole batches with AddBatch")
	}
	return s.enqueue(ctx, n, row, nil)
}

// Flush waits until every record produced so far is acknowledged or failed and returns the first
// error since the previous Flush (and forgets it), or ctx's error. A batch is durable once Flush
// returned nil after its last Produce.
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("kafka: produce: %w", err)
	}
	s.pmu.Lock()
	for s.outstanding.Load() > 0 {
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle := s.idle
		s.pmu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("kafka: produce: %w", ctx.Err())
		}
		s.pmu.Lock()
	}
	err := s.perr
	s.perr = nil
	s.pmu.Unlock()
	if err != nil {
		return fmt.Errorf("kafka: produce: %w", err)
	}
	return nil
}

// recordDone is every produced record's promise.
func (s *Sink) recordDone(_ *kgo.Record, err error) {
	if err != nil {
		s.pmu.Lock()
		if s.perr == nil {
			s.perr = err
		}
		s.pmu.Unlock()
	}
	if s.outstanding.Add(-1) == 0 {
		// A Flush waiting checked outstanding under pmu before it made idle, so it is woken.
		s.pmu.Lock()
		if s.idle != nil {
			close(s.idle)
			s.idle = nil
		}
		s.pmu.Unlock()
	}
}

// manualPartition marks a record whose partition the row chose.
type manualPartitionKey struct{}

var manualCtx = context.WithValue(context.Background(), manualPartitionKey{}, true)

// produceAll produces rows (and extra, if any) and waits for every acknowledgement, returning the
// first error.
func (s *Sink) produceAll(ctx context.Context, rows []OutRow, extra *kgo.Record) error {
	if err := s.enqueue(ctx, len(rows), func(i int) OutRow { return rows[i] }, extra); err != nil {
		// Wait for what was produced, so that no record of this call outlives it; the error
		// Flush returns is err or a later one.
		_ = s.Flush(ctx)
		return err
	}
	return s.Flush(ctx)
}

// enqueue produces the rows row(0) … row(count-1) (and extra, if any) without waiting; it returns
// the first error recorded since the last Flush.
func (s *Sink) enqueue(ctx context.Context, count int, row func(i int) OutRow, extra *kgo.Record) error {
	if s.topic == "" {
		for i := range count {
			if row(i).Topic == "" {
				// Spark's KafkaWriteTask text; checked before anything is produced.
				//lint:ignore ST1005 Spark's exact text ends with a period
				return errors.New("null topic present in the data. Use the topic option for setting a topic.")
			}
		}
	}
	n := int64(count)
	if extra != nil {
		n++
	}
	if n == 0 {
		return s.firstErr()
	}
	s.outstanding.Add(n)
	// One caller produces at a time, a whole call at once: the streaming writer calls Produce
	// from a goroutine per partition, and franz-go's Produce takes the client's and the
	// partition's locks per record, which two callers then hand back and forth per record
	// (BenchmarkKafkaToKafka's mutex profile: ten times the plain loop's lock waits).
	s.produceMu.Lock()
	defer s.produceMu.Unlock()
	var (
		recs  []kgo.Record
		stamp time.Time
	)
	for i := range count {
		r := row(i)
		if len(recs) == 0 {
			// Records are allocated in small slabs: fewer allocations than one per record, and
			// unlike one slab per call no large object to clear (franz-go keeps the pointers).
			recs = make([]kgo.Record, min(recordSlab, count-i))
			stamp = slabStamp(s.cl.BufferedProduceRecords())
		}
		rec := &recs[0]
		recs = recs[1:]
		rec.Timestamp = stamp
		rec.Topic = s.topic
		if rec.Topic == "" {
			rec.Topic = r.Topic
		}
		rec.Key, rec.Value = r.Key, r.Value
		if r.Partition != nil {
			rec.Partition = *r.Partition
			rec.Context = manualCtx
		}
		if len(r.Headers) > 0 {
			rec.Headers = make([]kgo.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				rec.Headers[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
			}
		}
		s.cl.Produce(ctx, rec, s.promise)
	}
	if extra != nil {
		extra.Context = manualCtx
		s.cl.Produce(ctx, extra, s.promise)
	}
	return s.firstErr()
}

// recordSlab is how many records enqueue allocates at once (128 × ~170 bytes: a small object).
const recordSlab = 128

// maxBufferedRecords is how many records the producer buffers before Produce waits for
// acknowledgements (ProducerDefaults).
const maxBufferedRecords = 100_000

// slabStamp is the CreateTime of the next slab of records, given how many records the client
// buffers now: one clock read for the slab, where franz-go would read the clock once per record
// (61 ns on the 2-core VM of docs/benchmarks.md, a tenth of a Kafka→Kafka copy's CPU per
// record). A Kafka timestamp has millisecond precision and a slab is produced in tens of
// microseconds, unless a Produce in it waits for buffer space; when that can happen (the
// buffer has no room for a whole slab) the zero time lets franz-go stamp each record as it is
// produced, as Kafka's producer stamps each send.
func slabStamp(buffered int64) time.Time {
	if buffered+recordSlab > maxBufferedRecords {
		return time.Time{}
	}
	return time.Now()
}

// firstErr is the first produce error since the last Flush, wrapped, or nil.
func (s *Sink) firstErr() error {
	s.pmu.Lock()
	err := s.perr
	s.pmu.Unlock()
	if err != nil {
		return fmt.Errorf("kafka: produce: %w", err)
	}
	return nil
}

// sinkPartitioner honours an explicit partition (Spark's partition column) and otherwise defers to
// Kafka's default partitioning.
type sinkPartitioner struct{ base kgo.Partitioner }

// ForTopic implements kgo.Partitioner.
func (p sinkPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	return &sinkTopicPartitioner{base: p.base.ForTopic(t)}
}

type sinkTopicPartitioner struct{ base kgo.TopicPartitioner }

func manual(r *kgo.Record) bool {
	return r.Context != nil && r.Context.Value(manualPartitionKey{}) != nil
}

// RequiresConsistency keeps explicitly partitioned and keyed records on their partition.
func (p *sinkTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return manual(r) || p.base.RequiresConsistency(r)
}

// Partition picks the row's partition when it set one, else defers to the base partitioner.
func (p *sinkTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if manual(r) {
		return int(r.Partition)
	}
	return p.base.Partition(r, n)
}

// OnNewBatch forwards to the base partitioner's sticky switching for keyless records.
func (p *sinkTopicPartitioner) OnNewBatch() {
	if nb, ok := p.base.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
