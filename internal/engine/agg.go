// Streaming aggregation: Spark's StateStoreSaveExec with state format version 2 over the
// HDFS-backed state store provider, one operator (id 0, store "default").

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// The one stateful operator an aggregation query has: Spark numbers operators from 0 and
// names StateStoreSaveExec's metadata "stateStoreSave".
const (
	aggOperator     = 0
	aggOperatorName = "stateStoreSave"
)

// aggEntry is one group: its key (decoded, for output), its partition and its aggregation
// buffer (the state value's fields).
type aggEntry struct {
	key     *statefmt.Object
	part    int
	buf     []any
	touched int64 // the batch that last updated it
}

// aggregator holds the state of a streaming aggregation in memory, as the HDFS-backed
// provider does, and writes each batch's changes as Spark's N.delta files.
type aggregator struct {
	g          *transform.Grouping
	mode       string
	keyType    *statefmt.Type
	valueType  *statefmt.Type
	partitions int
	codec      string
	// metadata: write state/0/_metadata/metadata (Spark 4.x writes it, 3.5 does not).
	metadata bool
	groups   map[string]*aggEntry
	// version is the state version held (the batch id it is the state before); -1: not loaded.
	version int64
	pool    sync.Pool
}

func newAggregator(q *query.Resolved, sparkVersion string) (*aggregator, error) {
	g := q.Grouping
	a := &aggregator{g: g, mode: q.OutputMode, version: -1, groups: map[string]*aggEntry{}, metadata: scala213(sparkVersion)}
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
		kf = append(kf, statefmt.Field{Name: name, Type: t, Nullable: g.KeyNullable[i]})
	}
	for _, ag := range g.Aggs {
		fields, err := bufferFields(&ag)
		if err != nil {
			return nil, err
		}
		vf = append(vf, fields...)
	}
	a.keyType, a.valueType = statefmt.Struct(kf...), statefmt.Struct(vf...)
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
	if t, ok := v.(statefmt.Timestamp); ok {
		return time.UnixMicro(int64(t)).UTC()
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

// load reads state version v (the state batch v runs against) of every partition; the
// in-memory state is replaced. Version 0 is the empty state.
func (a *aggregator) load(ctx context.Context, e *Engine, v int64) error {
	a.groups = map[string]*aggEntry{}
	a.version = v
	if v == 0 {
		return nil
	}
	cp, err := checkpoint.Load(ctx, e.opts.Store)
	if err != nil {
		return err
	}
	l, err := state.Scan(ctx, e.opts.Store)
	if err != nil {
		return err
	}
	if l.Operator(aggOperator) == nil {
		return fmt.Errorf("the checkpoint has no state for operator %d at version %d (state/%d): it was not written by an aggregation query", aggOperator, v, aggOperator)
	}
	r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: aggOperator, Partition: -1, Version: v})
	if err != nil {
		return err
	}
	if s := r.Schema(); s != nil {
		fam := s.Family(statefmt.DefaultColumnFamily)
		if fam == nil || fam.Key.String() != a.keyType.String() || fam.Value.String() != a.valueType.String() {
			return fmt.Errorf("the state schema on disk (key %s, value %s) is not the query's (key %s, value %s): the checkpoint belongs to another aggregation",
				fam.KeyString, fam.ValueString, a.keyType, a.valueType)
		}
	}
	return r.Each(ctx, func(row *state.Row) error {
		k, err := statefmt.DecodeRow(row.RawKey, a.keyType)
		if err != nil {
			return fmt.Errorf("state row key in partition %d: %w", row.Partition, err)
		}
		val, err := statefmt.DecodeRow(row.RawValue, a.valueType)
		if err != nil {
			return fmt.Errorf("state row value in partition %d: %w", row.Partition, err)
		}
		a.groups[string(row.RawKey)] = &aggEntry{key: k, part: row.Partition, buf: val.Values, touched: -1}
		return nil
	})
}

