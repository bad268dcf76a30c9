// Deduplication: Spark's dropDuplicates over columns (StreamingDeduplicateExec, with or
// without a watermark) and dropDuplicatesWithinWatermark (StreamingDeduplicateWithinWatermarkExec)
// over the HDFS-backed state store provider, one operator (id 0, store "default").

package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// dedupOperatorName is StreamingDeduplicateExec's name in Spark 4's operator metadata
// (testdata/spark-state/4.1.4/dedup-hdfs/checkpoint/state/0/_metadata/metadata).
const dedupOperatorName = "dedupe"

// withinOperatorName is StreamingDeduplicateWithinWatermarkExec's name there (Spark 4.1.1
// refuses a checkpoint whose metadata names it "dedupe": TestSparkLiveDedupHandOver).
const withinOperatorName = "dedupeWithinWatermark"

// dedupValueType is the state value StreamingDeduplicateExec stores for every key: a row of
// one null field, whose schema file names it __dummy__ of type void (the same in 3.5 and
// 4.x: testdata/spark-state/*/dedup-hdfs).
var dedupValueType = statefmt.Struct(statefmt.Field{Name: "__dummy__", Type: &statefmt.Type{Name: "null"}, Nullable: true})

// withinValueType is StreamingDeduplicateWithinWatermarkExec's state value: the key's expiry,
// its first row's event time plus the watermark delay, in microseconds (non-null long).
var withinValueType = statefmt.Struct(statefmt.Field{Name: "expiresAtMicros", Type: &statefmt.Type{Name: "long"}})

// deduplicator keeps the keys seen so far (the state) and outputs each batch's rows whose key
// is new, as StreamingDeduplicateExec does: the first row of a key is output and put in the
// state, every later row of it dropped.
type deduplicator struct {
	stateStore
	prog  *transform.Program
	cols  []int // the key columns' indexes in prog.Columns()
	kinds []transform.Kind
	// ev is the watermark side: ev.evIx is the event-time key column of dropDuplicates with
	// a watermark; within marks dropDuplicatesWithinWatermark (evicted by expiry).
	ev     eviction
	within bool
	pool   sync.Pool
	// out holds the rows the batch in progress outputs, with their partitions.
	out   [][]any
	parts []int
}

func newDeduplicator(q *query.Resolved, sparkVersion string) (*deduplicator, error) {
	d := &deduplicator{prog: q.Program, cols: q.Dedup.Columns, within: q.Dedup.WithinWatermark,
		ev: eviction{on: q.WatermarkColumn != "", evIx: q.Dedup.EventTime, window: -1, delayMs: q.WatermarkDelayMs}}
	cols := q.Program.Columns()
	var kf []statefmt.Field
	for _, ix := range d.cols {
		c := cols[ix]
		t, err := sparkType(c.Kind)
		if err != nil {
			return nil, fmt.Errorf("drop-duplicates %s: %v", c.Name, err)
		}
		// The key row is the dedup columns, named as the query's columns (dropDuplicates
		// resolves names to its input's attributes), nullable as every column of Spark's
		// Kafka source is and as ckpt does not derive an expression's nullability.
		f := statefmt.Field{Name: c.Name, Type: t, Nullable: true}
		if d.ev.on && c.Name == q.WatermarkColumn {
			f.Metadata, _ = json.Marshal(map[string]any{"spark.watermarkDelayMs": d.ev.delayMs})
		}
		kf = append(kf, f)
		d.kinds = append(d.kinds, c.Kind)
	}
	vt, name := dedupValueType, dedupOperatorName
	if d.within {
		vt, name = withinValueType, withinOperatorName
	}
	d.stateStore = newStateStore(name, "deduplication", statefmt.Struct(kf...), vt, sparkVersion)
	d.pool.New = func() any { return d.prog.NewEvaluator() }
	return d, nil
}

func (d *deduplicator) begin(int64) { d.out, d.parts = nil, nil }

// evict marks the keys at or below the batch's eviction watermark: by the event-time key
// column (dropDuplicates; none without a watermark), or by expiry (within the watermark).
func (d *deduplicator) evict() {
	if !d.within {
		d.ev.evict(d.entries)
		return
	}
	for _, ent := range d.entries {
		if exp, ok := ent.value[0].(int64); ok && exp <= d.ev.evictUs {
			ent.gone = true
		}
	}
}

// apply keeps the rows of the batch whose key is not in the state and puts their keys in it.
func (d *deduplicator) apply(id int64, rows []transform.Row) error {
	ev := d.pool.Get().(*transform.Evaluator)
	defer d.pool.Put(ev)
	for i := range rows {
		r := &rows[i]
		keep, err := ev.Keep(r)
		if err != nil {
			return err
		}
		if !keep {
			continue
		}
		d.ev.observe(r)
		if d.ev.on && r.Timestamp.UnixMicro() <= d.ev.lateUs {
			continue // a late row: dropped before the state is looked at
		}
		row, err := ev.Project(r, nil)
		if err != nil {
			return err
		}
		vals := make([]any, len(d.cols))
		for j, ix := range d.cols {
			v, err := transform.Normalize(row[ix], d.kinds[j])
			if err != nil {
				return fmt.Errorf("drop-duplicates %s at %s-%d offset %d: %v", d.keyNames[j], r.Topic, r.Partition, r.Offset, err)
			}
			vals[j] = stateValue(v)
		}
		ent, created, err := d.lookup(vals)
		if err != nil {
			return err
		}
		if !created {
			continue
		}
		ent.value = []any{nil}
		if d.within {
			ent.value[0] = r.Timestamp.UnixMicro() + d.ev.delayMs*1000
		}
		ent.touched = id
		d.out = append(d.out, row)
		d.parts = append(d.parts, ent.part)
	}
	return nil
}

// output is the batch's new rows, by state partition (the order of Spark's tasks) and in
// the order they were read within one.
func (d *deduplicator) output(int64) [][]any {
	ix := make([]int, len(d.out))
	for i := range ix {
		ix[i] = i
	}
	slices.SortStableFunc(ix, func(x, y int) int { return d.parts[x] - d.parts[y] })
	out := make([][]any, len(ix))
	for i, j := range ix {
		out[i] = d.out[j]
	}
	d.out, d.parts = nil, nil
	return out
}

func (d *deduplicator) columns() []transform.Column { return d.prog.Columns() }
