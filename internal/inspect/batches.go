package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/progress"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// BatchList is `ckpt inspect --batches`: one row per batch id found in offsets/ or commits/.
type BatchList struct {
	Kind     Kind       `json:"kind"` // always "batches"
	URI      string     `json:"uri"`
	Batches  []BatchRow `json:"batches"`
	Problems []Problem  `json:"problems"`
}

// BatchRow is one batch.
type BatchRow struct {
	ID int64 `json:"id"`
	// HasOffsets and Committed say which of offsets/<id> and commits/<id> exist.
	HasOffsets bool `json:"offsets"`
	Committed  bool `json:"committed"`
	// TimestampMs, Time and WatermarkMs come from the offsets metadata; nil/empty without it.
	TimestampMs *int64 `json:"timestampMs"`
	Time        string `json:"time,omitempty"`
	WatermarkMs *int64 `json:"watermarkMs"`
	// Sources has one entry per offset line.
	Sources []BatchSource `json:"sources"`
	// Records sums the records of every Kafka source; nil when there is none or any partition's
	// count is unknown.
	Records *int64 `json:"records"`
	// Problem is set when the offsets file is corrupt.
	Problem *Problem `json:"problem,omitempty"`
}

// BatchSource is one source's offset in a batch.
type BatchSource struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"`
	// Offset is the raw offset for sources other than Kafka (Kafka's is in Partitions).
	Offset json.RawMessage `json:"offset,omitempty"`
	// Partitions are a Kafka source's ranges, sorted by topic and partition.
	Partitions []PartitionRange `json:"partitions,omitempty"`
	// Records sums Partitions' records; nil when unknown or not Kafka.
	Records *int64 `json:"records"`
}

// PartitionRange is what a batch read from one Kafka partition: from the previous batch's end
// (or, for batch 0, the initial offsets) up to End, exclusive.
type PartitionRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Start is nil when unknown: no previous offsets file, a partition new in this batch
	// (Spark then starts at its earliest offset), or a symbolic initial offset.
	Start *int64 `json:"start"`
	End   int64  `json:"end"`
	// Records is End - Start; negative when the partition went backwards (a recreated topic).
	Records *int64 `json:"records"`
}

// BatchesOptions tunes Batches and EachBatch.
type BatchesOptions struct {
	// Parallelism bounds concurrent reads; <= 0 means storage.DefaultReadParallelism.
	Parallelism int
	// From and To keep the batch ids from From and up to To, both included; nil: no bound.
	From, To *int64
	// Last, when > 0, keeps the last Last batch ids (of those From and To keep). Default 0: all.
	Last int
	// Checkpoint is the store's checkpoint already loaded (checkpoint.LoadAt); nil: Load it.
	Checkpoint *checkpoint.Checkpoint
}

// ends are the Kafka ranges of one batch per source index, sorted by topic and partition: the
// next batch looks its starts up there.
type ends map[int][]PartitionRange

// lookup finds the end offset of topic/part in sorted ranges.
func lookup(rs []PartitionRange, topic string, part int32) (int64, bool) {
	i, found := slices.BinarySearchFunc(rs, PartitionRange{Topic: topic, Partition: part}, comparePartitions)
	if !found {
		return 0, false
	}
	return rs[i].End, true
}

func comparePartitions(a, b PartitionRange) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// batchChunk bounds how many offsets files are held in memory at once.
const batchChunk = 512

