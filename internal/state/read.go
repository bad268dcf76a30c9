package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Change types of --changes rows, as Spark's change feed names them.
const (
	ChangeUpdate = "update"
	ChangeDelete = "delete"
)

// Row is one state row: its key and value, and its partition. Changes rows also carry the
// batch and the change type. A Row and its byte slices are valid during the callback of Each
// only (the reader reuses them).
type Row struct {
	BatchID    int64
	ChangeType string
	Partition  int
	// RawKey and RawValue are the UnsafeRow bytes; RawValue is nil for a delete.
	RawKey   []byte
	RawValue []byte

	fam      *statefmt.ColumnFamily // nil: the store has no schema
	hasValue bool
	// twsKey and twsValue are a transformWithState row's columns (its key, its other
	// columns), set by tws.go; nil otherwise.
	twsKey, twsValue *statefmt.Object
	// line[start:] is the row as AppendJSON renders it. WriteJSON keeps the rows before it
	// (a block of lines being filled); otherwise start is 0.
	line  []byte
	start int
}

// HasSchema reports whether the row is decoded by a schema (else Key and Value are nil and
// the JSON holds the raw bytes in base64).
func (row *Row) HasSchema() bool { return row.fam != nil || row.twsKey != nil }

// Key decodes the key; nil without a schema.
func (row *Row) Key() *statefmt.Object {
	if row.twsKey != nil {
		return row.twsKey
	}
	if row.fam == nil {
		return nil
	}
	o, _ := statefmt.DecodeRow(row.RawKey, row.fam.Key) // validated by the reader
	return o
}

// Value decodes the value; nil without a schema or for a delete.
func (row *Row) Value() *statefmt.Object {
	if row.twsKey != nil {
		return row.twsValue
	}
	if row.fam == nil || !row.hasValue {
		return nil
	}
	o, _ := statefmt.DecodeRow(row.RawValue, row.fam.Value)
	return o
}

// ReadOptions select what Read reads.
type ReadOptions struct {
	// Operator is the operator id.
	Operator int64
	// Store is the store name. Default: "default".
	Store string
	// Partition reads one partition; -1 (the default of the command) reads all.
	Partition int
	// Version is the state version (batch id + 1). Default 0: the latest committed batch's
	// version, as Spark's state reader does (the highest version on disk without commits).
	Version int64
	// Keys keep only rows whose key field NAME renders as VALUE, for every NAME=VALUE.
	Keys []string
	// Changes reads only the delta or changelog of Version: what batch Version-1 changed.
	Changes bool
	// Codec overrides the compression codec; default: told by each file's framing.
	Codec string
	// StateVar is the transformWithState state variable to read (Spark's stateVarName);
	// required for such an operator, refused for others.
	StateVar string
	// Timers reads a transformWithState operator's registered timers (readRegisteredTimers).
	Timers bool
	// Nested gives list and map state one row per grouping key, the values in an array or a
	// map (Spark's flattenCollectionTypes=false); default: a row per element or entry.
	Nested bool
	// MemoryBudget is how many bytes of the records of the deltas or changelogs after the
	// base are held in memory; past it they are spilled to sorted runs in a temporary
	// directory. Default (0): DefaultMemoryBudget.
	MemoryBudget int64
	// TempDir is where that temporary directory is made; default: os.TempDir() ($TMPDIR).
	TempDir string
	// Raw gives each row's bytes only (Row.RawKey, Row.RawValue), rendering no JSON and
	// checking no row against the schema: for a caller that moves rows, not shows them (a
	// repartition). Row's JSON methods are not to be used then.
	Raw bool

	fanIn int // runs merged at once (tests make it small); default defaultFanIn
}

