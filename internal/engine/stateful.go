// The stateful operators' shared state store for one operator (id 0, store "default"), held in
// memory as Spark's HDFS-backed provider holds it, loaded from the checkpoint with ckpt's state
// reader and committed through the provider the offsets log records (statestore.go: the
// HDFS-backed provider's N.delta files or the RocksDB provider's, with snapshots and
// maintenance) with the one state writer (internal/statefmt). Streaming aggregation (agg.go)
// and deduplication (dedup.go) use it.

package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// stateOperator is the id of the one stateful operator a ckpt query has: Spark numbers them
// from 0.
const stateOperator = 0

// stateEntry is one key of the state: the key (decoded, for output), its partition and the
// value row's fields.
type stateEntry struct {
	key     *statefmt.Object
	part    int
	value   []any
	touched int64 // the batch that last updated it
	gone    bool  // evicted by the batch being run: written as a delete, then dropped
}

// stateStore is one operator's state: every key, in memory.
type stateStore struct {
	// operatorName is the name in Spark 4's operator metadata ("stateStoreSave", "dedupe");
	// what names the operator in errors ("aggregation", "deduplication").
	operatorName, what string
	keyType            *statefmt.Type
	valueType          *statefmt.Type
	partitions         int
	codec              string
	providerClass      string        // the recorded state store provider
	provider           stateProvider // writes the versions (statestore.go)
	// metadata: write state/0/_metadata/metadata (Spark 4.x writes it, 3.5 does not).
	metadata bool
	entries  map[string]*stateEntry
	// version is the state version held (the batch id it is the state before); -1: not loaded.
	version int64
	// keyNames are keyType's field names, for the key rows built from evaluated values.
	keyNames []string
}

func newStateStore(operatorName, what string, key, value *statefmt.Type, sparkVersion string) stateStore {
	s := stateStore{operatorName: operatorName, what: what, keyType: key, valueType: value, version: -1,
		entries: map[string]*stateEntry{}, metadata: scala213(sparkVersion)}
	for _, f := range key.Fields {
		s.keyNames = append(s.keyNames, f.Name)
	}
	return s
}

// statefulOp is a stateful operator as a batch runs it.
type statefulOp interface {
	store() *stateStore
	// begin starts (or restarts) batch id.
	begin(id int64)
	// apply folds rows of batch id into the state; calls are serialised.
	apply(id int64, rows []transform.Row) error
	// evict marks the keys the batch removes (gone) before its output and commit.
	evict()
	// output is the batch's result rows, in columns() order.
	output(id int64) [][]any
	columns() []transform.Column
}

func (s *stateStore) store() *stateStore { return s }

// lookup returns the entry of the key row with these values (statefmt's representation),
// creating it in the partition of Spark's HashPartitioning over the key columns when it is
// new; created says so.
func (s *stateStore) lookup(vals []any) (ent *stateEntry, created bool, err error) {
	obj := &statefmt.Object{Names: s.keyNames, Values: vals}
	raw, err := statefmt.EncodeRow(obj, s.keyType)
	if err != nil {
		return nil, false, err
	}
	if ent = s.entries[string(raw)]; ent != nil {
		return ent, false, nil
	}
	cols := make([]int, len(vals))
	for j := range cols {
		cols[j] = j
	}
	p, err := statefmt.Partition(obj, s.keyType, cols, s.partitions)
	if err != nil {
		return nil, false, err
	}
	ent = &stateEntry{key: obj, part: p, touched: -1}
	s.entries[string(raw)] = ent
	return ent, true, nil
}