// Batches reads every offsets file (concurrently, in chunks) and lists every batch id that opts
// keeps. It holds every row: for a million batches, use EachBatch.
func Batches(ctx context.Context, store storage.Store, opts BatchesOptions) (*BatchList, error) {
	out := &BatchList{Kind: KindBatches, URI: store.URI(), Batches: []BatchRow{}, Problems: []Problem{}}
	err := EachBatch(ctx, store, opts, func(row *BatchRow) error {
		if row.Problem != nil {
			out.Problems = append(out.Problems, *row.Problem)
		}
		out.Batches = append(out.Batches, *row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachBatch is Batches row by row, in batch id order: fn gets each row as soon as its chunk of
// offsets files is parsed, and may not keep the pointer. Memory stays bounded by the chunk
// (batchChunk files) and the listings' batch ids, however long the log. An error from fn stops
// the listing.
func EachBatch(ctx context.Context, store storage.Store, opts BatchesOptions, fn func(*BatchRow) error) error {
	cp, err := opts.Checkpoint, error(nil)
	if cp == nil {
		if cp, err = checkpoint.Load(ctx, store); err != nil {
			return err
		}
	}
	lo, hi := selectRange(cp.Offsets, cp.Commits, opts)
	if lo > hi {
		return nil
	}
	// The ids are walked with cursors over the logs' runs: no slice of a million ids.
	off, com := newCursor(cp.Offsets, lo, hi), newCursor(cp.Commits, lo, hi)
	// commitOnly emits the committed ids below id (all of them when all) that have no offsets
	// file: they come before the next offsets file.
	commitOnly := func(below int64, all bool) error {
		for ; com.ok && (all || com.id < below); com.advance() {
			row := BatchRow{ID: com.id, Committed: true, Sources: []BatchSource{}}
			if err := fn(&row); err != nil {
				return err
			}
		}
		return nil
	}
	// The ranges of the first batch start where the offsets file before it ends.
	var prev ends // Kafka ends of the previous offsets file; nil when unknown
	if off.ok {
		if p, ok := cp.Offsets.Prev(off.id); ok {
			if pseq, err := cp.ReadOffsets(ctx, p); err == nil {
				_, prev = batchRow(parsedOffsets{id: p, seq: pseq}, false, nil)
			} else if asProblem(err) == nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	parsed := make([]parsedOffsets, 0, batchChunk)
	chunk := make([]int64, 0, batchChunk)
	progress.Stage(ctx, "reading offsets/")
	progress.From(ctx).Expect(progress.Read, cp.Offsets.CountIn(lo, hi))
	for off.ok {
		chunk = chunk[:0]
		for ; off.ok && len(chunk) < batchChunk; off.advance() {
			chunk = append(chunk, off.id)
		}
		parsed, err = readOffsets(ctx, store, cp, chunk, opts.Parallelism, parsed[:0])
		if err != nil {
			return err
		}
		for i := range parsed {
			po := &parsed[i]
			if err := commitOnly(po.id, false); err != nil {
				return err
			}
			committed := com.ok && com.id == po.id
			if committed {
				com.advance()
			}
			if po.id == 0 && po.err == nil {
				if prev, err = initialEnds(ctx, cp, po.seq); err != nil {
					return err
				}
			}
			row, cur := batchRow(*po, committed, prev)
			*po = parsedOffsets{} // the parsed file is not needed any more
			if err := fn(&row); err != nil {
				return err
			}
			prev = cur
		}
	}
	return commitOnly(0, true)
}

// cursor walks the ids of a log within [lo, hi], ascending.
type cursor struct {
	l      *checkpoint.Log
	id, hi int64
	ok     bool // id is the current id
}

func newCursor(l *checkpoint.Log, lo, hi int64) cursor {
	id, ok := l.Next(lo)
	return cursor{l: l, id: id, hi: hi, ok: ok && id <= hi}
}

func (c *cursor) advance() {
	if c.id == c.hi {
		c.ok = false
		return
	}
	c.id, c.ok = c.l.Next(c.id + 1)
	c.ok = c.ok && c.id <= c.hi
}

// atOrBelow returns the largest id of l at or below x.
func atOrBelow(l *checkpoint.Log, x int64) (int64, bool) {
	if l.Has(x) {
		return x, true
	}
	return l.Prev(x)
}

// selectRange returns the bounds [lo, hi] of the batch ids opts keeps among the union of two
// logs' ids, without building the union: lo > hi when none.
func selectRange(a, b *checkpoint.Log, opts BatchesOptions) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if opts.From != nil {
		lo = *opts.From
	}
	if opts.To != nil {
		hi = *opts.To
	}
	if lo > hi {
		return 1, 0
	}
	if opts.Last <= 0 {
		return lo, hi
	}
	// Walk both logs down from hi, counting distinct ids.
	x, xok := atOrBelow(a, hi)
	y, yok := atOrBelow(b, hi)
	n := 0
	first := int64(1)
	newHi := int64(0)
	for n < opts.Last && (xok || yok) {
		var id int64
		switch {
		case !yok || (xok && x > y):
			id = x
			x, xok = a.Prev(x)
		case !xok || y > x:
			id = y
			y, yok = b.Prev(y)
		default:
			id = x
			x, xok = a.Prev(x)
			y, yok = b.Prev(y)
		}
		if id < lo {
			break
		}
		if n == 0 {
			newHi = id
		}
		first = id
		n++
	}
	if n == 0 {
		return 1, 0
	}
	return first, newHi
}

type parsedOffsets struct {
	id  int64
	seq *logformat.OffsetSeq
	err error
}

// readOffsets reads and parses ids concurrently. A file that vanished since the listing is
// reported as a problem rather than failing the whole listing.
func readOffsets(ctx context.Context, store storage.Store, cp *checkpoint.Checkpoint, ids []int64, parallelism int, out []parsedOffsets) ([]parsedOffsets, error) {
	if len(ids) == 0 {
		return out, nil
	}
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = cp.Offsets.Path(id)
	}
	// Capped as every read of a log file: a file over logformat.MaxFileBytes is a problem of its
	// batch, read no further than the limit.
	data, readErrs, err := checkpoint.ReadManyCapped(ctx, store, paths, parallelism)
	if errors.Is(err, fs.ErrNotExist) {
		// A running query purges old batches under us: a file gone since the listing is a
		// problem of that batch, not a reason to show nothing. Read this chunk one by one.
		data, readErrs = make([][]byte, len(paths)), make([]error, len(paths))
		for i, p := range paths {
			data[i], readErrs[i] = checkpoint.ReadCapped(ctx, store, p)
			var le *logformat.Error
			if readErrs[i] != nil && !errors.Is(readErrs[i], fs.ErrNotExist) && !errors.As(readErrs[i], &le) {
				return nil, readErrs[i]
			}
		}
	} else if err != nil {
		return nil, err
	}
	out = slices.Grow(out, len(ids))[:len(ids)]
	// Parsing is CPU work of the same order as reading a local file; spread it too.
	workers := max(1, min(parallelism, 8))
	if parallelism <= 0 {
		workers = 8
	}
	var wg sync.WaitGroup
	per := (len(ids) + workers - 1) / workers
	for w := 0; w < len(ids); w += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if readErrs != nil && readErrs[i] != nil {
					out[i] = parsedOffsets{id: ids[i], err: readErrs[i]}
					continue
				}
				// The rows never show the conf: validate it, don't copy it.
				seq, err := logformat.ParseOffsetsWithoutConf(paths[i], data[i])
				out[i] = parsedOffsets{id: ids[i], seq: seq, err: err}
				data[i] = nil
			}
		}(w, min(w+per, len(ids)))
	}
	wg.Wait()
	return out, nil
}

// batchRow builds the row for one offsets file and returns its Kafka end offsets for the next.
func batchRow(po parsedOffsets, committed bool, prev ends) (BatchRow, ends) {
	row := BatchRow{ID: po.id, HasOffsets: true, Committed: committed, Sources: []BatchSource{}}
	if po.err != nil {
		if row.Problem = asProblem(po.err); row.Problem == nil {
			row.Problem = &Problem{File: fmt.Sprintf("offsets/%d", po.id), Kind: "unreadable", Message: po.err.Error()}
		}
		return row, nil
	}
	if m := po.seq.Metadata; m != nil {
		row.TimestampMs = ptr(m.BatchTimestampMs)
		row.Time = FormatTime(m.BatchTimestampMs)
		row.WatermarkMs = ptr(m.BatchWatermarkMs)
	}
	cur := ends{}
	var total int64
	known, anyKafka := true, false
	for i, s := range po.seq.Sources {
		kind, kafka, _ := offsetKind("", s.JSON, s.Void)
		bs := BatchSource{Index: i, Kind: kind}
		if kind != SourceKafka {
			bs.Offset = rawJSON(s.JSON, s.Void)
			row.Sources = append(row.Sources, bs)
			continue
		}
		anyKafka = true
		bs.Partitions, bs.Records = kafkaRanges(*kafka, prev[i])
		cur[i] = bs.Partitions
		if bs.Records == nil {
			known = false
		} else {
			total += *bs.Records
		}
		row.Sources = append(row.Sources, bs)
	}
	if anyKafka && known {
		row.Records = ptr(total)
	}
	return row, cur
}

// kafkaRanges pairs a batch's end offsets with the previous batch's, sorted.
func kafkaRanges(k logformat.KafkaOffsets, prev []PartitionRange) ([]PartitionRange, *int64) {
	n := 0
	for _, t := range k.Topics {
		n += len(t.Partitions)
	}
	out := make([]PartitionRange, 0, n)
	for _, t := range k.Topics {
		for _, p := range t.Partitions {
			out = append(out, PartitionRange{Topic: t.Topic, Partition: p.Partition, End: p.Offset})
		}
	}
	if !slices.IsSortedFunc(out, comparePartitions) {
		slices.SortFunc(out, comparePartitions)
	}
	var total int64
	known := len(out) > 0
	// One allocation for every start and count of the batch instead of two per partition.
	vals := make([]int64, 2*len(out))
	for i := range out {
		if s, ok := lookup(prev, out[i].Topic, out[i].Partition); ok && s >= 0 {
			vals[2*i], vals[2*i+1] = s, out[i].End-s
			out[i].Start, out[i].Records = &vals[2*i], &vals[2*i+1]
			total += vals[2*i+1]
		} else {
			known = false
		}
	}
	if !known {
		return out, nil
	}
	return out, ptr(total)
}

// initialEnds reads the Kafka initial offsets of each Kafka source of batch 0: where batch 0
// started.
func initialEnds(ctx context.Context, cp *checkpoint.Checkpoint, seq *logformat.OffsetSeq) (ends, error) {
	out := ends{}
	for i, s := range seq.Sources {
		if kind, _, _ := offsetKind("", s.JSON, s.Void); kind != SourceKafka {
			continue
		}
		init, err := cp.ReadKafkaInitialOffsets(ctx, i)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if asProblem(err) != nil {
				continue // reported by the summary; here the start is just unknown
			}
			return nil, err
		}
		out[i], _ = kafkaRanges(init.Offsets, nil)
	}
	return out, nil
}