// apply folds one batch's rows into the state.
func (a *aggregator) apply(id int64, rows []transform.Row) error {
	ev := a.pool.Get().(*transform.GroupEvaluator)
	defer a.pool.Put(ev)
	var keys, args []any
	names := make([]string, len(a.keyType.Fields))
	for i, f := range a.keyType.Fields {
		names[i] = f.Name
	}
	for i := range rows {
		keep, k, ar, err := ev.Eval(&rows[i], keys, args)
		keys, args = k, ar
		if err != nil {
			return err
		}
		if !keep {
			continue
		}
		vals := make([]any, len(k))
		for j, v := range k {
			vals[j] = stateValue(v)
		}
		obj := &statefmt.Object{Names: names, Values: vals}
		raw, err := statefmt.EncodeRow(obj, a.keyType)
		if err != nil {
			return err
		}
		ent := a.groups[string(raw)]
		if ent == nil {
			cols := make([]int, len(vals))
			for j := range cols {
				cols[j] = j
			}
			p, err := statefmt.Partition(obj, a.keyType, cols, a.partitions)
			if err != nil {
				return err
			}
			ent = &aggEntry{key: obj, part: p, buf: a.initBuffer()}
			a.groups[string(raw)] = ent
		}
		ent.touched = id
		a.update(ent.buf, ar)
	}
	return nil
}

// output is the batch's result rows: the groups updated by batch id (update mode) or every
// group (complete mode), ordered by partition and key bytes.
func (a *aggregator) output(id int64) [][]any {
	var keys []string
	for k, ent := range a.groups {
		if a.mode == query.OutputComplete || ent.touched == id {
			keys = append(keys, k)
		}
	}
	a.sortKeys(keys)
	out := make([][]any, 0, len(keys))
	for _, k := range keys {
		ent := a.groups[k]
		row := make([]any, 0, len(ent.key.Values)+len(a.g.Aggs))
		for _, v := range ent.key.Values {
			row = append(row, outputValue(v))
		}
		out = append(out, a.results(ent.buf, row))
	}
	return out
}

func (a *aggregator) sortKeys(keys []string) {
	slices.SortFunc(keys, func(x, y string) int {
		if c := a.groups[x].part - a.groups[y].part; c != 0 {
			return c
		}
		if x < y {
			return -1
		} else if x > y {
			return 1
		}
		return 0
	})
}

