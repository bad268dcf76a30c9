// Package repartition plans `ckpt state repartition`: the state of every stateful operator
// rehashed to N partitions by Spark's own rule (HashPartitioning: Murmur3, seed 42, over the
// operator's key columns, pmod N), written as Spark 4.2.0's offline repartition writes it: a
// no-data batch L+1 (offsets/L+1 as offsets/L with the new spark.sql.shuffle.partitions,
// commits/L+1 as commits/L) and state version L+2 for every new partition, no existing file
// changed. The plan is a journal.Plan, so it is applied with a journal and undone byte for byte.
package repartition

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Strategy names a repartition in its journal.
const Strategy journal.Strategy = "repartition"

// Spark's conf keys the plan reads and writes.
const (
	ConfShufflePartitions = "spark.sql.shuffle.partitions"
	ConfStateCodec        = "spark.sql.streaming.stateStore.compression.codec"
)

// Spark 4.2.0's texts for the refusals it shares with ckpt (error-conditions.json,
// STATE_REPARTITION_INVALID_CHECKPOINT.*).
const (
	sparkLastBatchFailed = "[STATE_REPARTITION_INVALID_CHECKPOINT.LAST_BATCH_FAILED] The provided checkpoint location '%s' is in an invalid state. " +
		"The last batch ID %d didn't finish successfully. Please make sure the streaming query finishes successfully, before repartitioning."
	sparkAlreadyMatch = "[STATE_REPARTITION_INVALID_CHECKPOINT.SHUFFLE_PARTITIONS_ALREADY_MATCH] The provided checkpoint location '%s' is in an invalid state. " +
		"The number of shuffle partitions in the last committed batch (id=%d) is the same as the requested %d partitions."
	sparkNoCommittedBatch = "[STATE_REPARTITION_INVALID_CHECKPOINT.NO_COMMITTED_BATCH] The provided checkpoint location '%s' is in an invalid state. " +
		"There is no committed microbatch. Make sure the streaming query has successfully completed at least one microbatch before repartitioning."
	// BeyondSparkHDFS is what the plan says where Spark 4.2.0 itself would refuse.
	BeyondSparkHDFS = "Spark 4.2.0 refuses the HDFS-backed provider (STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER); ckpt writes its snapshot format"
	// BeyondSparkRelease is said for the releases that have no repartition at all.
	BeyondSparkRelease = "Spark 3.5, 4.0 and 4.1 have no state repartition; the result is in the formats every release reads (HDFS-backed snapshot, RocksDB zip and SST file, offsets v1, commit v1)"
)

// DryRunStage is the run a dry run's copies name: nothing is staged, --execute stages the
// files under a run of its own.
const DryRunStage = "<run>"

// Options configure NewPlan.
type Options struct {
	// Partitions is the new number of shuffle partitions (--partitions), at least 1.
	Partitions int
	// Planner is the restart the plan is predicted and verified for.
	Planner recovery.Options
	// Stage, when set, receives every new state file as it is computed, streamed to
	// journal.StagedPath(StageRun, path) (the checkpoint's own store for --execute, which the
	// journal's copies place them from). nil: a dry run that writes nothing; the files' digests
	// and sizes are computed all the same.
	Stage    storage.Store
	StageRun string
	// SortBudget bounds the memory that sorts a RocksDB store's new partitions (their rows
	// past it spill to sorted runs in TempDir, "": os.TempDir()); 0: DefaultSortBudget.
	SortBudget int64
	TempDir    string
	sortFanIn  int // tests: runs merged at once
}

// DefaultSortBudget is the rows a RocksDB store's sort holds in memory over all its new
// partitions before it spills them to sorted runs (docs/benchmarks.md: 1 GB of state within
// 128 MB of RSS).
const DefaultSortBudget = 16 << 20