// BatchDetail is `ckpt inspect --batch N`: the parsed contents of one batch.
type BatchDetail struct {
	Kind Kind   `json:"kind"` // always "batch"
	URI  string `json:"uri"`
	ID   int64  `json:"id"`
	// Offsets is offsets/<id>; nil when there is no such file.
	Offsets *BatchInfo `json:"offsets"`
	// Sources pairs each offset with the previous batch's (Kafka ranges and record counts).
	Sources []BatchSource `json:"sources"`
	// PreviousBatch is the offsets file the ranges start from: the highest id below this one.
	PreviousBatch *int64 `json:"previousBatch"`
	// Commit is commits/<id>; nil when the batch is not committed.
	Commit   *CommitInfo `json:"commit"`
	Problems []Problem   `json:"problems"`
}

// BatchNotFoundError says that neither log has the batch.
type BatchNotFoundError struct {
	ID               int64
	Offsets, Commits []Range
}

// Error names the batch and what the logs do hold, so the user can pick an existing id.
func (e *BatchNotFoundError) Error() string {
	return fmt.Sprintf("batch %d not found: offsets/ has %s, commits/ has %s", e.ID, FormatRanges(e.Offsets), FormatRanges(e.Commits))
}

// Batch reads offsets/<id>, the offsets file before it (for Kafka ranges) and commits/<id>.
func Batch(ctx context.Context, store storage.Store, id int64) (*BatchDetail, error) {
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return nil, err
	}
	return BatchOf(ctx, cp, id)
}