// commit writes state version id+1: every partition's (id+1).delta with the groups batch id
// updated (an empty delta for a partition with none, as every task of the stateful stage
// commits its store), the schema file with the first version, and Spark 4.x's operator
// metadata. A re-run batch rewrites its delta files, as the provider overwrites them.
func (a *aggregator) commit(ctx context.Context, e *Engine, id int64) error {
	st := e.opts.Store
	dir := func(p int) string { return path.Join("state", strconv.Itoa(aggOperator), strconv.Itoa(p)) }
	if id == 0 {
		schema, err := statefmt.EncodeSchemaV2(a.keyType, a.valueType)
		if err != nil {
			return err
		}
		if err := writeOnce(ctx, e, path.Join(dir(0), "_metadata", "schema"), schema); err != nil {
			return err
		}
		if a.metadata {
			m := &logformat.OperatorMetadata{Version: 1, OperatorID: aggOperator, OperatorName: aggOperatorName,
				Stores: []logformat.StoreMetadata{{StoreName: statefmt.DefaultColumnFamily, NumPartitions: a.partitions}}}
			if err := writeOnce(ctx, e, path.Join("state", strconv.Itoa(aggOperator), "_metadata", "metadata"), m.Marshal()); err != nil {
				return err
			}
		}
	}
	var keys []string
	for k, ent := range a.groups {
		if ent.touched == id {
			keys = append(keys, k)
		}
	}
	a.sortKeys(keys)
	next := 0
	for p := 0; p < a.partitions; p++ {
		var buf bytes.Buffer
		w, err := statefmt.NewFileWriter(a.codec, &buf)
		if err != nil {
			return err
		}
		for ; next < len(keys) && a.groups[keys[next]].part == p; next++ {
			ent := a.groups[keys[next]]
			val, err := statefmt.EncodeRow(&statefmt.Object{Values: ent.buf}, a.valueType)
			if err != nil {
				return err
			}
			if err := w.Put([]byte(keys[next]), val); err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		f := path.Join(dir(p), strconv.FormatInt(id+1, 10)+".delta")
		err = st.WriteFile(ctx, f, buf.Bytes())
		if errors.Is(err, fs.ErrExist) {
			if err = st.Delete(ctx, f); err == nil {
				err = st.WriteFile(ctx, f, buf.Bytes())
			}
		}
		if err != nil {
			return err
		}
	}
	a.version = id + 1
	return nil
}

// writeOnce writes a file that is written once per query; one already there is kept.
func writeOnce(ctx context.Context, e *Engine, name string, data []byte) error {
	if err := e.opts.Store.WriteFile(ctx, name, data); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// aggregate runs batch id of an aggregation query: read (from, end], load the state it runs
// against when it is not the one held, fold the rows in, write state version id+1 and return
// the output rows.
func (e *Engine) aggregate(ctx context.Context, id int64, from, end logformat.KafkaOffsets) (*Batch, error) {
	a := e.agg
	if a.partitions == 0 {
		if err := a.configure(e.conf); err != nil {
			return nil, err
		}
	}
	if a.version != id {
		if err := a.load(ctx, e, id); err != nil {
			return nil, fmt.Errorf("loading state version %d for batch %d: %w", id, id, err)
		}
	}
	// The partitions are read in parallel and folded in one at a time: the state is one map,
	// as the HDFS-backed provider's is per partition.
	var mu sync.Mutex
	var input int64
	a.version = -1 // until the batch is committed: a failed batch reloads its state
	err := e.src.Read(ctx, from, end, e.parallelism, func(_ logformat.TopicPartition, rs []transform.Row) error {
		mu.Lock()
		defer mu.Unlock()
		input += int64(len(rs))
		return a.apply(id, rs)
	})
	if err != nil {
		return nil, err
	}
	b := &Batch{ID: id, Columns: a.g.Columns(), InputRows: input}
	if err := a.commit(ctx, e, id); err != nil {
		return nil, err
	}
	out := a.output(id)
	if len(out) > 0 {
		b.Parts = []Part{{Values: out}}
	}
	b.NumRows = int64(len(out))
	return b, nil
}

// aggregationConf sets the partitions and codec from the query's recorded conf.
func (a *aggregator) configure(conf []logformat.KV) error {
	a.partitions, a.codec = 0, statefmt.DefaultCodec
	for _, kv := range conf {
		switch kv.Key {
		case query.ConfShufflePartitions:
			n, err := strconv.Atoi(kv.Value)
			if err != nil || n < 1 {
				return fmt.Errorf("spark.sql.shuffle.partitions=%q in the offsets log: want a number ≥ 1", kv.Value)
			}
			a.partitions = n
		case "spark.sql.streaming.stateStore.compression.codec":
			c, ok := statefmt.CanonicalCodec(kv.Value)
			if !ok {
				return fmt.Errorf("spark.sql.streaming.stateStore.compression.codec=%q in the offsets log: not a codec ckpt writes", kv.Value)
			}
			a.codec = c
		case "spark.sql.streaming.stateStore.providerClass":
			if kv.Value != hdfsProvider {
				return fmt.Errorf("the checkpoint's state store provider is %s: ckpt run writes only the HDFS-backed provider's state (%s)", kv.Value, hdfsProvider)
			}
		case "spark.sql.streaming.aggregation.stateFormatVersion":
			if kv.Value != "2" {
				return fmt.Errorf("spark.sql.streaming.aggregation.stateFormatVersion=%s in the offsets log: ckpt run writes only version 2", kv.Value)
			}
		}
	}
	if a.partitions == 0 {
		return errors.New("no spark.sql.shuffle.partitions in the offsets log")
	}
	return nil
}

const hdfsProvider = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
