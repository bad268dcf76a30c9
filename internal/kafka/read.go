package kafka

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// Header is a record header, Spark's headers element struct<key: string, value: binary>.
type Header = transform.Header

// Row is one Kafka record in Spark's Kafka source schema: key, value, topic, partition, offset,
// timestamp, timestampType and, with includeHeaders, headers (only with includeHeaders=true,
// nil when the record has none). It is the row the query's expressions evaluate, so that the
// engine hands the source's rows to them without a copy; Key, Value and header values are
// the fetched record's own byte slices, not copies.
type Row = transform.Row

// Read reads the batch (start, end]: it plans the ranges with Ranges (data-loss checks and
// warnings included, as Spark's planInputPartitions) and reads them with ReadRanges.
func (s *Source) Read(ctx context.Context, start, end logformat.KafkaOffsets, parallelism int, fn func(p logformat.TopicPartition, rows []Row) error) error {
	ranges, warnings, err := s.Ranges(ctx, start, end)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		s.warn(w)
	}
	return s.ReadRanges(ctx, ranges, parallelism, fn)
}

// ReadRanges reads each range [From, Until) as one task, at most parallelism tasks at a time
// (default, 0: GOMAXPROCS). A task consumes its partition directly from From and stops at Until,
// so every offset of the range is read exactly once; control records and, under read_committed,
// aborted records occupy offsets but produce no rows.
//
// fn receives the rows of a partition in offset order, in chunks, from the task's goroutine:
// calls for one partition never overlap, calls for different partitions may. The rows slice is
// reused after fn returns (the Row values and their byte slices are not). The first error from
// fn or from a task cancels the others and is returned.
//
// Records that are no longer in Kafka follow Spark's executor rules: with failOnDataLoss a
// *DataLossError ("Cannot fetch offset N …", "Cannot fetch records in [a, b) …"); without, a
// warning and the read continues at the next available offset.
func (s *Source) ReadRanges(ctx context.Context, ranges []OffsetRange, parallelism int, fn func(p logformat.TopicPartition, rows []Row) error) error {
	if len(ranges) == 0 {
		return nil
	}
	if parallelism <= 0 {
		parallelism = runtime.GOMAXPROCS(0)
	}
	parallelism = min(parallelism, len(ranges))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan OffsetRange)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range parallelism {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if err := s.readTask(ctx, r, fn); err != nil {
					fail(err)
				}
			}
		}()
	}
