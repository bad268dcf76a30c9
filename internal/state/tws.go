package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// transformWithState operators keep every state variable of a store in one RocksDB instance
// (a virtual column family each, told apart by a 2-byte id before the key), their schemas in
// state/<op>/_stateSchema/<store>/ (schema v3) and the variables in the v2 operator metadata
// (state/<op>/_metadata/v2/<batch>). Spark's state reader reads one variable at a time
// (stateVarName) or the timers (readRegisteredTimers); this file does the same.

// Operator names of transformWithState (StateDataSource's twsShortNameSeq).
var twsOperatorNames = []string{"transformWithStateExec", "transformWithStateInPandasExec", "transformWithStateInPySparkExec"}

// State variable types, as the operator properties name them.
const (
	VarValue = "ValueState"
	VarList  = "ListState"
	VarMap   = "MapState"
	VarTimer = "TimerState"
)

// StateVariable is one state variable of a transformWithState store, for `state ls`.
type StateVariable struct {
	Name string `json:"name"`
	Type string `json:"type"`
	TTL  bool   `json:"ttlEnabled"`
	// KeySchema and ValueSchema are its column family's stored schema ("" when the schema
	// file has no such family).
	KeySchema   string `json:"keySchema"`
	ValueSchema string `json:"valueSchema"`
}

// twsProps is the operatorPropertiesJson of a transformWithState operator.
type twsProps struct {
	TimeMode  string `json:"timeMode"`
	Variables []struct {
		Name string `json:"stateName"`
		Type string `json:"stateVariableType"`
		TTL  bool   `json:"ttlEnabled"`
	} `json:"stateVariables"`
}

// twsOperator is what the metadata and the schema file say about one store of a
// transformWithState operator.
type twsOperator struct {
	metaFile   string
	name       string
	props      twsProps
	schemaFile string
	schema     *statefmt.Schema
}

// isTWS reports whether o is a transformWithState operator: it has a v3 schema or v2
// operator metadata.
func isTWS(o *Operator) bool { return len(o.SchemaV3Files) > 0 || len(o.MetadataV2Files) > 0 }

// loadTWS reads the v2 operator metadata of the batch before version (the newest at or
// below it; Spark's reader reads the metadata of the batch it reads) and the schema file it
// names for store. version 0: the newest metadata.
func loadTWS(ctx context.Context, st storage.Store, o *Operator, store string, version int64) (*twsOperator, error) {
	var best string
	var bestN int64 = -1
	for _, f := range o.MetadataV2Files {
		n, err := strconv.ParseInt(path.Base(f), 10, 64)
		if err != nil {
			continue
		}
		if (version == 0 || n <= version-1) && n > bestN {
			best, bestN = f, n
		}
	}
	if best == "" {
		return nil, fmt.Errorf("operator %d is a transformWithState operator (state schema v3) without operator metadata v2 (%s/_metadata/v2/<batch>) for batch %d: its state variables are unknown", o.ID, o.Dir, version-1)
	}
	data, err := st.ReadFile(ctx, best)
	if err != nil {
		return nil, err
	}
	m, err := parseMetadataV2(best, data)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(twsOperatorNames, m.Info.Name) {
		return nil, fmt.Errorf("%s: operator %q is not transformWithState's (%s)", best, m.Info.Name, strings.Join(twsOperatorNames, ", "))
	}
	t := &twsOperator{metaFile: best, name: m.Info.Name}
	if m.Props == "" {
		return nil, fmt.Errorf("%s: no operatorPropertiesJson: no state variables are defined for the transformWithState operator", best)
	}
	if err := json.Unmarshal([]byte(m.Props), &t.props); err != nil {
		return nil, fmt.Errorf("%s: operatorPropertiesJson: %w", best, err)
	}
	var want string
	for _, s := range m.Stores {
		if s.Name == store && len(s.SchemaFiles) > 0 {
			// Spark reads the newest schema file (the last: they are appended as the schema evolves).
			want = s.SchemaFiles[len(s.SchemaFiles)-1]
		}
	}
	if want == "" {
		return nil, fmt.Errorf("%s: no stateSchemaFilePaths for store %q", best, store)
	}
	// The metadata holds the schema file's absolute URI when it was written; the checkpoint may
	// have moved since: the file is found by name under _stateSchema/<store>/.
	suffix := "/_stateSchema/" + store + "/" + path.Base(want)
	for _, f := range o.SchemaV3Files {
		if strings.HasSuffix(f, suffix) {
			t.schemaFile = f
		}
	}
	if t.schemaFile == "" {
		return nil, fmt.Errorf("%s names the state schema %s, and %s%s does not exist", best, want, o.Dir, suffix)
	}
	if data, err = st.ReadFile(ctx, t.schemaFile); err != nil {
		return nil, err
	}
	if t.schema, err = statefmt.ParseSchema(t.schemaFile, data); err != nil {
		return nil, err
	}
	return t, nil
}

