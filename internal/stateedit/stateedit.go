// Package stateedit plans `ckpt state edit`: dropping the state rows that match an expression
// over their key and value, one operator's whole state, or the rows a given watermark would
// already have evicted. State files are create-only, so an edit changes no existing file: like
// `ckpt state repartition` (whose writing half it shares) it adds a no-data batch L+1 after the
// last committed batch L and writes state version L+2 of every store and partition, which the
// restart's first batch loads:
//
//   - HDFS-backed store, rows dropped: L+2.delta holding a removal of each dropped key. Spark
//     loads L+2 as it loads every version it wrote itself, L+1 and then the delta, so the rows
//     kept are not rewritten and the file is as small as what is dropped.
//   - HDFS-backed store of a dropped operator: an empty L+2.snapshot (Spark loads a version's
//     snapshot before looking at any delta), a few bytes whatever the state's size.
//   - RocksDB store: L+2.changelog (format v1) holding a delete of each dropped key. Spark's
//     RocksDB loads the newest checkpoint zip at or below L+2 and replays the changelogs after
//     it, whatever the changelog checkpointing conf of the restart.
//   - Every store of every other operator: an empty delta or changelog, since the restart loads
//     version L+2 of every store and partition.
//
// The plan is a journal plan: applied with a journal, verified, undone byte for byte.
package stateedit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/repartition"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

// Strategy names a state edit in its journal.
const Strategy journal.Strategy = "state-edit"

// The edits.
const (
	EditWhere        = "where"
	EditDropOperator = "drop-operator"
	EditEvict        = "evict-before-watermark"
)

// Options configure NewPlan. Exactly one of Where, DropOperator and Evict is set.
type Options struct {
	// Where drops the rows for which this expression over key, value and partition_id is true.
	Where string
	// DropOperator drops every row of operator Operator.
	DropOperator bool
	// Evict drops the rows that watermark EvictBefore (milliseconds since the epoch) would
	// already have evicted.
	Evict       bool
	EvictBefore int64
	// Operator limits the edit to one operator (required by DropOperator); HasOperator says it
	// is set.
	Operator    int64
	HasOperator bool
	// Planner is the restart the plan is predicted and verified for.
	Planner recovery.Options
	// Stage, when set, receives every new state file as it is written, streamed to
	// journal.StagedPath(StageRun, path) (--execute: the checkpoint's own store), and the plan
	// places each by a copy: neither the plan nor the journal holds the files (a dropped
	// RocksDB operator's changelogs name every key). nil: the files are held in the plan.
	Stage    storage.Store
	StageRun string
}

// Plan is what an edit would write.
type Plan struct {
	Checkpoint string `json:"checkpoint"`
	Edit       string `json:"edit"`
	// Where is the expression (EditWhere); EvictBefore the watermark in ms (EditEvict).
	Where       string `json:"where,omitempty"`
	EvictBefore *int64 `json:"evictBeforeMs,omitempty"`
	// Batch is L, the last committed batch; NewBatch L+1 the no-data batch the plan adds;
	// Version L+2 the state version written for every store and partition.
	Batch      int64       `json:"batch"`
	NewBatch   int64       `json:"newBatch"`
	Version    int64       `json:"version"`
	Partitions int         `json:"partitions"`
	Codec      string      `json:"codec"`
	Operators  []*Operator `json:"operators"`
	// Rows is the number of rows read, Dropped the number of rows the edit removes.
	Rows    int64            `json:"rows"`
	Dropped int64            `json:"dropped"`
	Bytes   int64            `json:"bytes"`
	Actions []journal.Action `json:"actions"`
	Before  *recovery.Result `json:"before"`
	After   *recovery.Result `json:"after"`
	Refused string           `json:"refused,omitempty"`
	// Warnings say what the edit does not change (the watermark, a live query's output).
	Warnings []string `json:"warnings"`
	// Staged says the new state files were written to StageRun's staging directory (Options.Stage).
	Staged   bool   `json:"staged"`
	StageRun string `json:"stageRun,omitempty"`

	options recovery.Options
}

// Operator is one stateful operator of the plan.
type Operator struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Edited is false for the operators the edit leaves as they are (they get empty versions).
	Edited bool `json:"edited"`
	// EventTime is the key column the watermark is compared with (EditEvict).
	EventTime string   `json:"eventTimeColumn,omitempty"`
	Refused   string   `json:"refused,omitempty"`
	Stores    []*Store `json:"stores"`
}

