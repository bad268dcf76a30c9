// Deduplication: Spark's dropDuplicates over columns (StreamingDeduplicateExec, no watermark)
// over the HDFS-backed state store provider, one operator (id 0, store "default").

package engine

import (
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

// dedupValueType is the state value StreamingDeduplicateExec stores for every key: a row of
// one null field, whose schema file names it __dummy__ of type void (the same in 3.5 and
// 4.x: testdata/spark-state/*/dedup-hdfs).
var dedupValueType = statefmt.Struct(statefmt.Field{Name: "__dummy__", Type: &statefmt.Type{Name: "null"}, Nullable: true})

// deduplicator keeps the keys seen so far (the state) and outputs each batch's rows whose key
// is new, as StreamingDeduplicateExec does: the first row of a key is output and put in the
// state, every later row of it dropped.
type deduplicator struct {
	stateStore
	prog  *transform.Program
	cols  []int // the key columns' indexes in prog.Columns()
	kinds []transform.Kind
	pool  sync.Pool
	// out holds the rows the batch in progress outputs, with their partitions.
	out   [][]any
	parts []int
}

func newDeduplicator(q *query.Resolved, sparkVersion string) (*deduplicator, error) {
	d := &deduplicator{prog: q.Program, cols: q.Dedup.Columns}
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
		kf = append(kf, statefmt.Field{Name: c.Name, Type: t, Nullable: true})
		d.kinds = append(d.kinds, c.Kind)
	}
	d.stateStore = newStateStore(dedupOperatorName, "deduplication", statefmt.Struct(kf...), dedupValueType, sparkVersion)
	d.pool.New = func() any { return d.prog.NewEvaluator() }
	return d, nil
}

func (d *deduplicator) begin(int64) { d.out, d.parts = nil, nil }

// evict removes nothing: dropDuplicates without a watermark keeps every key.
func (d *deduplicator) evict() {}

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