// metadataV2 is a v2 operator metadata file as Spark 4.0 and 4.1 write it ("v2", then one
// JSON document; stateSchemaFilePaths is a list).
type metadataV2 struct {
	Info struct {
		ID   int64  `json:"operatorId"`
		Name string `json:"operatorName"`
	} `json:"operatorInfo"`
	Stores []struct {
		Name        string   `json:"storeName"`
		SchemaFiles []string `json:"stateSchemaFilePaths"`
	} `json:"stateStoreInfo"`
	Props string `json:"operatorPropertiesJson"`
}

func parseMetadataV2(file string, data []byte) (*metadataV2, error) {
	head, rest, _ := bytes.Cut(data, []byte("\n"))
	if string(bytes.TrimSpace(head)) != "v2" {
		return nil, fmt.Errorf("%s: line 1: expected the version header \"v2\", got %q", file, excerptBytes(head))
	}
	m := &metadataV2{}
	if err := json.Unmarshal(rest, m); err != nil {
		return nil, fmt.Errorf("%s: line 2: expected the operator metadata JSON: %w", file, err)
	}
	return m, nil
}

func excerptBytes(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

func (t *twsOperator) varNames() string {
	names := []string{}
	for _, v := range t.props.Variables {
		if v.Type != VarTimer {
			names = append(names, v.Name)
		}
	}
	return strings.Join(names, ", ")
}

// twsVariables lists the state variables of a transformWithState store for `state ls`, and
// the operator's name (the v2 metadata's).
func twsVariables(ctx context.Context, st storage.Store, o *Operator, store string) (string, []StateVariable, error) {
	t, err := loadTWS(ctx, st, o, store, 0)
	if err != nil {
		return "", nil, err
	}
	out := []StateVariable{}
	for _, v := range t.props.Variables {
		sv := StateVariable{Name: v.Name, Type: v.Type, TTL: v.TTL}
		if f := t.schema.Family(v.Name); f != nil {
			sv.KeySchema, sv.ValueSchema = f.KeyString, f.ValueString
		}
		out = append(out, sv)
	}
	return t.name, out, nil
}

// twsReader reads one state variable (or the timers) of a transformWithState store.
type twsReader struct {
	r       *Reader
	op      *twsOperator
	varName string
	varType string
	fam     *statefmt.ColumnFamily
	// group is the grouping key's type; for map state and timers the first field of the
	// composite key.
	group *statefmt.Type
	// delimited: list values are joined by the merge operator's ',' (mergeOperatorVersion 1).
	delimited bool
}

// newTWSReader returns the reader of r's transformWithState store, nil for another operator.
func newTWSReader(ctx context.Context, r *Reader) (*twsReader, error) {
	o := r.opts
	if !isTWS(r.op) {
		if o.StateVar != "" || o.Timers {
			return nil, fmt.Errorf("--state-var and --timers are for transformWithState operators; operator %d is not one", r.op.ID)
		}
		return nil, nil
	}
	if r.store.Provider != ProviderRocksDB {
		return nil, fmt.Errorf("operator %d store %s: transformWithState state with the %s provider; ckpt reads it from RocksDB stores only", r.op.ID, r.store.Name, r.store.Provider)
	}
	t, err := loadTWS(ctx, r.st, r.op, r.store.Name, r.Version)
	if err != nil {
		return nil, err
	}
	tw := &twsReader{r: r, op: t, varName: o.StateVar, delimited: mergeOperatorVersion(ctx, r) < 2}
	if o.Timers {
		if o.StateVar != "" {
			return nil, fmt.Errorf("--timers reads the timers, --state-var one state variable: give one of them")
		}
		if t.props.TimeMode == "NoTime" || t.props.TimeMode == "None" {
			return nil, fmt.Errorf("operator %d has no registered timers: time mode %s", r.op.ID, t.props.TimeMode)
		}
		for _, v := range t.props.Variables {
			if v.Type == VarTimer && strings.HasSuffix(v.Name, "_keyToTimestamp") {
				tw.varName = v.Name
			}
		}
		if tw.varName == "" {
			return nil, fmt.Errorf("%s: operator %d (time mode %s) has no timer state variable", t.metaFile, r.op.ID, t.props.TimeMode)
		}
	}
	if tw.varName == "" {
		return nil, fmt.Errorf("operator %d is a transformWithState operator: --state-var NAME is required (state variables: %s; --timers reads the timers)", r.op.ID, t.varNames())
	}
	for _, v := range t.props.Variables {
		if v.Name == tw.varName {
			tw.varType = v.Type
		}
	}
	if tw.varType == "" {
		return nil, fmt.Errorf("--state-var %s: operator %d has no such state variable (state variables: %s)", tw.varName, r.op.ID, t.varNames())
	}
	if o.Changes && tw.varType == VarTimer {
		return nil, fmt.Errorf("--changes with the timers: ckpt reads the change feed of state variables only")
	}
	if tw.fam = t.schema.Family(tw.varName); tw.fam == nil {
		return nil, fmt.Errorf("%s: no column family %q", t.schemaFile, tw.varName)
	}
	f := tw.fam
	tw.group = f.Key
	switch tw.varType {
	case VarValue, VarList:
		if f.KeyEncoder == nil || f.KeyEncoder.Type != statefmt.KeyEncoderNoPrefix {
			return nil, fmt.Errorf("%s: column family %q of a %s: want key encoder %s", t.schemaFile, f.Name, tw.varType, statefmt.KeyEncoderNoPrefix)
		}
	case VarMap, VarTimer:
		second := "userKey"
		if tw.varType == VarTimer {
			second = "expiryTimestampMs"
		}
		if f.KeyEncoder == nil || f.KeyEncoder.Type != statefmt.KeyEncoderPrefixScan || f.KeyEncoder.NumColsPrefixKey != 1 ||
			len(f.Key.Fields) != 2 || f.Key.Fields[0].Name != "key" || f.Key.Fields[0].Type.Name != "struct" || f.Key.Fields[1].Name != second {
			return nil, fmt.Errorf("%s: column family %q of a %s: want a key struct<key:struct<...>,%s:...> with key encoder %s of one prefix column, got %s", t.schemaFile, f.Name, tw.varType, second, statefmt.KeyEncoderPrefixScan, f.KeyString)
		}
		if tw.varType == VarMap && f.Key.Fields[1].Type.Name != "struct" {
			return nil, fmt.Errorf("%s: column family %q: the user key is %s, not a struct", t.schemaFile, f.Name, f.Key.Fields[1].Type)
		}
		if tw.varType == VarTimer && f.Key.Fields[1].Type.Name != "long" {
			return nil, fmt.Errorf("%s: column family %q: the timer expiry is %s, not a long", t.schemaFile, f.Name, f.Key.Fields[1].Type)
		}
		tw.group = f.Key.Fields[0].Type
	default:
		return nil, fmt.Errorf("%s: state variable %s is a %s; ckpt reads ValueState, ListState, MapState and the timers", t.metaFile, tw.varName, tw.varType)
	}
	for _, kv := range r.filter {
		if !slices.ContainsFunc(tw.group.Fields, func(fl statefmt.Field) bool { return fl.Name == kv[0] }) {
			return nil, fmt.Errorf("--key %s: the grouping key has no field %q (key schema %s)", kv[0]+"="+kv[1], kv[0], tw.group)
		}
	}
	return tw, nil
}

func (tw *twsReader) each(ctx context.Context, emit func(*Row) error) error {
	r := tw.r
	for _, p := range r.store.Partitions {
		if r.opts.Partition >= 0 && p.ID != r.opts.Partition {
			continue
		}
		if err := tw.partition(ctx, p, emit); err != nil {
			return err
		}
	}
	if r.opts.Partition >= 0 && r.store.Partition(r.opts.Partition) == nil {
		return fmt.Errorf("operator %d store %s has no partition %d", r.op.ID, r.store.Name, r.opts.Partition)
	}
	return nil
}

// cfID is the id of the variable's column family in the RocksDB version zip describes.
func (tw *twsReader) cfID(zip string, cp *statefmt.RocksDBCheckpoint) (uint16, error) {
	id, ok := cp.ColumnFamilyMapping[tw.fam.Name]
	if !ok {
		return 0, fmt.Errorf("%s: the column family mapping has no %q", zip, tw.fam.Name)
	}
	if id < 0 || id > 0xffff {
		return 0, fmt.Errorf("%s: column family %q has id %d, not a 2-byte id", zip, tw.fam.Name, id)
	}
	return uint16(id), nil
}

func (tw *twsReader) partition(ctx context.Context, p *Partition, emit func(*Row) error) error {
	r := tw.r
	ids := IDsFor(ctx, r.cp, r.op.ID, r.storeIndex(), p.ID)
	chain, err := ChainFor(p, ProviderRocksDB, r.Version, ids)
	if err != nil {
		return err
	}
	if chain.Base == nil {
		// The column family ids are in a version's zip only.
		return fmt.Errorf("%s: no RocksDB version zip at or below version %d: the ids of the transformWithState column families are unknown", p.Dir, r.Version)
	}
	zdata, err := r.st.ReadFile(ctx, chain.Base.Path)
	if err != nil {
		return err
	}
	zcp, err := statefmt.ParseRocksDBZip(chain.Base.Path, zdata)
	if err != nil {
		return err
	}
	id, err := tw.cfID(chain.Base.Path, zcp)
	if err != nil {
		return err
	}
	prefix := statefmt.ColumnFamilyPrefix(id)
	row := &Row{Partition: p.ID, line: r.carry}
	defer func() { r.carry = row.line }()
	if r.opts.Changes {
		f := pick(p.Files, r.Version, KindChangelog, ids)
		if f == nil {
			return &MissingError{Dir: p.Dir, Version: r.Version, Need: r.Version, Path: fileName(p.Dir, r.Version, KindChangelog, ids), Kind: KindChangelog}
		}
		row.BatchID = r.Version - 1
		return tw.changelog(ctx, *f, func(typ statefmt.RecordType, key, value []byte) error {
			if !bytes.HasPrefix(key, prefix) {
				return nil
			}
			switch typ {
			case statefmt.RecordPut:
				row.ChangeType = ChangeUpdate
			case statefmt.RecordDelete:
				row.ChangeType = ChangeDelete
			case statefmt.RecordMerge:
				row.ChangeType = "append"
			}
			return wrapRow(f.Path, tw.change(row, key[len(prefix):], value, emit))
		})
	}
	pending := map[string]*pendingTWS{}
	for _, f := range chain.Steps {
		err := tw.changelog(ctx, f, func(typ statefmt.RecordType, key, value []byte) error {
			if !bytes.HasPrefix(key, prefix) {
				return nil
			}
			applyTWS(pending, typ, key, value)
			return nil
		})
		if err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	g := &grouper{tw: tw, row: row, emit: emit}
	next := 0
	// The base's entries and the changelogs' keys, merged in key order as RocksDB iterates.
	flushBelow := func(key []byte) error {
		for next < len(keys) && (key == nil || keys[next] < string(key)) {
			k := keys[next]
			next++
			if v, ok := pending[k].resolve(nil, false); ok {
				if err := g.add([]byte(k)[len(prefix):], v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = tw.sstEntries(ctx, p, chain.Base.Path, zcp, prefix, func(key, value []byte) error {
		if err := flushBelow(key); err != nil {
			return err
		}
		if next < len(keys) && keys[next] == string(key) {
			next++
			v, ok := pending[string(key)].resolve(value, true)
			if !ok {
				return nil
			}
			value = v
		}
		return g.add(key[len(prefix):], value)
	})
	if err == nil {
		err = flushBelow(nil)
	}
	if err == nil {
		err = g.flush()
	}
	return err
}

// wrapRow names the file of a row that does not fit the schema.
func wrapRow(file string, err error) error {
	var se *statefmt.Error
	var re *statefmt.RowError
	if err != nil && errors.As(err, &re) && !errors.As(err, &se) {
		return &statefmt.Error{File: file, Offset: -1, Expected: "a row of the state variable's schema", Err: re}
	}
	return err
}

// pendingTWS is what the changelogs after the base did to one key: a value (put), a delete,
// or merge operands still to be appended to the base's value (onBase).
type pendingTWS struct {
	val    []byte
	del    bool
	onBase bool
	ops    [][]byte
}

// mergeDelimiter is RocksDB's StringAppendOperator default delimiter, which Spark's RocksDB
// merge operator uses between list values.
const mergeDelimiter = ','

func applyTWS(pending map[string]*pendingTWS, typ statefmt.RecordType, key, value []byte) {
	k := string(key)
	e := pending[k]
	switch typ {
	case statefmt.RecordPut:
		pending[k] = &pendingTWS{val: slices.Clone(value)}
	case statefmt.RecordDelete:
		pending[k] = &pendingTWS{del: true}
	case statefmt.RecordMerge:
		switch {
		case e == nil:
			pending[k] = &pendingTWS{onBase: true, ops: [][]byte{slices.Clone(value)}}
		case e.onBase:
			e.ops = append(e.ops, slices.Clone(value))
		case e.del:
			e.del, e.val = false, slices.Clone(value)
		default:
			e.val = append(append(e.val, mergeDelimiter), value...)
		}
	}
}

// resolve is the key's value after the changelogs, given the base's value (hasBase).
func (e *pendingTWS) resolve(base []byte, hasBase bool) ([]byte, bool) {
	if !e.onBase {
		return e.val, !e.del
	}
	parts := e.ops
	if hasBase {
		parts = append([][]byte{base}, parts...)
	}
	return bytes.Join(parts, []byte{mergeDelimiter}), true
}

// changelog streams the typed records of one changelog (v2, v4; v1 and v3 records are puts
// and deletes).
func (tw *twsReader) changelog(ctx context.Context, f File, fn func(typ statefmt.RecordType, key, value []byte) error) error {
	r := tw.r
	dr, err := r.open(ctx, f)
	if err != nil {
		return err
	}
	defer dr.Close()
	cr := &countingReader{r: dr}
	src := bufio.NewReaderSize(cr, 256<<10)
	h, err := statefmt.ReadTypedChangelogHeader(f.Path, src)
	if err != nil {
		return err
	}
	at := cr.n - int64(src.Buffered())
	if !h.Typed() {
		rr := statefmt.NewRecordReader(f.Path, statefmt.Changelog, src)
		for {
			rec, err := rr.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			typ := statefmt.RecordPut
			if rec.Delete {
				typ = statefmt.RecordDelete
			}
			if err := fn(typ, rec.Key, rec.Value); err != nil {
				return err
			}
		}
	}
	tr := statefmt.NewTypedRecordReader(f.Path, src, at)
	for {
		rec, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec.Type, rec.Key, rec.Value); err != nil {
			return err
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// sstEntries calls fn with every live key of the column family (prefix) in the SST files
// of zip, in key order, with its value as RocksDB reads it: the newest value, with the merge
// operands written after it appended (string-append, oldest first).
func (tw *twsReader) sstEntries(ctx context.Context, p *Partition, zip string, cp *statefmt.RocksDBCheckpoint, prefix []byte, fn func(key, value []byte) error) error {
	r := tw.r
	if len(cp.LogFiles) > 0 {
		return fmt.Errorf("%s lists %d RocksDB WAL files (%s): ckpt reads state from SST files and changelogs, not from RocksDB's write-ahead log", zip, len(cp.LogFiles), cp.LogFiles[0].DFSName())
	}
	its := make([]*sstable.Iter, 0, len(cp.SSTFiles))
	for _, f := range cp.SSTFiles {
		path := p.Dir + "/SSTs/" + f.DFSName()
		ra, size, closeFn, err := r.openAt(ctx, path)
		if err != nil {
			return fmt.Errorf("%s lists %s: %w", zip, path, err)
		}
		defer closeFn()
		t, err := sstable.OpenReaderAt(path, ra, size, sstable.Options{Decompress: sstDecompress, Merges: true})
		if err != nil {
			return err
		}
		if cf := t.Properties.ColumnFamily; cf != "" && cf != "default" {
			return fmt.Errorf("%s: an SST of RocksDB column family %q; ckpt reads the default column family only (Spark's virtual column families are in it)", path, cf)
		}
		it := t.Iter()
		if it.Next() {
			its = append(its, it)
		} else if it.Err() != nil {
			return it.Err()
		}
	}
	h := sstHeap(its)
	h.init()
	var key, base []byte
	var ops [][]byte
	file := "" // the SST file of the current key's newest entry
	// done: the current key's newest value or deletion was seen; older entries are hidden.
	started, done, live := false, false, false
	finish := func() error {
		if !started || !bytes.HasPrefix(key, prefix) {
			return nil
		}
		if !live && len(ops) == 0 {
			return nil
		}
		parts := [][]byte{}
		if live {
			parts = append(parts, base)
		}
		for i := len(ops) - 1; i >= 0; i-- {
			parts = append(parts, ops[i])
		}
		return wrapRow(file, fn(key, bytes.Join(parts, []byte{mergeDelimiter})))
	}
	for len(h) > 0 {
		it := h[0]
		if !started || !bytes.Equal(it.UserKey, key) {
			if err := finish(); err != nil {
				return err
			}
			started, done, live = true, false, false
			key, base, ops = append(key[:0], it.UserKey...), base[:0], ops[:0]
			file = it.Table().File
		}
		if !done {
			switch it.Kind {
			case sstable.KindMerge:
				ops = append(ops, slices.Clone(it.Value))
			case sstable.KindValue:
				base, live, done = append(base, it.Value...), true, true
			default: // a deletion: nothing older counts
				done = true
			}
		}
		if it.Next() {
			h.fix0()
			continue
		}
		if err := it.Err(); err != nil {
			return err
		}
		h.pop0()
	}
	return finish()
}

// grouper turns the variable's (key, value) entries, in key order, into rows: one per value,
// list element or map entry, or (Nested) one per grouping key.
type grouper struct {
	tw   *twsReader
	row  *Row
	emit func(*Row) error
	// open nested map: the grouping key's bytes and the entries so far
	group   []byte
	entries []mapEntry
	objs    *statefmt.Map
	// table is the length of the Scala HashMap Spark's reader collects a partition's map
	// entries in: it grows and is cleared, never shrunk, between grouping keys.
	table int
}

// mapEntry is one entry of a nested map row: its JSON and its key's hash.
type mapEntry struct {
	json []byte
	hash int32
}

// keep applies --key to a grouping key row.
func (tw *twsReader) keep(group []byte) (bool, error) {
	if len(tw.r.filter) == 0 {
		return true, nil
	}
	k, err := statefmt.DecodeRow(group, tw.group)
	if err != nil {
		return false, err
	}
	for _, kv := range tw.r.filter {
		i := slices.Index(k.Names, kv[0])
		if i < 0 || statefmt.Text(k.Values[i]) != kv[1] {
			return false, nil
		}
	}
	return true, nil
}

// split returns the grouping key row and the rest of the key (map: the user key row;
// timers: the expiry row).
func (tw *twsReader) split(key []byte) (group, rest []byte, err error) {
	first, rest, err := statefmt.SplitKey(tw.fam.KeyEncoder, key)
	if err != nil {
		return nil, nil, err
	}
	if tw.varType == VarValue || tw.varType == VarList {
		return first, nil, nil
	}
	if group, err = statefmt.VarField(first, 1, 0); err != nil {
		return nil, nil, err
	}
	if rest == nil {
		return nil, nil, &statefmt.RowError{Reason: "a composite key without its second part"}
	}
	return group, rest, nil
}

// begin starts a row's line (WriteJSON keeps the lines before it).
func (g *grouper) begin() []byte {
	row := g.row
	if !g.tw.r.keep {
		row.line = row.line[:0]
	}
	row.start = len(row.line)
	dst := append(row.line, '{')
	if row.ChangeType != "" {
		dst = append(dst, `"batch_id":`...)
		dst = strconv.AppendInt(dst, row.BatchID, 10)
		dst = append(dst, `,"change_type":"`...)
		dst = append(dst, row.ChangeType...)
		dst = append(dst, `",`...)
	}
	return append(dst, `"key":`...)
}

// end finishes the line and emits the row; on an error the line is cut back.
func (g *grouper) end(dst []byte, key, value *statefmt.Object) error {
	g.row.line = g.row.endLine(dst)
	g.row.twsKey, g.row.twsValue = key, value
	return g.emit(g.row)
}

func (g *grouper) fail(err error) error {
	g.row.line = g.row.line[:g.row.start]
	return err
}

// obj decodes an UnsafeRow for the table output.
func obj(b []byte, t *statefmt.Type) *statefmt.Object {
	o, _ := statefmt.DecodeRow(b, t)
	return o
}

func single(name string, v any) *statefmt.Object {
	return &statefmt.Object{Names: []string{name}, Values: []any{v}}
}

// listColumn is the column of a list element in Spark's reader (4.0 and 4.1: list_element).
const listColumn = "list_element"

func (g *grouper) add(key, value []byte) error {
	tw := g.tw
	group, rest, err := tw.split(key)
	if err != nil {
		return err
	}
	if ok, err := tw.keep(group); err != nil || !ok {
		return err
	}
	if len(value) < 1 {
		return &statefmt.RowError{Reason: "an empty value (want a version byte and an UnsafeRow)"}
	}
	f := tw.fam
	switch tw.varType {
	case VarValue:
		dst, err := statefmt.AppendRowJSON(g.begin(), group, tw.group)
		if err == nil {
			dst, err = statefmt.AppendRowJSON(append(dst, `,"value":`...), value[1:], f.Value)
		}
		if err != nil {
			return g.fail(err)
		}
		return g.end(dst, obj(group, tw.group), single("value", obj(value[1:], f.Value)))
	case VarList:
		if tw.r.opts.Nested {
			dst, err := statefmt.AppendRowJSON(g.begin(), group, tw.group)
			if err != nil {
				return g.fail(err)
			}
			dst = append(dst, `,"list_value":[`...)
			var elems []any
			first := true
			err = statefmt.EachValue(value, tw.delimited, func(v []byte) error {
				if !first {
					dst = append(dst, ',')
				}
				first = false
				var err error
				dst, err = statefmt.AppendRowJSON(dst, v, f.Value)
				elems = append(elems, obj(v, f.Value))
				return err
			})
			if err != nil {
				return g.fail(err)
			}
			return g.end(append(dst, ']'), obj(group, tw.group), single("list_value", elems))
		}
		return statefmt.EachValue(value, tw.delimited, func(v []byte) error {
			dst, err := statefmt.AppendRowJSON(g.begin(), group, tw.group)
			if err == nil {
				dst, err = statefmt.AppendRowJSON(append(dst, `,"`+listColumn+`":`...), v, f.Value)
			}
			if err != nil {
				return g.fail(err)
			}
			return g.end(dst, obj(group, tw.group), single(listColumn, obj(v, f.Value)))
		})
	case VarMap:
		uk, err := statefmt.VarField(rest, 1, 0)
		if err != nil {
			return err
		}
		ukType := f.Key.Fields[1].Type
		if tw.r.opts.Nested {
			if g.group != nil && !bytes.Equal(g.group, group) {
				if err := g.flush(); err != nil {
					return err
				}
			}
			if g.group == nil {
				g.group = append([]byte{}, group...)
				g.entries = g.entries[:0]
				g.objs = &statefmt.Map{}
			}
			e := statefmt.AppendJSON(nil, statefmt.UnsafeRowString(uk))
			if e, err = statefmt.AppendRowJSON(append(e, ':'), value[1:], f.Value); err != nil {
				return err
			}
			g.entries = append(g.entries, mapEntry{json: e, hash: statefmt.UnsafeRowHash(uk)})
			g.objs.Keys = append(g.objs.Keys, obj(uk, ukType))
			g.objs.Values = append(g.objs.Values, obj(value[1:], f.Value))
			return nil
		}
		dst, err := statefmt.AppendRowJSON(g.begin(), group, tw.group)
		if err == nil {
			dst, err = statefmt.AppendRowJSON(append(dst, `,"user_map_key":`...), uk, ukType)
		}
		if err == nil {
			dst, err = statefmt.AppendRowJSON(append(dst, `,"user_map_value":`...), value[1:], f.Value)
		}
		if err != nil {
			return g.fail(err)
		}
		return g.end(dst, obj(group, tw.group), &statefmt.Object{Names: []string{"user_map_key", "user_map_value"}, Values: []any{obj(uk, ukType), obj(value[1:], f.Value)}})
	case VarTimer:
		ts, err := statefmt.LongField(rest, 1, 0)
		if err != nil {
			return err
		}
		dst, err := statefmt.AppendRowJSON(g.begin(), group, tw.group)
		if err != nil {
			return g.fail(err)
		}
		dst = strconv.AppendInt(append(dst, `,"expiration_timestamp_ms":`...), ts, 10)
		return g.end(dst, obj(group, tw.group), single("expiration_timestamp_ms", ts))
	}
	return nil
}

// flush emits the open nested map row.
func (g *grouper) flush() error {
	if g.group == nil {
		return nil
	}
	group := g.group
	g.group = nil
	dst, err := statefmt.AppendRowJSON(g.begin(), group, g.tw.group)
	if err != nil {
		return g.fail(err)
	}
	dst = append(dst, `,"map_value":{`...)
	for i, e := range g.scalaOrder() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.json...)
	}
	dst = append(dst, '}')
	return g.end(dst, obj(group, g.tw.group), single("map_value", g.objs))
}

// scalaOrder returns the open map's entries in the order Spark's reader writes them: it
// adds them (in key order) to a Scala 2.13 mutable.HashMap and iterates it. That map starts
// with 16 buckets and doubles when an insert would reach 3/4 full; a key's bucket is its
// hashCode (UnsafeRowHash) spread by h ^ h>>>16, masked; a bucket's nodes are ordered by
// that hash, equal ones by insertion. The map is cleared, not shrunk, between grouping keys.
func (g *grouper) scalaOrder() []mapEntry {
	if g.table == 0 {
		g.table = 16
	}
	for n := range g.entries {
		if n+1 >= g.table*3/4 {
			g.table *= 2
		}
	}
	type ranked struct {
		bucket int
		hash   int32
		e      mapEntry
	}
	rs := make([]ranked, len(g.entries))
	for i, e := range g.entries {
		h := e.hash ^ int32(uint32(e.hash)>>16)
		rs[i] = ranked{bucket: int(uint32(h) & uint32(g.table-1)), hash: h, e: e}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int {
		if a.bucket != b.bucket {
			return a.bucket - b.bucket
		}
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return 0
	})
	out := make([]mapEntry, len(rs))
	for i, r := range rs {
		out[i] = r.e
	}
	return out
}

// change emits one change feed row: the record's key and its value (a put of a list holds
// the whole list: Spark's change reader shows its first element, as here).
func (tw *twsReader) change(row *Row, key, value []byte, emit func(*Row) error) error {
	g := &grouper{tw: tw, row: row, emit: emit}
	if value != nil {
		if tw.varType == VarList {
			var firstVal []byte
			err := statefmt.EachValue(value, tw.delimited, func(v []byte) error {
				if firstVal == nil {
					firstVal = v
				}
				return nil
			})
			if err != nil {
				return err
			}
			// Re-frame the first element as a one-element list.
			value = append(append([]byte{0, 0, 0, 0}, 0), firstVal...)
			putLen(value, len(firstVal)+1)
		}
		return g.add(key, value)
	}
	// A delete: the key's columns, the value columns null.
	group, rest, err := tw.split(key)
	if err != nil {
		return err
	}
	if ok, err := tw.keep(group); err != nil || !ok {
		return err
	}
	dst, err := statefmt.AppendRowJSON(g.begin(), group, tw.group)
	if err != nil {
		return g.fail(err)
	}
	var cols *statefmt.Object
	switch tw.varType {
	case VarMap:
		uk, err := statefmt.VarField(rest, 1, 0)
		if err == nil {
			dst, err = statefmt.AppendRowJSON(append(dst, `,"user_map_key":`...), uk, tw.fam.Key.Fields[1].Type)
		}
		if err != nil {
			return g.fail(err)
		}
		dst = append(dst, `,"user_map_value":null`...)
		cols = &statefmt.Object{Names: []string{"user_map_key", "user_map_value"}, Values: []any{obj(uk, tw.fam.Key.Fields[1].Type), nil}}
	case VarList:
		dst = append(dst, `,"`+listColumn+`":null`...)
		cols = single(listColumn, nil)
	default:
		dst = append(dst, `,"value":null`...)
		cols = single("value", nil)
	}
	return g.end(dst, obj(group, tw.group), cols)
}

func putLen(b []byte, n int) {
	b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
}

// mergeOperatorVersion is spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion in the
// offsets file of the batch that wrote the version read (the query's conf, which Spark restores
// from the offsets log), else the latest; 1, Spark's only format before 4.2, when no offsets
// file names it.
func mergeOperatorVersion(ctx context.Context, r *Reader) int {
	id, ok := r.Version-1, r.cp.Offsets.Has(r.Version-1)
	if !ok {
		if id, ok = r.cp.Offsets.Latest(); !ok {
			return 1
		}
	}
	o, err := r.cp.ReadOffsets(ctx, id)
	if err != nil {
		return 1
	}
	v, ok := o.ConfValue("spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion")
	if n, err := strconv.Atoi(v); ok && err == nil {
		return n
	}
	return 1
}