// BatchOf is Batch of a checkpoint already loaded (checkpoint.LoadAt).
func BatchOf(ctx context.Context, cp *checkpoint.Checkpoint, id int64) (*BatchDetail, error) {
	store := cp.Store
	if !cp.Offsets.Has(id) && !cp.Commits.Has(id) {
		return nil, &BatchNotFoundError{ID: id, Offsets: logRanges(cp.Offsets), Commits: logRanges(cp.Commits)}
	}
	d := &BatchDetail{Kind: KindBatch, URI: store.URI(), ID: id, Sources: []BatchSource{}, Problems: []Problem{}}
	report := func(p *Problem) {
		if p != nil {
			d.Problems = append(d.Problems, *p)
		}
	}
	if cp.Offsets.Has(id) {
		seq, err := cp.ReadOffsets(ctx, id)
		if err != nil && asProblem(err) == nil {
			return nil, err
		}
		d.Offsets = newBatchInfo(id, cp.Commits.Has(id), seq, err)
		report(d.Offsets.Problem)
		if err == nil {
			var prev ends
			if p, ok := cp.Offsets.Prev(id); ok {
				d.PreviousBatch = ptr(p)
				pseq, err := cp.ReadOffsets(ctx, p)
				switch {
				case err == nil:
					_, prev = batchRow(parsedOffsets{id: p, seq: pseq}, false, nil)
				case asProblem(err) == nil:
					return nil, err
				}
			} else if id == 0 {
				if prev, err = initialEnds(ctx, cp, seq); err != nil {
					return nil, err
				}
			}
			row, _ := batchRow(parsedOffsets{id: id, seq: seq}, false, prev)
			d.Sources = row.Sources
		}
	}
	if cp.Commits.Has(id) {
		c, err := cp.ReadCommit(ctx, id)
		if err != nil && asProblem(err) == nil {
			return nil, err
		}
		d.Commit = newCommitInfo(id, c, err)
		report(d.Commit.Problem)
	}
	return d, nil
}