// Reader reads rows of one store.
type Reader struct {
	st     storage.Store
	cp     *checkpoint.Checkpoint
	op     *Operator
	store  *Store
	schema *statefmt.Schema
	opts   ReadOptions
	filter [][2]string
	// keep: rows accumulate in Row.line (WriteJSON); carry holds that block between partitions.
	keep  bool
	carry []byte
	// Version is the version read.
	Version int64
	// fitPart and fitLeft: the first fitRows rows of each partition are checked byte for
	// byte against the schema (fit.go).
	fitPart, fitLeft int
	// tws reads a transformWithState operator's state variables (tws.go).
	tws *twsReader
	// spilledRuns counts the sorted runs the reads wrote (tests).
	spilledRuns int
}

// NewReader resolves opts against the listing and the checkpoint.
func NewReader(ctx context.Context, cp *checkpoint.Checkpoint, l *Listing, opts ReadOptions) (*Reader, error) {
	if opts.Store == "" {
		opts.Store = DefaultStore
	}
	op := l.Operator(opts.Operator)
	if op == nil {
		return nil, fmt.Errorf("no operator %d under state/ (operators: %s)", opts.Operator, operatorIDs(l))
	}
	s := op.Store(opts.Store)
	if s == nil {
		names := []string{}
		for _, s := range op.Stores {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("operator %d has no store %q (stores: %s)", opts.Operator, opts.Store, strings.Join(names, ", "))
	}
	r := &Reader{st: cp.Store, cp: cp, op: op, store: s, opts: opts, fitPart: -1}
	for _, k := range opts.Keys {
		n, v, ok := strings.Cut(k, "=")
		if !ok {
			return nil, fmt.Errorf("--key %q: want NAME=VALUE", k)
		}
		r.filter = append(r.filter, [2]string{n, v})
	}
	r.Version = opts.Version
	if r.Version == 0 {
		if c, ok := cp.Commits.Latest(); ok {
			r.Version = c + 1
		} else if _, hi, ok := s.Versions(); ok {
			r.Version = hi
		}
	}
	if tw, err := newTWSReader(ctx, r); err != nil || tw != nil {
		r.tws = tw
		return r, err
	}
	if s.SchemaFile != "" {
		data, err := cp.Store.ReadFile(ctx, s.SchemaFile)
		if err != nil {
			return nil, err
		}
		if r.schema, err = statefmt.ParseSchema(s.SchemaFile, data); err != nil {
			return nil, err
		}
	}
	if r.schema != nil {
		f := r.schema.Family(statefmt.DefaultColumnFamily)
		if f == nil {
			return nil, fmt.Errorf("%s: no column family %q", s.SchemaFile, statefmt.DefaultColumnFamily)
		}
		for _, kv := range r.filter {
			if !slices.ContainsFunc(f.Key.Fields, func(fl statefmt.Field) bool { return fl.Name == kv[0] }) {
				return nil, fmt.Errorf("--key %s: the key has no field %q (key schema %s)", kv[0]+"="+kv[1], kv[0], f.KeyString)
			}
		}
	} else if len(r.filter) > 0 {
		return nil, fmt.Errorf("--key needs the state schema, and %s has none", s.Partitions[0].Dir)
	}
	return r, nil
}

func operatorIDs(l *Listing) string {
	ids := []string{}
	for _, o := range l.Operators {
		ids = append(ids, fmt.Sprint(o.ID))
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Schema is the store's schema, or nil.
func (r *Reader) Schema() *statefmt.Schema { return r.schema }

// storeIndex is the store's position in a commit's stateUniqueIds[op][partition] array.
func (r *Reader) storeIndex() int {
	for i, n := range JoinStoreNames {
		if n == r.store.Name {
			return i
		}
	}
	return 0
}

// JoinStoreNames are a stream-stream join's four stores in Spark's order
// (SymmetricHashJoinStateManager.allStateStoreNames), the order of commit v2 unique ids.
var JoinStoreNames = []string{"left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"}

// IDsFor returns the v2 unique ids of partition p of a store of operator op from the commits.
func IDsFor(ctx context.Context, cp *checkpoint.Checkpoint, op int64, storeIdx, p int) IDs {
	return func(v int64) (string, bool) {
		if v < 1 || !cp.Commits.Has(v-1) {
			return "", false
		}
		c, err := cp.ReadCommit(ctx, v-1)
		if err != nil {
			return "", false
		}
		m, err := c.StateIDs()
		if err != nil || m == nil {
			return "", false
		}
		parts := m[op]
		if p >= len(parts) || storeIdx >= len(parts[p]) {
			return "", false
		}
		return parts[p][storeIdx], true
	}
}

// Each calls emit for every row, partition by partition. A partition's rows: the base's rows
// (snapshot order, or key order for a RocksDB version) that no later delta or changelog
// record names, then the keys those records put, sorted by key bytes (rebuild); the same
// order whether the records were held in memory or spilled. --changes: the file's order.
func (r *Reader) Each(ctx context.Context, emit func(*Row) error) error {
	if r.tws != nil {
		return r.tws.each(ctx, emit)
	}
	for _, p := range r.store.Partitions {
		if r.opts.Partition >= 0 && p.ID != r.opts.Partition {
			continue
		}
		if err := r.partition(ctx, p, emit); err != nil {
			return err
		}
	}
	if r.opts.Partition >= 0 && r.store.Partition(r.opts.Partition) == nil {
		return fmt.Errorf("operator %d store %s has no partition %d", r.op.ID, r.store.Name, r.opts.Partition)
	}
	return nil
}

func (r *Reader) partition(ctx context.Context, p *Partition, emit func(*Row) error) error {
	ids := IDsFor(ctx, r.cp, r.op.ID, r.storeIndex(), p.ID)
	rocks := r.store.Provider == ProviderRocksDB
	if r.opts.Changes {
		kind := KindDelta
		if rocks {
			kind = KindChangelog
		}
		f := pick(p.Files, r.Version, kind, ids)
		if f == nil {
			return &MissingError{Dir: p.Dir, Version: r.Version, Need: r.Version, Path: fileName(p.Dir, r.Version, kind, ids), Kind: kind}
		}
		row := &Row{BatchID: r.Version - 1, Partition: p.ID, line: r.carry}
		defer func() { r.carry = row.line }()
		return r.records(ctx, *f, func(rec statefmt.Record) error {
			row.ChangeType = ChangeUpdate
			if rec.Delete {
				row.ChangeType = ChangeDelete
			}
			ok, err := r.decode(row, rec.Key, rec.Value, rec.Delete)
			if err != nil || !ok {
				return err
			}
			return emit(row)
		})
	}
	chain, err := ChainFor(p, r.store.Provider, r.Version, ids)
	if err != nil {
		return err
	}
	// The base, usually the bulk, streams; the records of the deltas after it are held in
	// memory up to the budget, then spilled to sorted runs (spill.go).
	steps := func(fn func(key, value []byte, del bool) error) error {
		for _, f := range chain.Steps {
			if err := r.records(ctx, f, func(rec statefmt.Record) error { return fn(rec.Key, rec.Value, rec.Delete) }); err != nil {
				return err
			}
		}
		return nil
	}
	var base baseSource
	if b := chain.Base; b != nil {
		base = func(fn func(key, value []byte) error) error {
			if b.Kind == KindZip {
				// A RocksDB version: the live entries of the SST files its zip lists.
				return r.sstRows(ctx, p, *b, fn)
			}
			return r.records(ctx, *b, func(rec statefmt.Record) error { return fn(rec.Key, rec.Value) })
		}
	}
	row := &Row{Partition: p.ID, line: r.carry}
	defer func() { r.carry = row.line }()
	o := rebuildOptions{Budget: r.opts.MemoryBudget, TempDir: r.opts.TempDir, FanIn: r.opts.fanIn}
	stats, err := rebuild(ctx, o, base, steps, func(key, value []byte) error {
		ok, err := r.decode(row, key, value, false)
		if err != nil || !ok {
			return err
		}
		return emit(row)
	})
	r.spilledRuns += stats.Runs
	return err
}

// keyFilter is a Bloom filter of the keys the deltas after a snapshot changed: 16 bits per
// key and two probes in one 64-bit word picked by the hash (a blocked filter: one cache miss
// per snapshot row, not two), about 2% false positives, which the map then answers.
type keyFilter struct {
	words []uint64
	mask  uint64
	seed  maphash.Seed
}

func newKeyFilter(n int) *keyFilter {
	size := uint64(1)
	for size*64 < uint64(n)*16 {
		size <<= 1
	}
	return &keyFilter{words: make([]uint64, size), mask: size - 1, seed: maphash.MakeSeed()}
}

// newKeyFilterBytes is a filter of about size bytes (a power of two, at least 8), for a
// number of keys not known in advance.
func newKeyFilterBytes(size int64) *keyFilter {
	n := uint64(1)
	for n*2*8 <= uint64(max(size, 8)) {
		n <<= 1
	}
	return &keyFilter{words: make([]uint64, n), mask: n - 1, seed: maphash.MakeSeed()}
}

// probe returns the word index and the two bits of hash h.
func (f *keyFilter) probe(h uint64) (uint64, uint64) {
	return h & f.mask, 1<<(h>>52&63) | 1<<(h>>58)
}

func (f *keyFilter) add(k string) {
	w, bits := f.probe(maphash.String(f.seed, k))
	f.words[w] |= bits
}

func (f *keyFilter) addBytes(k []byte) {
	w, bits := f.probe(maphash.Bytes(f.seed, k))
	f.words[w] |= bits
}

func (f *keyFilter) mayHave(k []byte) bool {
	w, bits := f.probe(maphash.Bytes(f.seed, k))
	return f.words[w]&bits == bits
}

// open streams f decompressed, in the codec of the options or else the one its framing tells;
// closing it closes the file too.
func (r *Reader) open(ctx context.Context, f File) (io.ReadCloser, error) {
	rc, err := r.st.Open(ctx, f.Path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	codec := r.opts.Codec
	if codec == "" {
		head, _ := br.Peek(8)
		if codec = statefmt.DetectCodec(head); codec == "" {
			rc.Close()
			return nil, &statefmt.Error{File: f.Path, Offset: 0, Expected: "the framing of a compression codec (lz4, zstd, snappy, lzf)", Got: fmt.Sprintf("%q", head)}
		}
	}
	dr, err := statefmt.Decompress(f.Path, codec, br)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return &decompressed{ReadCloser: dr, file: rc}, nil
}

// decompressed is a decompressing reader that closes its file after itself.
type decompressed struct {
	io.ReadCloser
	file io.Closer
}

func (d *decompressed) Close() error {
	err := d.ReadCloser.Close()
	if ferr := d.file.Close(); err == nil {
		err = ferr
	}
	return err
}

// records streams the records of one file.
func (r *Reader) records(ctx context.Context, f File, fn func(statefmt.Record) error) error {
	dr, err := r.open(ctx, f)
	if err != nil {
		return err
	}
	defer dr.Close()
	kind := statefmt.Delta
	switch f.Kind {
	case KindSnapshot:
		kind = statefmt.Snapshot
	case KindChangelog:
		kind = statefmt.Changelog
	}
	// A buffered reader lets the record reader hand out records without copying them.
	src := bufio.NewReaderSize(dr, 256<<10)
	if kind == statefmt.Changelog {
		if _, err := statefmt.ReadChangelogHeader(f.Path, src); err != nil {
			return err
		}
	}
	rr := statefmt.NewRecordReader(f.Path, kind, src)
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if kind == statefmt.Changelog {
			// RocksDB's encoding puts a version byte before each UnsafeRow.
			if len(rec.Key) < 1 || (!rec.Delete && len(rec.Value) < 1) {
				return &statefmt.Error{File: f.Path, Offset: rec.Offset, Expected: "a RocksDB-encoded row (a version byte, then an UnsafeRow)", Got: "an empty row"}
			}
			rec.Key = rec.Key[1:]
			if !rec.Delete {
				rec.Value = rec.Value[1:]
			}
		} else if !rec.Delete {
			// Spark floors value sizes to a multiple of 8 (rows of Spark before 2.3 had 4 extra bytes).
			rec.Value = rec.Value[:len(rec.Value)/8*8]
		}
		if err := fn(rec); err != nil {
			var se *statefmt.Error
			var re *statefmt.RowError
			if errors.As(err, &re) && !errors.As(err, &se) {
				return &statefmt.Error{File: f.Path, Offset: rec.Offset, Expected: "a row of the state schema", Err: re}
			}
			return err
		}
	}
}

// decode fills row from the raw key and value, rendering its JSON (which also checks the
// rows against the schema) into row.line; ok is false when the key filter drops it.
func (r *Reader) decode(row *Row, key, value []byte, deleted bool) (bool, error) {
	row.RawKey, row.RawValue, row.hasValue = key, nil, !deleted
	if !deleted {
		row.RawValue = value
	}
	if r.opts.Raw && len(r.filter) == 0 {
		row.line = row.line[:0]
		return true, nil
	}
	if !r.keep {
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
	dst = append(dst, `"key":`...)
	if r.schema == nil {
		row.fam = nil
		dst = append(statefmt.AppendJSON(dst, key), `,"value":`...)
		if deleted {
			dst = append(dst, "null"...)
		} else {
			dst = statefmt.AppendJSON(dst, value)
		}
		row.line = row.endLine(dst)
		return true, nil
	}
	f := r.schema.Family(statefmt.DefaultColumnFamily)
	row.fam = f
	if len(r.filter) > 0 {
		k, err := statefmt.DecodeRow(key, f.Key)
		if err != nil {
			return false, err
		}
		for _, kv := range r.filter {
			i := slices.Index(k.Names, kv[0])
			if i < 0 || statefmt.Text(k.Values[i]) != kv[1] {
				return false, nil
			}
		}
	}
	var err error
	if err := r.fit(row.Partition, key, value, deleted, f); err != nil {
		return false, err
	}
	// On an error the line is cut back: the block holds whole rows only.
	if dst, err = statefmt.AppendRowJSON(dst, key, f.Key); err != nil {
		return false, r.schemaErr(err, "key", f.Key)
	}
	dst = append(dst, `,"value":`...)
	if deleted {
		dst = append(dst, "null"...)
	} else if dst, err = statefmt.AppendRowJSON(dst, value, f.Value); err != nil {
		return false, r.schemaErr(err, "value", f.Value)
	}
	row.line = row.endLine(dst)
	return true, nil
}

// endLine appends what ends every row's JSON: its partition.
func (row *Row) endLine(dst []byte) []byte {
	dst = append(dst, `,"partition_id":`...)
	dst = strconv.AppendInt(dst, int64(row.Partition), 10)
	return append(dst, '}')
}

// AppendJSON renders row as Spark's state reader's JSON row: key, value, partition_id; changes
// rows start with batch_id and change_type.
func (row *Row) AppendJSON(dst []byte) []byte {
	return append(dst, row.line[row.start:]...)
}

// WriteJSON writes every row to w as a line of JSON (AppendJSON's), rendered straight into
// blocks of about 64 KiB that are written whole: `state read -o json` copies no row twice.
// The rows before an error are written too, as a stream would have.
func (r *Reader) WriteJSON(ctx context.Context, w io.Writer) error {
	r.keep, r.carry = true, make([]byte, 0, 64<<10)
	defer func() { r.keep, r.carry = false, nil }()
	err := r.Each(ctx, func(row *Row) error {
		row.line = append(row.line, '\n')
		if len(row.line) < 60<<10 {
			return nil
		}
		_, err := w.Write(row.line)
		row.line = row.line[:0]
		return err
	})
	if len(r.carry) > 0 {
		if _, werr := w.Write(r.carry); err == nil {
			err = werr
		}
	}
	return err
}
