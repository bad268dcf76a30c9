// Streaming aggregation: Spark's StateStoreSaveExec with state format version 2 over the
// HDFS-backed state store provider, one operator (id 0, store "default").

package engine

import (
	"bytes"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// Spark names StateStoreSaveExec's operator metadata "stateStoreSave".
const aggOperatorName = "stateStoreSave"

// aggregator holds the state of a streaming aggregation in memory, as the HDFS-backed
// provider does, and writes each batch's changes as Spark's N.delta files; a group's entry
// value is its aggregation buffer.
type aggregator struct {
	stateStore
	g    *transform.Grouping
	mode string
	pool sync.Pool
	ev   eviction
}

func newAggregator(q *query.Resolved, sparkVersion string) (*aggregator, error) {
	g := q.Grouping
	a := &aggregator{g: g, mode: q.OutputMode, ev: newEviction(q)}
	var kf, vf []statefmt.Field
	for i, k := range g.Keys {
		t, err := sparkType(k.Kind)
		if err != nil {
			return nil, fmt.Errorf("group-by %s: %v", k.Name, err)
		}
		// Spark's analyzer pulls a grouping expression that is not a plain column out into
		// an attribute named _groupingexpression (PullOutGroupingExpressions), and trims the
		// alias of a plain column (CleanupAliases): the state key field has that name, the
		// output column the alias.
		name := k.Expr
		if g.KeyIsExpr(i) {
			name = "_groupingexpression"
		}
		f := statefmt.Field{Name: name, Type: t, Nullable: g.KeyNullable[i]}
		a.ev.keyField(i, &f)
		kf = append(kf, f)
	}
	for _, ag := range g.Aggs {
		fields, err := bufferFields(&ag)
		if err != nil {
			return nil, err
		}
		vf = append(vf, fields...)
	}
	a.stateStore = newStateStore(aggOperatorName, "streaming aggregation", statefmt.Struct(kf...), statefmt.Struct(vf...), sparkVersion)
	a.pool.New = func() any { return g.NewEvaluator() }
	return a, nil
}

func sparkType(k transform.Kind) (*statefmt.Type, error) {
	switch k {
	case transform.KindString:
		return &statefmt.Type{Name: "string"}, nil
	case transform.KindBinary:
		return &statefmt.Type{Name: "binary"}, nil
	case transform.KindInt:
		return &statefmt.Type{Name: "integer"}, nil
	case transform.KindLong:
		return &statefmt.Type{Name: "long"}, nil
	case transform.KindDouble:
		return &statefmt.Type{Name: "double"}, nil
	case transform.KindBool:
		return &statefmt.Type{Name: "boolean"}, nil
	case transform.KindTimestamp:
		return &statefmt.Type{Name: "timestamp"}, nil
	case transform.KindWindow:
		return windowType(), nil
	}
	return nil, fmt.Errorf("no state type for a %s column", k)
}

// bufferFields is the aggregation buffer of one aggregate as Spark's declarative aggregates
// define it (aggBufferAttributes): Count a non-null long "count"; Sum of a non-decimal a
// nullable "sum" of the result type (long for integral input, double otherwise); Average a
// double "sum" and a long "count"; Min and Max a nullable "min"/"max" of the input type.
// The same in 3.5 and 4.x (testdata/spark-state/*/agg-hdfs).
func bufferFields(a *transform.Aggregate) ([]statefmt.Field, error) {
	long, double := &statefmt.Type{Name: "long"}, &statefmt.Type{Name: "double"}
	switch a.Func {
	case transform.AggCount:
		return []statefmt.Field{{Name: "count", Type: long}}, nil
	case transform.AggSum:
		t := long
		if a.Kind == transform.KindDouble {
			t = double
		}
		return []statefmt.Field{{Name: "sum", Type: t, Nullable: true}}, nil
	case transform.AggAvg:
		return []statefmt.Field{{Name: "sum", Type: double, Nullable: true}, {Name: "count", Type: long, Nullable: true}}, nil
	}
	t, err := sparkType(a.Kind)
	if err != nil {
		return nil, fmt.Errorf("aggregate %s: %v", a.Name, err)
	}
	return []statefmt.Field{{Name: a.Func, Type: t, Nullable: true}}, nil
}

// initBuffer is the buffer of a new group (initialValues): count 0, sum null, avg (0.0, 0),
// min/max null.
func (a *aggregator) initBuffer() []any {
	var buf []any
	for _, ag := range a.g.Aggs {
		switch ag.Func {
		case transform.AggCount:
			buf = append(buf, int64(0))
		case transform.AggAvg:
			buf = append(buf, float64(0), int64(0))
		default:
			buf = append(buf, nil)
		}
	}
	return buf
}

// update folds one row's aggregate arguments into buf (updateExpressions).
func (a *aggregator) update(buf, args []any) {
	j := 0
	for i, ag := range a.g.Aggs {
		v := args[i]
		switch ag.Func {
		case transform.AggCount:
			if ag.Star || v != nil {
				buf[j] = buf[j].(int64) + 1
			}
		case transform.AggSum:
			if v != nil {
				buf[j] = addNum(buf[j], v)
			}
		case transform.AggAvg:
			if v != nil {
				buf[j] = buf[j].(float64) + toFloat(v)
				buf[j+1] = buf[j+1].(int64) + 1
			}
			j++
		case transform.AggMin, transform.AggMax:
			if v != nil {
				v = stateValue(v)
				if buf[j] == nil {
					buf[j] = v
				} else if c := compareValues(v, buf[j]); (ag.Func == transform.AggMin && c < 0) || (ag.Func == transform.AggMax && c > 0) {
					buf[j] = v
				}
			}
		}
		j++
	}
}

// addNum is coalesce(sum, 0) + v in the buffer's type: long arithmetic wraps on overflow, as
// Spark's non-ANSI Add does.
func addNum(sum, v any) any {
	switch x := v.(type) {
	case float64:
		s, _ := sum.(float64)
		return s + x
	case int64:
		s, _ := sum.(int64)
		return s + x
	case int32:
		s, _ := sum.(int64)
		return s + int64(x)
	}
	return sum
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	}
	return 0
}