feed:
	for _, r := range ranges {
		select {
		case jobs <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// maxKeptReaders is how many partition consumers a source keeps between batches: Spark's
// consumer cache capacity (spark.kafka.consumer.cache.capacity, 64).
const maxKeptReaders = 64

// heldTimeout is how long a reader idle between batches keeps its position and what it
// fetched: Spark's spark.kafka.consumer.fetchedData.cache.timeout (5 minutes). An older reader
// starts afresh, so that records fetched long ago (before the topic was deleted and created
// again, say) are fetched again.
const heldTimeout = 5 * time.Minute

// reader is a consumer kept for one partition across batches, as Spark's executors keep a
// KafkaConsumer and its fetched data (InternalKafkaConsumerPool, FetchedDataPool): when a
// batch's range starts where the previous one ended, the reader goes on from its position,
// with its fetch session, its buffered fetch and the records it took beyond the previous end
// (held), instead of assigning, fetching and unassigning the partition every batch. Between
// tasks its partition is paused, so an idle reader sends no fetches. Any other start, and any
// error, starts it afresh: a reader never delivers a record outside its range.
type reader struct {
	cl       *kgo.Client
	tp       logformat.TopicPartition
	assigned bool
	// next is where the last range ended (the next offset to deliver); valid when assigned.
	next int64
	// held are records taken from cl beyond the last range's end, in offset order, the first at
	// or after next; heldLogStart is the log start offset of the fetch they came from.
	held         []*kgo.Record
	heldLogStart int64
	used         time.Time
}

func (s *Source) newReaderClient() (*kgo.Client, error) {
	opts := append(s.cfg.opts(),
		// Out-of-range is Spark's data-loss signal: surface it instead of resetting.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// Control records take offsets; seeing them tells where a range ends.
		kgo.KeepControlRecords(),
		// A task reads data known to exist; a short wait keeps an idle fetch from delaying the
		// next task's assignment.
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.FetchMaxPartitionBytes(8<<20),
	)
	return kgo.NewClient(opts...)
}

// largeRange is the size from which a range takes an idle reader of another partition rather
// than a new client: a whole poll (PollRecords takes up to 10,000 records) or more, next to
// which a fresh assignment costs little, while every client more is one more connection
// fetching beside the others on the same CPUs.
const largeRange = 10_000

// acquire takes the partition's kept reader, or makes one: for a large range from the least
// recently used idle reader, else from a new client while fewer than maxKeptReaders are kept,
// else again from the least recently used idle reader's client.
func (s *Source) acquire(tp logformat.TopicPartition, size int64) (*reader, error) {
	s.readersMu.Lock()
	if s.closed {
		s.readersMu.Unlock()
		return nil, errors.New("kafka: source is closed")
	}
	if r := s.readers[tp]; r != nil {
		delete(s.readers, tp)
		s.readersBusy++
		s.readersMu.Unlock()
		return r, nil
	}
	var lru *reader
	if size >= largeRange || len(s.readers)+s.readersBusy >= maxKeptReaders {
		for _, r := range s.readers {
			if lru == nil || r.used.Before(lru.used) {
				lru = r
			}
		}
		if lru != nil {
			delete(s.readers, lru.tp)
		}
	}
	s.readersBusy++
	s.readersMu.Unlock()
	if lru != nil {
		lru.unassign()
		lru.tp = tp
		return lru, nil
	}
	cl, err := s.newReaderClient()
	if err != nil {
		s.readersMu.Lock()
		s.readersBusy--
		s.readersMu.Unlock()
		return nil, err
	}
	return &reader{cl: cl, tp: tp}, nil
}

// release keeps a healthy reader for its partition's next range, paused; an unhealthy one is
// closed, with what it held.
func (s *Source) release(r *reader, healthy bool) {
	if healthy && r.assigned {
		r.cl.PauseFetchPartitions(map[string][]int32{r.tp.Topic: {r.tp.Partition}})
	}
	r.used = time.Now()
	s.readersMu.Lock()
	s.readersBusy--
	_, kept := s.readers[r.tp] // a concurrent Read of the same partition kept its own
	if healthy && !kept && !s.closed {
		s.readers[r.tp] = r
		s.readersMu.Unlock()
		return
	}
	s.readersMu.Unlock()
	r.cl.Close()
}

// readTask reads one range.
func (s *Source) readTask(ctx context.Context, rg OffsetRange, fn func(p logformat.TopicPartition, rows []Row) error) error {
	r, err := s.acquire(rg.TopicPartition, rg.Size())
	if err != nil {
		return err
	}
	t := &task{s: s, rd: r, r: rg, next: rg.From}
	err = t.run(ctx, fn)
	if err == nil {
		r.next = t.next
	}
	s.release(r, err == nil)
	return err
}

type task struct {
	s    *Source
	rd   *reader
	r    OffsetRange
	next int64
}

// assign (re)starts the reader at offset at, dropping what it held.
func (rd *reader) assign(at int64) {
	rd.unassign()
	rd.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{rd.tp.Topic: {rd.tp.Partition: kgo.NewOffset().At(at)}})
	rd.assigned = true
	rd.next = at
}

func (rd *reader) unassign() {
	rd.held = nil
	if rd.assigned {
		tps := map[string][]int32{rd.tp.Topic: {rd.tp.Partition}}
		rd.cl.RemoveConsumePartitions(tps)
		rd.cl.ResumeFetchPartitions(tps)
		rd.assigned = false
	}
}

// start makes the reader deliver from t.next: it goes on where the previous range ended, or is
// assigned afresh.
func (t *task) start() {
	rd := t.rd
	if rd.assigned && rd.next == t.next && time.Since(rd.used) < heldTimeout {
		rd.cl.ResumeFetchPartitions(map[string][]int32{rd.tp.Topic: {rd.tp.Partition}})
		return
	}
	rd.assign(t.next)
}

func (t *task) run(ctx context.Context, fn func(p logformat.TopicPartition, rows []Row) error) error {
	s, tp, rd := t.s, t.r.TopicPartition, t.rd
	t.start()
	// Sized for a whole poll of the range (PollRecords returns at most 10,000 records), so that
	// the buffer, reused across polls, does not grow through eight re-allocations first.
	rows := make([]Row, 0, min(10_000, max(0, t.r.Until-t.next)))
	includeHeaders := s.o.IncludeHeaders
	lastProgress := time.Now()
	pollWait := min(time.Second, max(s.o.PollTimeout, 10*time.Millisecond))
	// take delivers the records of one fetch of the partition that belong to the range, and
	// holds those beyond its end for the next range.
	var (
		done     bool
		gapErr   error
		hold     []*kgo.Record
		holdFrom int64
	)
	take := func(recs []*kgo.Record, logStart int64) (progressed bool) {
		for i, rec := range recs {
			if done {
				hold = append(hold, recs[i:]...)
				holdFrom = logStart
				return progressed
			}
			if gapErr != nil {
				return progressed
			}
			if rec.Offset < t.next {
				continue // a batch can start before the requested offset
			}
			if rec.Offset > t.next && logStart > t.next {
				// Below the log start: aged out or deleted, not merely invisible (compacted,
				// aborted), which Spark tells apart the same way.
				if s.o.FailOnDataLoss {
					msg := fmt.Sprintf("Cannot fetch records in [%d, %d)", t.next, rec.Offset)
					gapErr = &DataLossError{Kind: LossMissingRecords, Message: executorMessage(msg, s.groupID, tp, true), Partitions: []logformat.TopicPartition{tp}}
					return progressed
				}
				s.warn(executorMessage(fmt.Sprintf("Skip missing records in [%d, %d)", t.next, min(rec.Offset, t.r.Until)), s.groupID, tp, false))
			}
			if rec.Offset >= t.r.Until {
				t.next = t.r.Until
				done = true
				hold = append(hold, recs[i:]...)
				holdFrom = logStart
				return progressed
			}
			t.next = rec.Offset + 1
			progressed = true
			if rec.Attrs.IsControl() {
				continue
			}
			// The row is filled in place, field by field: a Row built aside and appended is
			// copied whole, which while the garbage collector runs (most of a large batch)
			// goes through the runtime's bulk write barrier, 7% of a Kafka→Kafka copy's CPU.
			if len(rows) < cap(rows) {
				rows = rows[:len(rows)+1]
			} else {
				rows = append(rows, Row{})
			}
			row := &rows[len(rows)-1]
			row.Key, row.Value, row.Topic = rec.Key, rec.Value, rec.Topic
			row.Partition, row.Offset = rec.Partition, rec.Offset
			row.Timestamp, row.TimestampType = rec.Timestamp, int32(rec.Attrs.TimestampType())
			row.Headers = nil // the slot may hold a row of an earlier poll
			if includeHeaders && len(rec.Headers) > 0 {
				row.Headers = make([]Header, len(rec.Headers))
				for i, h := range rec.Headers {
					row.Headers[i] = Header{Key: h.Key, Value: h.Value}
				}
			}
		}
		if t.next >= t.r.Until {
			done = true
		}
		return progressed
	}
	// flush hands the rows taken so far to fn.
	flush := func() error {
		if len(rows) > 0 {
			if err := fn(tp, rows); err != nil {
				return err
			}
			rows = rows[:0]
		}
		if gapErr != nil {
			return gapErr
		}
		return nil
	}
	if held := rd.held; len(held) > 0 {
		rd.held = nil
		take(held, rd.heldLogStart)
		if err := flush(); err != nil {
			return err
		}
	}
	for !done && t.next < t.r.Until {
		pctx, pcancel := context.WithTimeout(ctx, pollWait)
		fetches := rd.cl.PollRecords(pctx, 10_000)
		pcancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			outOfRange bool
			fetchErr   error
		)
		fetches.EachError(func(topic string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
				// The poll's own timeout.
			case topic == tp.Topic && p == tp.Partition && errors.Is(err, kerr.OffsetOutOfRange):
				outOfRange = true
			case fetchErr == nil:
				fetchErr = fmt.Errorf("kafka: fetch %s at offset %d: %w", sparkTP(tp), t.next, err)
			}
		})
		if fetchErr != nil {
			return fetchErr
		}
		progressed := false
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Topic != tp.Topic || fp.Partition != tp.Partition {
				return
			}
			if take(fp.Records, fp.LogStartOffset) {
				progressed = true
			}
		})
		if err := flush(); err != nil {
			return err
		}
		if progressed || done {
			lastProgress = time.Now()
			continue
		}
		if !outOfRange {
			// Nothing arrived. Spark's fetch treats an offset outside the available range as
			// out of range; anything else is a timeout after pollTimeoutMs.
			earliest, latest, err := t.available(ctx)
			if err != nil {
				return err
			}
			if t.next >= earliest && t.next < latest {
				if time.Since(lastProgress) >= s.o.PollTimeout {
					return fmt.Errorf("java.util.concurrent.TimeoutException: Cannot fetch record for offset %d in %d milliseconds", t.next, s.o.PollTimeout.Milliseconds())
				}
				continue
			}
		}
		if err := t.outOfRange(ctx); err != nil {
			return err
		}
		lastProgress = time.Now()
	}
	// Every record the client returned past t.next is in hold, so the reader goes on at t.next.
	rd.held, rd.heldLogStart = hold, holdFrom
	return nil
}