// Plan is what a repartition would write.
type Plan struct {
	Checkpoint string `json:"checkpoint"`
	// Batch is L, the last committed batch; NewBatch L+1 the no-data batch the plan adds;
	// Version L+2 the state version written for every new partition.
	Batch    int64 `json:"batch"`
	NewBatch int64 `json:"newBatch"`
	Version  int64 `json:"version"`
	// From and To are the shuffle partitions before and after.
	From int `json:"from"`
	To   int `json:"to"`
	// Codec is the state files' compression codec (the query's conf).
	Codec     string      `json:"codec"`
	Operators []*Operator `json:"operators"`
	// Rows is the number of state rows rehashed, over every operator and store.
	Rows int64 `json:"rows"`
	// Bytes is the size of the files the plan adds.
	Bytes int64 `json:"bytes"`
	// Staged says whether the new state files were written to the staging directory (StageRun)
	// that the copies name; false for a dry run.
	Staged   bool   `json:"staged"`
	StageRun string `json:"stageRun"`
	// BeyondSpark says where ckpt does what Spark 4.2.0 would refuse or has not.
	BeyondSpark []string         `json:"beyondSpark"`
	Actions     []journal.Action `json:"actions"`
	Before      *recovery.Result `json:"before"`
	After       *recovery.Result `json:"after"`
	Refused     string           `json:"refused,omitempty"`
	Warnings    []string         `json:"warnings"`

	options recovery.Options
	// sortRuns counts the sorted runs RocksDB stores spilled to disk (tests).
	sortRuns int
}

// Operator is one stateful operator of the plan.
type Operator struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// Refused says why this operator cannot be repartitioned ("" when it can).
	Refused string   `json:"refused,omitempty"`
	Stores  []*Store `json:"stores"`
}

// Store is one store of an operator: its key columns and rows per new partition.
type Store struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// KeyColumns are the key columns HashPartitioning hashes, in order.
	KeyColumns []string `json:"keyColumns"`
	Rows       int64    `json:"rows"`
	// RowsFrom are the rows per old partition, RowsTo per new partition.
	RowsFrom []int64 `json:"rowsFrom"`
	RowsTo   []int64 `json:"rowsTo"`
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *Plan) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: Strategy, Actions: p.Actions, After: p.After, Options: p.options}
}

// refuse ends the plan with a refusal and no action.
func (p *Plan) refuse(format string, args ...any) (*Plan, error) {
	p.Refused = fmt.Sprintf(format, args...)
	p.Actions = []journal.Action{}
	return p, nil
}

