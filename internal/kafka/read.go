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

// reader takes an idle consumer or makes one. Readers are plain clients that consume one
// partition at a time, assigned and unassigned per task, so a batch costs no new connections.
func (s *Source) reader() (*kgo.Client, error) {
	s.readersMu.Lock()
	if s.closed {
		s.readersMu.Unlock()
		return nil, errors.New("kafka: source is closed")
	}
	if n := len(s.readers); n > 0 {
		cl := s.readers[n-1]
		s.readers = s.readers[:n-1]
		s.readersMu.Unlock()
		return cl, nil
	}
	s.readersMu.Unlock()
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

func (s *Source) release(cl *kgo.Client, healthy bool) {
	s.readersMu.Lock()
	if healthy && !s.closed {
		s.readers = append(s.readers, cl)
		s.readersMu.Unlock()
		return
	}
	s.readersMu.Unlock()
	cl.Close()
}

// readTask reads one range.
func (s *Source) readTask(ctx context.Context, r OffsetRange, fn func(p logformat.TopicPartition, rows []Row) error) error {
	cl, err := s.reader()
	if err != nil {
		return err
	}
	t := &task{s: s, cl: cl, r: r, next: r.From}
	err = t.run(ctx, fn)
	t.unassign()
	s.release(cl, err == nil)
	return err
}

type task struct {
	s        *Source
	cl       *kgo.Client
	r        OffsetRange
	next     int64
	assigned bool
}

func (t *task) assign(at int64) {
	t.unassign()
	t.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{t.r.Topic: {t.r.Partition: kgo.NewOffset().At(at)}})
	t.assigned = true
}

func (t *task) unassign() {
	if t.assigned {
		t.cl.RemoveConsumePartitions(map[string][]int32{t.r.Topic: {t.r.Partition}})
		t.assigned = false
	}
}

func (t *task) run(ctx context.Context, fn func(p logformat.TopicPartition, rows []Row) error) error {
	s, tp := t.s, t.r.TopicPartition
	t.assign(t.next)
	// Sized for a whole poll of the range (PollRecords returns at most 10,000 records), so that
	// the buffer, reused across polls, does not grow through eight re-allocations first.
	rows := make([]Row, 0, min(10_000, max(0, t.r.Until-t.next)))
	includeHeaders := s.o.IncludeHeaders
	lastProgress := time.Now()
	pollWait := min(time.Second, max(s.o.PollTimeout, 10*time.Millisecond))
	for t.next < t.r.Until {
		pctx, pcancel := context.WithTimeout(ctx, pollWait)
		fetches := t.cl.PollRecords(pctx, 10_000)
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
		done := false
		var gapErr error
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if done || gapErr != nil || fp.Topic != tp.Topic || fp.Partition != tp.Partition {
				return
			}
			for _, rec := range fp.Records {
				if rec.Offset < t.next {
					continue // a batch can start before the requested offset
				}
				if rec.Offset > t.next && fp.LogStartOffset > t.next {
					// Below the log start: aged out or deleted, not merely invisible (compacted,
					// aborted), which Spark tells apart the same way.
					if s.o.FailOnDataLoss {
						msg := fmt.Sprintf("Cannot fetch records in [%d, %d)", t.next, rec.Offset)
						gapErr = &DataLossError{Kind: LossMissingRecords, Message: executorMessage(msg, s.groupID, tp, true), Partitions: []logformat.TopicPartition{tp}}
						return
					}
					s.warn(executorMessage(fmt.Sprintf("Skip missing records in [%d, %d)", t.next, min(rec.Offset, t.r.Until)), s.groupID, tp, false))
				}
				if rec.Offset >= t.r.Until {
					t.next = t.r.Until
					done = true
					return
				}
				t.next = rec.Offset + 1
				progressed = true
				if rec.Attrs.IsControl() {
					continue
				}
				row := Row{
					Key: rec.Key, Value: rec.Value, Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
					Timestamp: rec.Timestamp, TimestampType: int32(rec.Attrs.TimestampType()),
				}
				if includeHeaders && len(rec.Headers) > 0 {
					row.Headers = make([]Header, len(rec.Headers))
					for i, h := range rec.Headers {
						row.Headers[i] = Header{Key: h.Key, Value: h.Value}
					}
				}
				rows = append(rows, row)
			}
		})
		if len(rows) > 0 {
			if err := fn(tp, rows); err != nil {
				return err
			}
			rows = rows[:0]
		}
		if gapErr != nil {
			return gapErr
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
		return nil
	case t.next >= earliest:
		s.warn(dataloss.Disappeared(t.next, additional))
	default:
		s.warn(dataloss.Skipped(rangeText, t.next, earliest, additional))
		t.next = earliest
	}
	t.assign(t.next)
	return nil
}