// available lists the partition's earliest and latest offsets (Spark's getAvailableOffsetRange).
func (t *task) available(ctx context.Context) (earliest, latest int64, err error) {
	tps := map[logformat.TopicPartition]bool{t.r.TopicPartition: true}
	e, err := t.s.listOffsets(ctx, tps, specEarliest)
	if err != nil {
		return 0, 0, err
	}
	l, err := t.s.listOffsets(ctx, tps, specLatest)
	if err != nil {
		return 0, 0, err
	}
	return e[t.r.TopicPartition], l[t.r.TopicPartition], nil
}

// outOfRange handles OffsetOutOfRange at t.next as KafkaDataConsumer.get: fail, or warn and
// continue at the earliest available offset in [next, until) (getEarliestAvailableOffsetBetween).
func (t *task) outOfRange(ctx context.Context) error {
	s, tp := t.s, t.r.TopicPartition
	msg := dataloss.CannotFetch(t.next)
	if s.o.FailOnDataLoss {
		return &DataLossError{Kind: LossCannotFetchOffset, Message: executorMessage(msg, s.groupID, tp, true), Partitions: []logformat.TopicPartition{tp}}
	}
	s.warn(executorMessage(msg, s.groupID, tp, false))
	earliest, latest, err := t.available(ctx)
	if err != nil {
		return err
	}
	s.warn(fmt.Sprintf("Some data may be lost. Recovering from the earliest offset: %d", earliest))
	additional := dataloss.ExecutorSuffix(s.groupID, sparkTP(tp), false)
	rangeText := dataloss.AvailableRange(earliest, latest)
	switch {
	case t.next >= latest || earliest >= t.r.Until:
		s.warn(dataloss.Skipped(rangeText, t.next, t.r.Until, additional))
		t.next = t.r.Until
		// The client still stands where the records were lost, not where the range ends.
		t.rd.unassign()
		return nil
	case t.next >= earliest:
		s.warn(dataloss.Disappeared(t.next, additional))
	default:
		s.warn(dataloss.Skipped(rangeText, t.next, earliest, additional))
		t.next = earliest
	}
	t.rd.assign(t.next)
	return nil
}