// load reads state version v (the state batch v runs against) of every partition; the
// in-memory state is replaced. Version 0 is the empty state.
func (s *stateStore) load(ctx context.Context, e *Engine, v int64) error {
	s.entries = map[string]*stateEntry{}
	s.version = v
	s.provider.loaded(v)
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
	if l.Operator(stateOperator) == nil {
		return fmt.Errorf("the checkpoint has no state for operator %d at version %d (state/%d): it was not written by a %s query", stateOperator, v, stateOperator, s.what)
	}
	r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: stateOperator, Partition: -1, Version: v})
	if err != nil {
		return err
	}
	if sc := r.Schema(); sc != nil {
		fam := sc.Family(statefmt.DefaultColumnFamily)
		if fam == nil || fam.Key.String() != s.keyType.String() || fam.Value.String() != s.valueType.String() {
			return fmt.Errorf("the state schema on disk (key %s, value %s) is not the query's (key %s, value %s): the checkpoint belongs to another %s",
				fam.KeyString, fam.ValueString, s.keyType, s.valueType, s.what)
		}
	}
	return r.Each(ctx, func(row *state.Row) error {
		k, err := statefmt.DecodeRow(row.RawKey, s.keyType)
		if err != nil {
			return fmt.Errorf("state row key in partition %d: %w", row.Partition, err)
		}
		val, err := statefmt.DecodeRow(row.RawValue, s.valueType)
		if err != nil {
			return fmt.Errorf("state row value in partition %d: %w", row.Partition, err)
		}
		s.entries[string(row.RawKey)] = &stateEntry{key: k, part: row.Partition, value: val.Values, touched: -1}
		return nil
	})
}

// sortKeys orders keys by partition and key bytes and returns their entries in that order.
// The keys are sorted with their entries at hand: map lookups per comparison cost more than
// the sort itself (a third of the commit's own CPU at 10,000 groups).
func (s *stateStore) sortKeys(keys []string) []*stateEntry {
	type keyEnt struct {
		key string
		ent *stateEntry
	}
	ps := make([]keyEnt, len(keys))
	for i, k := range keys {
		ps[i] = keyEnt{k, s.entries[k]}
	}
	slices.SortFunc(ps, func(x, y keyEnt) int {
		if c := x.ent.part - y.ent.part; c != 0 {
			return c
		}
		return strings.Compare(x.key, y.key)
	})
	ents := make([]*stateEntry, len(ps))
	for i := range ps {
		keys[i], ents[i] = ps[i].key, ps[i].ent
	}
	return ents
}

// commit writes state version id+1 through the provider (every partition, as every task of the
// stateful stage commits its store: the keys batch id updated, then those it evicted, removed),
// the schema file with the first version, and Spark 4.x's
// operator metadata. A re-run batch rewrites its files, as the provider overwrites them.
func (s *stateStore) commit(ctx context.Context, e *Engine, id int64) error {
	dir := func(p int) string { return path.Join("state", strconv.Itoa(stateOperator), strconv.Itoa(p)) }
	if id == 0 {
		schema, err := statefmt.EncodeSchemaV2(s.keyType, s.valueType)
		if err != nil {
			return err
		}
		if err := writeOnce(ctx, e, path.Join(dir(0), "_metadata", "schema"), schema); err != nil {
			return err
		}
		if s.metadata {
			m := &logformat.OperatorMetadata{Version: 1, OperatorID: stateOperator, OperatorName: s.operatorName,
				Stores: []logformat.StoreMetadata{{StoreName: statefmt.DefaultColumnFamily, NumPartitions: s.partitions}}}
			if err := writeOnce(ctx, e, path.Join("state", strconv.Itoa(stateOperator), "_metadata", "metadata"), m.Marshal()); err != nil {
				return err
			}
		}
	}
	view := &storeView{s: s, id: id}
	// After partition 0's files, before the others'.
	if err := s.provider.commit(ctx, id+1, view, func() { e.failAt(id, PhaseMidStateCommit) }); err != nil {
		return err
	}
	for k, ent := range s.entries {
		if ent.gone {
			delete(s.entries, k)
		}
	}
	s.version = id + 1
	return nil
}