// NewPlan plans the repartition of the checkpoint in s to o.Partitions partitions. It reads
// every row of the latest committed state version once and changes nothing.
func NewPlan(ctx context.Context, s storage.Store, o Options) (*Plan, error) {
	if o.Partitions < 1 {
		return nil, fmt.Errorf("--partitions %d: want 1 or more", o.Partitions)
	}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	p := &Plan{Checkpoint: s.URI(), To: o.Partitions, Operators: []*Operator{}, BeyondSpark: []string{},
		Actions: []journal.Action{}, Warnings: []string{}, options: o.Planner}
	if p.Before, err = recovery.Plan(ctx, cp, o.Planner); err != nil {
		return nil, err
	}
	base, why, err := LoadBase(ctx, cp)
	if err != nil {
		return nil, err
	}
	switch {
	case why == nil:
	case why.Kind == NoCommittedBatch:
		return p.refuse(sparkNoCommittedBatch, s.URI())
	case why.Kind == LastBatchFailed:
		return p.refuse(sparkLastBatchFailed+" (offsets/%d has no commit: restart the query and let batch %d finish, then repartition.)", s.URI(), why.Batch, why.Batch, why.Batch)
	default:
		return p.refuse("%s", why.Reason)
	}
	last, off := base.Batch, base.Offsets
	p.Batch, p.NewBatch, p.Version = last, last+1, last+2
	p.From, p.Codec = base.Partitions, base.Codec
	if p.From == p.To {
		return p.refuse(sparkAlreadyMatch, s.URI(), last, p.To)
	}

	listing, err := state.Scan(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(listing.Operators) == 0 {
		return p.refuse("the checkpoint has no state (no stateful operator under state/): spark.sql.shuffle.partitions of a stateless query changes with the query's own conf on restart")
	}
	crc := HasChecksum(ctx, s, cp, last)
	p.StageRun = o.StageRun
	if p.StageRun == "" {
		p.StageRun = DryRunStage
	}
	// The new files in write order: the small log files with their bytes, the state files
	// by digest and size, their bytes streamed to the stage (or nowhere).
	ov := journal.NewOverlay(cp)
	add := func(f string, data []byte) error {
		a := journal.Action{Op: journal.OpWrite, Path: f, Data: data, Reason: reason(f, p)}
		if err := ov.Add(ctx, &a); err != nil {
			return err
		}
		p.Bytes += a.Size
		p.Actions = append(p.Actions, a)
		return nil
	}
	out := &output{ctx: ctx, s: s, o: o, stage: o.Stage, run: p.StageRun, codec: p.Codec, ov: ov, crc: crc,
		reason: func(f string) string { return reason(f, p) }}
	defer out.abort()
	for _, lop := range listing.Operators {
		op, err := planOperator(ctx, cp, listing, lop, p, out)
		if err != nil {
			return nil, err
		}
		p.Operators = append(p.Operators, op)
		if op.Refused != "" {
			return p.refuse("operator %d (%s): %s", op.ID, op.Name, op.Refused)
		}
	}
	for _, op := range p.Operators {
		if slices.ContainsFunc(op.Stores, func(st *Store) bool { return st.Provider == state.ProviderHDFS }) && !slices.Contains(p.BeyondSpark, BeyondSparkHDFS) {
			p.BeyondSpark = append(p.BeyondSpark, BeyondSparkHDFS)
		}
	}
	p.BeyondSpark = append(p.BeyondSpark, BeyondSparkRelease)
	p.Actions, p.Bytes = append(p.Actions, out.actions...), p.Bytes+out.bytes

	// offsets/L+1: offsets/L with the new partition count; commits/L+1: commits/L.
	newOff := *off
	meta := *off.Metadata
	meta.Conf = append([]logformat.KV(nil), off.Metadata.Conf...)
	for i := range meta.Conf {
		if meta.Conf[i].Key == ConfShufflePartitions {
			meta.Conf[i].Value = strconv.Itoa(p.To)
		}
	}
	newOff.Metadata = &meta
	if err := NoDataBatch(ctx, cp, last, &newOff, crc, add); err != nil {
		return nil, err
	}
	if p.After, err = ov.Predict(ctx, o.Planner); err != nil {
		return nil, err
	}
	if p.After.Outcome == "fail" {
		return p.refuse("the recovery planner predicts that the restart after the repartition fails: %s", p.After.Verdict())
	}
	p.Staged = o.Stage != nil
	out.keep() // placed by the journal from here on, or removed by the caller
	return p, nil
}

// planOperator rehashes every store of one operator, handing each new file to add.
func planOperator(ctx context.Context, cp *checkpoint.Checkpoint, l *state.Listing, lop *state.Operator, p *Plan, out *output) (*Operator, error) {
	op := &Operator{ID: lop.ID, Stores: []*Store{}}
	if lop.MetadataFile == "" && len(lop.MetadataV2Files) > 0 {
		op.Name = "transformWithState"
		op.Refused = "transformWithState keeps several state variables and timers in column families; ckpt cannot tell which key columns Spark hashes for each and does not repartition it"
		return op, nil
	}
	var kind keyKind
	if lop.MetadataFile == "" {
		// Spark before 4.0 may write no operator metadata: the stores tell a join; a single
		// default store is hashed over its whole key, which is right for aggregations,
		// dropDuplicates and flatMapGroupsWithState, not for session windows (their key ends
		// with the session, which Spark does not hash): the plan says it inferred this.
		var ok bool
		if kind, ok = inferKind(lop); !ok {
			op.Refused = "no operator metadata (" + path.Join(lop.Dir, "_metadata/metadata") + ") and stores " + storeNames(lop) +
				": the operator's kind, and so the key columns Spark hashes, cannot be told"
			return op, nil
		}
		op.Name = "(inferred: " + kindNames[kind] + ")"
		p.Warnings = append(p.Warnings, fmt.Sprintf("operator %d has no operator metadata (written by Spark 4.0 and later): ckpt inferred %s from its stores and hashes %s; "+
			"a session window aggregation would need its session column left out, so do not repartition one", lop.ID, kindNames[kind], map[keyKind]string{allColumns: "the whole key", joinColumns: "the join keys"}[kind]))
	} else {
		data, err := cp.Store.ReadFile(ctx, lop.MetadataFile)
		if err != nil {
			return nil, err
		}
		m, err := logformat.ParseOperatorMetadata(lop.MetadataFile, data)
		if err != nil {
			return nil, err
		}
		op.Name = m.OperatorName
		var ok bool
		kind, ok = kinds[m.OperatorName]
		if !ok {
			op.Refused = fmt.Sprintf("ckpt repartitions streaming aggregations, dropDuplicates, stream-stream joins and flatMapGroupsWithState; "+
				"for %q it cannot tell which key columns Spark's HashPartitioning hashes", m.OperatorName)
			return op, nil
		}
	}
	for _, ls := range lop.Stores {
		write := planStore
		switch ls.Provider {
		case state.ProviderHDFS:
		case state.ProviderRocksDB:
			write = planRocksStore
		default:
			op.Refused = fmt.Sprintf("store %s is %s: ckpt writes the HDFS-backed and RocksDB providers' formats only", ls.Name, ls.Provider)
			return op, nil
		}
		for _, lp := range ls.Partitions {
			for _, f := range lp.Files {
				if f.UniqueID != "" {
					op.Refused = "state checkpoint format v2 (file names with unique ids): the new versions' ids would go in the commit log, which ckpt does not write"
					return op, nil
				}
			}
		}
		st, err := write(ctx, cp, l, lop, ls, kind, p, out)
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

// refusal is a reason a store cannot be repartitioned (not a failure to read it).
type refusal string

func (r refusal) Error() string { return string(r) }

// planStore reads the store's rows at version L+1 of partitions 0..From-1, partition by
// partition, and streams each row to the snapshot of its new partition: what it holds is one
// row and a compression block per new partition, whatever the size of the state.
func planStore(ctx context.Context, cp *checkpoint.Checkpoint, l *state.Listing, lop *state.Operator, ls *state.Store, kind keyKind, p *Plan, out *output) (*Store, error) {
	st := &Store{Name: ls.Name, Provider: ls.Provider, RowsFrom: make([]int64, p.From), RowsTo: make([]int64, p.To)}
	files := make([]*newFile, p.To)
	for np := range files {
		dir := path.Join(lop.Dir, strconv.Itoa(np))
		if ls.Name != state.DefaultStore {
			dir = path.Join(dir, ls.Name)
		}
		var err error
		if files[np], err = out.create(path.Join(dir, strconv.FormatInt(p.Version, 10)+".snapshot")); err != nil {
			return nil, err
		}
	}
	err := eachRehashed(ctx, cp, l, lop, ls, kind, p, st, func(np int, key, value []byte) error {
		return files[np].w.Put(key, value)
	})
	if err != nil {
		return nil, err
	}
	for np, f := range files {
		if err := out.finish(f); err != nil {
			return nil, err
		}
		st.Rows += st.RowsTo[np]
	}
	p.Rows += st.Rows
	return st, nil
}

// eachRehashed reads the store's rows at version L+1 of partitions 0..From-1, partition by
// partition, and hands each row's bytes to fn with its new partition (Spark's HashPartitioning
// of its key columns, hashed in place where statefmt.PartitionRow can), counting them in st.
func eachRehashed(ctx context.Context, cp *checkpoint.Checkpoint, l *state.Listing, lop *state.Operator, ls *state.Store, kind keyKind, p *Plan, st *Store, fn func(np int, key, value []byte) error) error {
	var cols []int
	var keyType *statefmt.Type
	for old := 0; old < p.From; old++ {
		if ls.Partition(old) == nil {
			return fmt.Errorf("operator %d store %s has no partition %d of the %d in offsets/%d", lop.ID, ls.Name, old, p.From, p.Batch)
		}
		r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: lop.ID, Store: ls.Name, Partition: old, Version: p.Batch + 1, Raw: true})
		if err != nil {
			return err
		}
		sc := r.Schema()
		if sc == nil {
			return refusal(fmt.Sprintf("store %s has no schema file: ckpt cannot decode the keys to hash them", ls.Name))
		}
		if keyType == nil {
			keyType = sc.Family(statefmt.DefaultColumnFamily).Key
			if cols, err = kind.columns(ls.Name, keyType); err != nil {
				return err
			}
			for _, c := range cols {
				st.KeyColumns = append(st.KeyColumns, keyType.Fields[c].Name)
			}
		}
		err = r.Each(ctx, func(row *state.Row) error {
			np, ok, err := statefmt.PartitionRow(row.RawKey, keyType, cols, p.To)
			if err == nil && !ok {
				var k *statefmt.Object
				if k, err = statefmt.DecodeRow(row.RawKey, keyType); err != nil {
					return err
				}
				np, err = statefmt.Partition(k, keyType, cols, p.To)
			}
			if err != nil {
				return fmt.Errorf("operator %d store %s partition %d: %w", lop.ID, ls.Name, old, err)
			}
			st.RowsFrom[old]++
			st.RowsTo[np]++
			return fn(np, row.RawKey, row.RawValue)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// output is where a plan's new state files go: a hash and a size for each (a dry run), and the
// bytes streamed to the stage when there is one.
type output struct {
	ctx   context.Context
	s     storage.Store
	o     Options
	stage storage.Store // nil: a dry run
	run   string
	codec string
	// actions are the copies of the files placed so far, bytes their size.
	actions []journal.Action
	bytes   int64
	reason  func(string) string
	ov      *journal.Overlay
	crc     bool
	// open are the files being written, staged those written to the stage so far: abort
	// removes both unless the plan completes.
	open   []*newFile
	staged []string
}

// newFile is one new state file being written.
type newFile struct {
	path string
	w    *statefmt.FileWriter
	buf  *bufio.Writer
	sum  hash.Hash
	size int64
	crc  *logformat.HadoopChecksummer
	dst  storage.NewFile
}

// Write feeds the compressed bytes to the digest, the size, the checksum and the stage.
func (f *newFile) Write(b []byte) (int, error) {
	f.sum.Write(b)
	f.size += int64(len(b))
	if f.crc != nil {
		_, _ = f.crc.Write(b)
	}
	if f.dst != nil {
		return f.dst.Write(b)
	}
	return len(b), nil
}

// stageBuffer batches the compressor's blocks into fewer writes of the stage.
const stageBuffer = 64 << 10

// create starts a new snapshot, compressed in the query's codec.
func (o *output) create(f string) (*newFile, error) {
	nf, err := o.createRaw(f)
	if err != nil {
		return nil, err
	}
	if nf.w, err = statefmt.NewFileWriter(o.codec, nf.buf); err != nil {
		return nil, err
	}
	return nf, nil
}

// createRaw starts a new state file whose bytes are written to its buf as they are (a RocksDB
// version's SST file): hashed, counted, checksummed and staged like a snapshot.
func (o *output) createRaw(f string) (*newFile, error) {
	if err := o.absent(f); err != nil {
		return nil, err
	}
	nf := &newFile{path: f, sum: sha256.New()}
	if o.crc {
		nf.crc = &logformat.HadoopChecksummer{}
	}
	if o.stage != nil {
		var err error
		if nf.dst, err = storage.CreateWriter(o.ctx, o.stage, journal.StagedPath(o.run, f)); err != nil {
			return nil, err
		}
	}
	o.open = append(o.open, nf)
	nf.buf = bufio.NewWriterSize(nf, stageBuffer)
	return nf, nil
}

// absent checks that the checkpoint has no file f: a new state file never replaces one.
func (o *output) absent(f string) error {
	if _, err := o.s.Stat(o.ctx, f); err == nil {
		return fmt.Errorf("repartition: %s exists already; the new state version would replace it", f)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// rename gives f, not yet finished, the path to instead (in the same directory): its staged
// copy too.
func (o *output) rename(f *newFile, to string) error {
	if err := o.absent(to); err != nil {
		return err
	}
	if f.dst != nil {
		if err := f.dst.Rename(journal.StagedPath(o.run, to)); err != nil {
			return err
		}
	}
	f.path = to
	return nil
}

// finish ends f and adds its copy (and its checksum's) to the plan.
func (o *output) finish(f *newFile) error {
	if f.w != nil {
		if err := f.w.Close(); err != nil {
			return err
		}
	}
	if err := f.buf.Flush(); err != nil {
		return err
	}
	if f.dst != nil {
		if err := f.dst.Commit(); err != nil {
			return err
		}
		o.staged = append(o.staged, journal.StagedPath(o.run, f.path))
	}
	if err := o.place(f.path, journal.Digest(hex.EncodeToString(f.sum.Sum(nil))), f.size); err != nil {
		return err
	}
	if f.crc == nil {
		return nil
	}
	data := f.crc.Sum()
	crc := ChecksumPath(f.path)
	if o.stage != nil {
		if err := o.stage.WriteFile(o.ctx, journal.StagedPath(o.run, crc), data); err != nil {
			return err
		}
		o.staged = append(o.staged, journal.StagedPath(o.run, crc))
	}
	return o.place(crc, journal.DigestOf(data), int64(len(data)))
}

// place adds the copy of a staged file to the plan. The overlay the restart is predicted on
// gets the name without the bytes: the planner lists state files, it does not read them.
func (o *output) place(f string, d journal.Digest, size int64) error {
	if err := o.absent(f); err != nil {
		return err
	}
	a := journal.Action{Op: journal.OpCopy, Path: f, From: journal.StagedPath(o.run, f),
		After: d, Size: size, Reason: o.reason(f)}
	o.ov.Placed(a)
	o.bytes += size
	o.actions = append(o.actions, a)
	return nil
}

// whole adds a new state file whose bytes are in memory (a RocksDB version's SST file and zip),
// and its checksum where the checkpoint has them: staged as the streamed files are, and placed
// by a copy.
func (o *output) whole(f string, data []byte) error {
	files := [][2][]byte{{[]byte(f), data}}
	if o.crc {
		files = append(files, [2][]byte{[]byte(ChecksumPath(f)), logformat.HadoopChecksum(data)})
	}
	for _, nf := range files {
		name, data := string(nf[0]), nf[1]
		if o.stage != nil {
			if err := o.stage.WriteFile(o.ctx, journal.StagedPath(o.run, name), data); err != nil {
				return err
			}
			o.staged = append(o.staged, journal.StagedPath(o.run, name))
		}
		if err := o.place(name, journal.DigestOf(data), int64(len(data))); err != nil {
			return err
		}
	}
	return nil
}

// keep keeps what was staged.
func (o *output) keep() { o.open, o.staged = nil, nil }

// abort removes what a plan that did not complete staged.
func (o *output) abort() {
	for _, f := range o.open {
		if f.dst != nil {
			f.dst.Abort()
		}
	}
	for _, f := range o.staged {
		_ = o.stage.Delete(context.WithoutCancel(o.ctx), f)
	}
}

// keyKind says which key columns HashPartitioning hashes for an operator kind.
type keyKind int

const (
	// allColumns: the key is exactly the distribution's expressions (aggregation's grouping
	// keys, dropDuplicates' columns, flatMapGroupsWithState's grouping attributes).
	allColumns keyKind = iota
	// joinColumns: a stream-stream join hashes its join keys; keyWithIndexToValue's key is the
	// join keys then the value's index, which is not hashed.
	joinColumns
)

var kindNames = map[keyKind]string{allColumns: "an aggregation, dropDuplicates or flatMapGroupsWithState", joinColumns: "a stream-stream join"}

// inferKind tells the key rule from the stores alone: a join's four, or one default store.
func inferKind(lop *state.Operator) (keyKind, bool) {
	names := map[string]bool{}
	for _, s := range lop.Stores {
		names[s.Name] = true
	}
	if len(names) == len(state.JoinStoreNames) {
		for _, n := range state.JoinStoreNames {
			if !names[n] {
				return 0, false
			}
		}
		return joinColumns, true
	}
	return allColumns, len(names) == 1 && names[state.DefaultStore]
}

func storeNames(lop *state.Operator) string {
	var out []string
	for _, s := range lop.Stores {
		out = append(out, s.Name)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// kinds maps the operator metadata's operatorName to its key rule.
var kinds = map[string]keyKind{
	"stateStoreSave":         allColumns,
	"dedupe":                 allColumns,
	"dedupeWithinWatermark":  allColumns,
	"flatMapGroupsWithState": allColumns,
	"symmetricHashJoin":      joinColumns,
}

func (k keyKind) columns(store string, t *statefmt.Type) ([]int, error) {
	n := len(t.Fields)
	if k == joinColumns && (store == "left-keyWithIndexToValue" || store == "right-keyWithIndexToValue") {
		if n < 2 || t.Fields[n-1].Name != "index" {
			return nil, refusal(fmt.Sprintf("store %s: a key of %d columns whose last is not the value index", store, n))
		}
		n--
	}
	if n == 0 {
		return nil, refusal(fmt.Sprintf("store %s has a key without columns", store))
	}
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	return cols, nil
}

func reason(f string, p *Plan) string {
	if r, ok := BatchReason(f, p.Batch, fmt.Sprintf("offsets/%d with %s %d instead of %d", p.Batch, ConfShufflePartitions, p.To, p.From)); ok {
		return r
	}
	return fmt.Sprintf("state version %d of the new partition, rows rehashed by Spark's HashPartitioning", p.Version)
}