// Store is one store of an operator: what version L+2 of each partition is.
type Store struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// File is the kind of file written: delta, snapshot or changelog.
	File    string  `json:"file"`
	Rows    int64   `json:"rows"`
	Dropped int64   `json:"dropped"`
	PerPart []int64 `json:"droppedPerPartition"`
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *Plan) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: Strategy, Actions: p.Actions, After: p.After, Options: p.options}
}

func (p *Plan) refuse(format string, args ...any) (*Plan, error) {
	p.Refused = fmt.Sprintf(format, args...)
	p.Actions = []journal.Action{}
	return p, nil
}

// refusal is a reason an operator cannot be edited (not a failure to read it).
type refusal string

func (r refusal) Error() string { return string(r) }

// ErrOptions is the cause of every error NewPlan returns for its options (a usage error).
var ErrOptions = errors.New("invalid edit")

// NewPlan plans the edit o of the checkpoint in s. It reads the latest committed state version
// of the edited operators once and changes nothing.
func NewPlan(ctx context.Context, s storage.Store, o Options) (*Plan, error) {
	p := &Plan{Checkpoint: s.URI(), Operators: []*Operator{}, Actions: []journal.Action{}, Warnings: []string{}, options: o.Planner}
	var cond *transform.Condition
	switch n := btoi(o.Where != "") + btoi(o.DropOperator) + btoi(o.Evict); {
	case n != 1:
		return nil, fmt.Errorf("%w: choose one: --where EXPR, --drop-operator (with --operator ID) or --evict-before-watermark", ErrOptions)
	case o.DropOperator && !o.HasOperator:
		return nil, fmt.Errorf("%w: --drop-operator needs --operator ID: the operator whose state is dropped", ErrOptions)
	case o.Where != "":
		p.Edit, p.Where = EditWhere, o.Where
		var err error
		if cond, err = transform.CompileCondition(o.Where, map[string]any{"key": map[string]any{}, "value": map[string]any{}, "partition_id": 0}); err != nil {
			return nil, fmt.Errorf("%w: --where %v", ErrOptions, err)
		}
	case o.DropOperator:
		p.Edit = EditDropOperator
	default:
		p.Edit, p.EvictBefore = EditEvict, &o.EvictBefore
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	if p.Before, err = recovery.Plan(ctx, cp, o.Planner); err != nil {
		return nil, err
	}
	base, why, err := repartition.LoadBase(ctx, cp)
	if err != nil {
		return nil, err
	}
	if why != nil {
		return p.refuse("%s", why.Reason)
	}
	last, off := base.Batch, base.Offsets
	p.Batch, p.NewBatch, p.Version = last, last+1, last+2
	p.Partitions, p.Codec = base.Partitions, base.Codec
	listing, err := state.Scan(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(listing.Operators) == 0 {
		return p.refuse("the checkpoint has no state (no stateful operator under state/)")
	}
	if o.HasOperator && listing.Operator(o.Operator) == nil {
		ids := []string{}
		for _, op := range listing.Operators {
			ids = append(ids, strconv.FormatInt(op.ID, 10))
		}
		return p.refuse("no operator %d under state/ (operators: %s)", o.Operator, strings.Join(ids, ", "))
	}
	if o.Evict && off.Metadata != nil && o.EvictBefore <= off.Metadata.BatchWatermarkMs {
		p.Warnings = append(p.Warnings, fmt.Sprintf("watermark %d is not past batch %d's own (%d): Spark has evicted that state already, so little or nothing may match", o.EvictBefore, last, off.Metadata.BatchWatermarkMs))
	}
	crc := repartition.HasChecksum(ctx, s, cp, last)
	files := map[string][]byte{}
	var order []string
	add := func(f string, data []byte) {
		files[f] = data
		order = append(order, f)
	}
	e := &editor{cp: cp, listing: listing, plan: p, opts: o, cond: cond, crc: crc, add: add}
	var ov *journal.Overlay
	if o.Stage != nil {
		ov = journal.NewOverlay(cp)
		e.staged = repartition.NewStaged(ctx, s, ov, o.Stage, o.StageRun, p.Codec, crc, func(f string) string { return reason(f, p) })
		defer e.staged.Abort()
	}
	for _, lop := range listing.Operators {
		op, err := e.operator(ctx, lop)
		if err != nil {
			return nil, err
		}
		p.Operators = append(p.Operators, op)
		if op.Refused != "" {
			hint := ""
			if op.Edited && !o.HasOperator && len(listing.Operators) > 1 {
				hint = " (--operator ID limits the edit to one operator)"
			}
			return p.refuse("operator %d (%s): %s%s", op.ID, op.Name, op.Refused, hint)
		}
	}
	if p.Dropped == 0 {
		return p.refuse("nothing matches: the edit would drop no row of %d", p.Rows)
	}
	// offsets/L+1 is offsets/L unchanged: the edit is of state, not of the watermark.
	if err := repartition.NoDataBatch(ctx, cp, last, off, crc, func(f string, data []byte) error { add(f, data); return nil }); err != nil {
		return nil, err
	}
	if e.staged != nil {
		// The state files are staged copies; the log files follow as writes.
		p.Actions, p.Bytes = e.staged.Actions()
		for _, f := range order {
			a := journal.Action{Op: journal.OpWrite, Path: f, Data: files[f], Reason: reason(f, p)}
			if err := ov.Add(ctx, &a); err != nil {
				return nil, err
			}
			p.Bytes += a.Size
			p.Actions = append(p.Actions, a)
		}
	} else if p.Actions, p.Bytes, ov, err = repartition.Writes(ctx, cp, order, files, func(f string) string { return reason(f, p) }); err != nil {
		return nil, err
	}
	if p.After, err = ov.Predict(ctx, o.Planner); err != nil {
		return nil, err
	}
	if p.After.Outcome == "fail" {
		return p.refuse("the recovery planner predicts that the restart after the edit fails: %s", p.After.Verdict())
	}
	p.Warnings = append(p.Warnings, "the query's output already written is not changed: only the state the restart loads")
	if e.staged != nil {
		p.Staged, p.StageRun = true, o.StageRun
		e.staged.Keep() // placed by the journal from here on, or removed by the caller
	}
	if o.Evict {
		p.Warnings = append(p.Warnings, "in append mode Spark emits a window's final row as it evicts it; the edit drops the rows and emits nothing")
	}
	return p, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type editor struct {
	cp      *checkpoint.Checkpoint
	listing *state.Listing
	plan    *Plan
	opts    Options
	cond    *transform.Condition
	crc     bool
	add     func(string, []byte)
	// staged streams the state files to the stage (Options.Stage); nil: held in memory.
	staged *repartition.Staged
}

// operator writes version L+2 of every store and partition of one operator.
func (e *editor) operator(ctx context.Context, lop *state.Operator) (*Operator, error) {
	op := &Operator{ID: lop.ID, Stores: []*Store{}}
	op.Edited = !e.opts.HasOperator || e.opts.Operator == lop.ID
	join := isJoin(lop)
	switch {
	case lop.MetadataFile != "":
		data, err := e.cp.Store.ReadFile(ctx, lop.MetadataFile)
		if err != nil {
			return nil, err
		}
		m, err := logformat.ParseOperatorMetadata(lop.MetadataFile, data)
		if err != nil {
			return nil, err
		}
		op.Name = m.OperatorName
		join = m.OperatorName == "symmetricHashJoin"
	case len(lop.MetadataV2Files) > 0:
		op.Name = "transformWithState"
	case join:
		op.Name = "(inferred: stream-stream join)"
	default:
		op.Name = "(no operator metadata)"
	}
	if op.Name == "transformWithState" {
		// Even an operator left as it is needs a version L+2, and its changelogs are typed
		// records in column families, which ckpt does not write.
		op.Refused = "transformWithState keeps its variables and timers in RocksDB column families (typed changelog records), which ckpt does not write"
		return op, nil
	}
	rowEdit := op.Edited && e.plan.Edit != EditDropOperator
	if rowEdit && join {
		op.Refused = "a stream-stream join keeps each key in four stores (key to count of values, key and index to value) that must change together; " +
			"ckpt does not drop single rows of a join (--drop-operator drops it whole)"
		return op, nil
	}
	if rowEdit && !known(op.Name) {
		op.Refused = fmt.Sprintf("ckpt edits the rows of streaming aggregations, dropDuplicates and flatMapGroupsWithState; for %q it cannot tell what a row stands for", op.Name)
		return op, nil
	}
	for _, ls := range lop.Stores {
		st, err := e.store(ctx, lop, ls, op)
		if err != nil {
			var r refusal
			if errors.As(err, &r) {
				op.Refused = string(r)
				return op, nil
			}
			return nil, err
		}
		op.Stores = append(op.Stores, st)
	}
	return op, nil
}

func known(name string) bool {
	switch name {
	case "stateStoreSave", "dedupe", "dedupeWithinWatermark", "flatMapGroupsWithState", "(no operator metadata)":
		return true
	}
	return false
}

func isJoin(lop *state.Operator) bool {
	n := 0
	for _, s := range lop.Stores {
		for _, j := range state.JoinStoreNames {
			if s.Name == j {
				n++
			}
		}
	}
	return n == len(state.JoinStoreNames)
}

// store writes version L+2 of each partition of one store.
func (e *editor) store(ctx context.Context, lop *state.Operator, ls *state.Store, op *Operator) (*Store, error) {
	p := e.plan
	st := &Store{Name: ls.Name, Provider: ls.Provider, PerPart: make([]int64, p.Partitions)}
	switch ls.Provider {
	case state.ProviderHDFS:
		st.File = state.KindDelta
		if op.Edited && p.Edit == EditDropOperator {
			st.File = state.KindSnapshot
		}
	case state.ProviderRocksDB:
		st.File = state.KindChangelog
	default:
		return nil, refusal(fmt.Sprintf("store %s: the provider cannot be told from its files", ls.Name))
	}
	for _, lp := range ls.Partitions {
		for _, f := range lp.Files {
			if f.UniqueID != "" {
				return nil, refusal("state checkpoint format v2 (file names with unique ids): the new version's ids would go in the commit log, which ckpt does not write")
			}
			if f.Kind == state.KindChangelog && f.Version == p.Batch+1 {
				if v, err := changelogVersion(ctx, e.cp.Store, f.Path); err != nil {
					return nil, err
				} else if v != 1 {
					return nil, refusal(fmt.Sprintf("store %s: changelog format v%d; ckpt writes v1", ls.Name, v))
				}
			}
		}
	}
	// Which rows go: none for an operator left as it is. A dropped HDFS-backed operator's rows
	// are read only to be counted (its empty snapshot says it all).
	var drop func(row *state.Row) (bool, error)
	if op.Edited {
		var err error
		if drop, err = e.dropper(ctx, ls, op); err != nil {
			return nil, err
		}
	}
	for part := 0; part < p.Partitions; part++ {
		lp := ls.Partition(part)
		if lp == nil {
			return nil, fmt.Errorf("operator %d store %s has no partition %d of the %d in offsets/%d", lop.ID, ls.Name, part, p.Partitions, p.Batch)
		}
		f := path.Join(lp.Dir, strconv.FormatInt(p.Version, 10)+"."+st.File)
		var buf bytes.Buffer
		var w *statefmt.FileWriter
		var sf *repartition.StateFile
		var err error
		if e.staged != nil {
			if sf, err = e.staged.Create(f); err != nil {
				return nil, err
			}
			w = sf.Writer()
		} else if w, err = statefmt.NewFileWriter(p.Codec, &buf); err != nil {
			return nil, err
		}
		if drop != nil {
			r, err := state.NewReader(ctx, e.cp, e.listing, state.ReadOptions{Operator: lop.ID, Store: ls.Name, Partition: part, Version: p.Batch + 1})
			if err != nil {
				return nil, err
			}
			err = r.Each(ctx, func(row *state.Row) error {
				st.Rows++
				gone, err := drop(row)
				if err != nil || !gone {
					return err
				}
				st.Dropped++
				st.PerPart[part]++
				if st.File == state.KindSnapshot {
					return nil
				}
				key := row.RawKey
				if st.File == state.KindChangelog {
					// RocksDB's encoding: a version byte (0) before the UnsafeRow.
					key = append([]byte{0}, key...)
				}
				return w.Delete(key)
			})
			if err != nil {
				return nil, err
			}
		}
		if sf != nil {
			if err := e.staged.Finish(sf); err != nil {
				return nil, err
			}
			continue
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		e.add(f, buf.Bytes())
		if e.crc {
			e.add(repartition.ChecksumPath(f), logformat.HadoopChecksum(buf.Bytes()))
		}
	}
	p.Rows += st.Rows
	p.Dropped += st.Dropped
	return st, nil
}

// dropper returns the test of a row for an edited operator's store.
func (e *editor) dropper(ctx context.Context, ls *state.Store, op *Operator) (func(*state.Row) (bool, error), error) {
	switch e.plan.Edit {
	case EditDropOperator:
		return func(*state.Row) (bool, error) { return true, nil }, nil
	case EditWhere:
		if ls.SchemaFile == "" {
			return nil, refusal(fmt.Sprintf("store %s has no schema file: ckpt cannot decode its rows to evaluate --where", ls.Name))
		}
		cond := e.cond
		// A column the expression does not name is not decoded: decoding a row and turning it
		// into maps was most of an edit's CPU (an aggregation's value has ten fields), and
		// most expressions name only the key. $env can name anything.
		needKey, needValue := names(e.opts.Where, "key"), names(e.opts.Where, "value")
		env := map[string]any{"key": map[string]any{}, "value": map[string]any{}}
		return func(row *state.Row) (bool, error) {
			if needKey {
				env["key"] = Value(row.Key())
			}
			if needValue {
				env["value"] = Value(row.Value())
			}
			env["partition_id"] = row.Partition
			return cond.Match(env)
		}, nil
	}
	if ls.SchemaFile == "" {
		return nil, refusal(fmt.Sprintf("store %s has no schema file: ckpt cannot tell its event-time column", ls.Name))
	}
	data, err := e.cp.Store.ReadFile(ctx, ls.SchemaFile)
	if err != nil {
		return nil, err
	}
	sc, err := statefmt.ParseSchema(ls.SchemaFile, data)
	if err != nil {
		return nil, err
	}
	fam := sc.Family(statefmt.DefaultColumnFamily)
	if fam == nil {
		return nil, fmt.Errorf("%s: no column family %q", ls.SchemaFile, statefmt.DefaultColumnFamily)
	}
	col, window := -1, false
	for i, f := range fam.Key.Fields {
		if !bytes.Contains(f.Metadata, []byte(`"spark.watermarkDelayMs"`)) {
			continue
		}
		switch {
		case f.Type.Name == "timestamp":
			col = i
		case f.Type.Name == "struct" && len(f.Type.Fields) == 2 && f.Type.Fields[1].Name == "end" && f.Type.Fields[1].Type.Name == "timestamp":
			col, window = i, true
		}
	}
	if col < 0 {
		return nil, refusal(fmt.Sprintf("the key (%s) has no event-time column (a timestamp or window marked with spark.watermarkDelayMs): "+
			"which rows a watermark evicts is not told by the key", fam.KeyString))
	}
	op.EventTime = fam.Key.Fields[col].Name
	if window {
		op.EventTime += ".end"
	}
	// Spark's eviction: the event time (a window's end) at or before the watermark.
	limit := e.opts.EvictBefore * 1000
	return func(row *state.Row) (bool, error) {
		k := row.Key()
		if k == nil || col >= len(k.Values) {
			return false, fmt.Errorf("partition %d: a key that does not decode", row.Partition)
		}
		v := k.Values[col]
		if window {
			w, ok := v.(*statefmt.Object)
			if !ok || len(w.Values) < 2 {
				return false, nil
			}
			v = w.Values[1]
		}
		ts, ok := v.(statefmt.Timestamp)
		return ok && int64(ts) <= limit, nil
	}, nil
}

// names reports whether expression expr may refer to column name: it holds the name, or $env.
func names(expr, name string) bool {
	return strings.Contains(expr, name) || strings.Contains(expr, "$env")
}

// changelogVersion is the format version of a RocksDB changelog (1: no header).
func changelogVersion(ctx context.Context, s storage.Store, file string) (int, error) {
	data, err := s.ReadFile(ctx, file)
	if err != nil {
		return 0, err
	}
	rc, err := statefmt.Decompress(file, statefmt.DetectCodec(data), bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	h, err := statefmt.ReadTypedChangelogHeader(file, bufio.NewReader(rc))
	if err != nil {
		return 0, err
	}
	return h.Version, nil
}

// Value is a decoded state value as expressions see it: structs as maps of their fields,
// timestamps and dates as times (UTC), decimals as float64, the rest as decoded.
func Value(v any) any {
	switch x := v.(type) {
	case *statefmt.Object:
		if x == nil {
			return nil
		}
		m := make(map[string]any, len(x.Names))
		for i, n := range x.Names {
			m[n] = Value(x.Values[i])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	case *statefmt.Map:
		return Value(mapPairs(x))
	case statefmt.Timestamp:
		return time.UnixMicro(int64(x)).UTC()
	case statefmt.TimestampNTZ:
		return time.UnixMicro(int64(x)).UTC()
	case statefmt.Date:
		return time.Unix(int64(x)*86400, 0).UTC()
	case statefmt.Decimal:
		f, _ := strconv.ParseFloat(x.String(), 64)
		return f
	}
	return v
}

func reason(f string, p *Plan) string {
	if r, ok := repartition.BatchReason(f, p.Batch, fmt.Sprintf("a copy of offsets/%d", p.Batch)); ok {
		return r
	}
	if strings.HasSuffix(f, ".snapshot") {
		return fmt.Sprintf("state version %d: empty (the operator's state dropped)", p.Version)
	}
	return fmt.Sprintf("state version %d: version %d with the dropped keys removed (none for an operator left as it is)", p.Version, p.Batch+1)
}

// mapPairs is a map as a list of {key, value} objects (its keys need not be strings).
func mapPairs(m *statefmt.Map) []any {
	out := make([]any, len(m.Keys))
	for i := range m.Keys {
		out[i] = &statefmt.Object{Names: []string{"key", "value"}, Values: []any{m.Keys[i], m.Values[i]}}
	}
	return out
}