// maintain is the provider's maintenance after version v (snapshots, old versions deleted),
// which Spark runs in the background: an error is logged and the run goes on, as in Spark
// (the version is committed).
func (s *stateStore) maintain(ctx context.Context, e *Engine) {
	if err := s.provider.maintain(ctx, s.version, &storeView{s: s, id: s.version - 1}); err != nil {
		e.logf("State store maintenance after version %d: %v", s.version, err)
	}
}

// writeOnce writes a file that is written once per query; one already there is kept.
func writeOnce(ctx context.Context, e *Engine, name string, data []byte) error {
	if err := e.opts.Store.WriteFile(ctx, name, data); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// runStateful runs batch id of a stateful query: read (from, end], load the state it runs
// against when it is not the one held, fold the rows in, write state version id+1 and return
// the output rows.
func (e *Engine) runStateful(ctx context.Context, op statefulOp, id int64, from, end logformat.KafkaOffsets) (*Batch, error) {
	s := op.store()
	if s.partitions == 0 {
		if err := s.configure(e.conf); err != nil {
			return nil, err
		}
		var err error
		if s.provider, err = newProvider(s.providerClass, e.stateConf(stateOperator, s.partitions, s.codec)); err != nil {
			return nil, err
		}
	}
	if s.version != id {
		if err := s.load(ctx, e, id); err != nil {
			return nil, fmt.Errorf("loading state version %d for batch %d: %w", id, id, err)
		}
	}
	// The partitions are read in parallel and folded in one at a time: the state is one map,
	// as the HDFS-backed provider's is per partition.
	var mu sync.Mutex
	var input int64
	s.version = -1 // until the batch is committed: a failed batch reloads its state
	op.begin(id)
	err := e.src.Read(ctx, from, end, e.parallelism, func(_ logformat.TopicPartition, rs []transform.Row) error {
		mu.Lock()
		defer mu.Unlock()
		input += int64(len(rs))
		return op.apply(id, rs)
	})
	if err != nil {
		return nil, err
	}
	b := &Batch{ID: id, Columns: op.columns(), InputRows: input}
	op.evict()
	out := op.output(id) // before the commit drops the evicted keys
	if err := s.commit(ctx, e, id); err != nil {
		return nil, err
	}
	s.maintain(ctx, e)
	if len(out) > 0 {
		b.Parts = []Part{{Values: out}}
	}
	b.NumRows = int64(len(out))
	return b, nil
}

// configure sets the partitions, codec and provider from the query's recorded conf
// (newProvider refuses a provider ckpt does not write).
func (s *stateStore) configure(conf []logformat.KV) error {
	s.partitions, s.codec, s.providerClass = 0, statefmt.DefaultCodec, query.HDFSStateProvider
	for _, kv := range conf {
		switch kv.Key {
		case query.ConfShufflePartitions:
			n, err := strconv.Atoi(kv.Value)
			if err != nil || n < 1 {
				return fmt.Errorf("spark.sql.shuffle.partitions=%q in the offsets log: want a number ≥ 1", kv.Value)
			}
			s.partitions = n
		case "spark.sql.streaming.stateStore.compression.codec":
			c, ok := statefmt.CanonicalCodec(kv.Value)
			if !ok {
				return fmt.Errorf("spark.sql.streaming.stateStore.compression.codec=%q in the offsets log: not a codec ckpt writes", kv.Value)
			}
			s.codec = c
		case query.ConfStateProvider:
			s.providerClass = kv.Value
		case "spark.sql.streaming.aggregation.stateFormatVersion":
			// Only StateStoreSaveExec's state depends on it.
			if s.operatorName == aggOperatorName && kv.Value != "2" {
				return fmt.Errorf("spark.sql.streaming.aggregation.stateFormatVersion=%s in the offsets log: ckpt run writes only version 2", kv.Value)
			}
		}
	}
	if s.partitions == 0 {
		return errors.New("no spark.sql.shuffle.partitions in the offsets log")
	}
	return nil
}