// stateValue converts an evaluated value to statefmt's representation.
func stateValue(v any) any {
	if t, ok := v.(time.Time); ok {
		return statefmt.Timestamp(t.UnixMicro())
	}
	return v
}

// outputValue converts a state value to the engine's row representation.
func outputValue(v any) any {
	switch x := v.(type) {
	case statefmt.Timestamp:
		return time.UnixMicro(int64(x)).UTC()
	case *statefmt.Object:
		return windowOutput(x)
	}
	return v
}

// compareValues orders two non-null values of one type as Spark's ordering does (NaN above
// every other double, bytes unsigned).
func compareValues(x, y any) int {
	switch a := x.(type) {
	case int32:
		return cmpOrdered(a, y.(int32))
	case int64:
		return cmpOrdered(a, y.(int64))
	case statefmt.Timestamp:
		return cmpOrdered(a, y.(statefmt.Timestamp))
	case string:
		return cmpOrdered(a, y.(string))
	case []byte:
		return bytes.Compare(a, y.([]byte))
	case bool:
		b := y.(bool)
		switch {
		case a == b:
			return 0
		case !a:
			return -1
		}
		return 1
	case float64:
		b := y.(float64)
		an, bn := math.IsNaN(a), math.IsNaN(b)
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		}
		return cmpOrdered(a, b)
	}
	return 0
}

func cmpOrdered[T int32 | int64 | float64 | string | statefmt.Timestamp](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// results evaluates the aggregates of one buffer (evaluateExpression): count, sum, min and
// max as held, avg sum/count or null for no input.
func (a *aggregator) results(buf []any, out []any) []any {
	j := 0
	for _, ag := range a.g.Aggs {
		switch ag.Func {
		case transform.AggAvg:
			if n := buf[j+1].(int64); n == 0 {
				out = append(out, nil)
			} else {
				out = append(out, buf[j].(float64)/float64(n))
			}
			j++
		default:
			out = append(out, outputValue(buf[j]))
		}
		j++
	}
	return out
}

// apply folds one batch's rows into the state.
func (a *aggregator) apply(id int64, rows []transform.Row) error {
	ev := a.pool.Get().(*transform.GroupEvaluator)
	defer a.pool.Put(ev)
	var keys, args []any
	var wins [][2]int64
	for i := range rows {
		keep, k, ar, err := ev.Eval(&rows[i], keys, args)
		keys, args = k, ar
		if err != nil {
			return err
		}
		if !keep {
			continue
		}
		a.ev.observe(&rows[i])
		if a.g.Window == nil {
			if err := a.fold(id, k, ar); err != nil {
				return err
			}
			continue
		}
		wins = a.g.Window.Windows(k[a.g.Window.Key].(time.Time).UnixMicro(), wins[:0])
		for _, w := range wins {
			k[a.g.Window.Key] = windowKey(w)
			if err := a.fold(id, k, ar); err != nil {
				return err
			}
		}
	}
	return nil
}

// fold folds one row's aggregate arguments into the group of key k, unless the group is
// late (its event time at or below the late-rows watermark: StateStoreSaveExec's
// watermarkPredicateForDataForLateEvents drops it).
func (a *aggregator) fold(id int64, k, ar []any) error {
	vals := make([]any, len(k))
	for j, v := range k {
		vals[j] = stateValue(v)
	}
	if a.ev.late(vals) {
		return nil
	}
	ent, created, err := a.lookup(vals)
	if err != nil {
		return err
	}
	if created {
		ent.value = a.initBuffer()
	}
	ent.touched = id
	a.update(ent.value, ar)
	return nil
}

// output is the batch's result rows: the groups updated by batch id (update mode), every
// group (complete mode) or the groups the watermark evicted (append mode), ordered by
// partition and key bytes.
func (a *aggregator) output(id int64) [][]any {
	var keys []string
	for k, ent := range a.entries {
		if a.mode == query.OutputComplete || (a.mode == query.OutputUpdate && ent.touched == id) || (a.mode == query.OutputAppend && ent.gone) {
			keys = append(keys, k)
		}
	}
	ents := a.sortKeys(keys)
	out := make([][]any, 0, len(keys))
	for _, ent := range ents {
		row := make([]any, 0, len(ent.key.Values)+len(a.g.Aggs))
		for _, v := range ent.key.Values {
			row = append(row, outputValue(v))
		}
		out = append(out, a.results(ent.value, row))
	}
	return out
}

func (a *aggregator) columns() []transform.Column { return a.g.Columns() }

func (a *aggregator) begin(int64) {}

// evict marks the groups the batch's watermark evicts.
func (a *aggregator) evict() { a.ev.evict(a.entries) }
