// The state the restart's first batch loads: which version of which files, per operator, store
// and partition, and the failure Spark meets there.

package recovery

import (
	"fmt"
	"sort"
)

// The reasons a restart fails on its state stores (Result.Reason). Like Reasons, the set is
// closed; Result.FailedFile is the state file Spark fails on.
const (
	// ReasonStateFileMissing: a file the first batch needs to load its state version is not
	// there (a delta or changelog between the newest snapshot and the version; an SST file a
	// RocksDB zip lists).
	ReasonStateFileMissing = "state-file-missing"
	// ReasonStateFileCorrupt: a file the first batch reads to load its state version does not
	// decode as Spark reads it (empty, truncated, flipped bytes, a checksum that does not match).
	ReasonStateFileCorrupt = "state-file-corrupt"
	// ReasonStateFormatUnsupported: the state the first batch loads is in a format the release
	// (or the restart's checkpoint format setting) does not read: checkpoint format v2 file
	// names under the v1 loader, RocksDB SST files of a newer table format.
	ReasonStateFormatUnsupported = "state-format-unsupported"
)

// StateReasons are the Result.Reason values of a restart that fails loading state.
var StateReasons = []string{ReasonStateFileMissing, ReasonStateFileCorrupt, ReasonStateSchemaMismatch, ReasonStateFormatUnsupported}

// Providers and file kinds of StateInventory (internal/state's names).
const (
	StateProviderHDFS    = "hdfs"
	StateProviderRocksDB = "rocksdb"

	StateKindDelta     = "delta"
	StateKindSnapshot  = "snapshot"
	StateKindZip       = "zip"
	StateKindChangelog = "changelog"
)

// StateInventory is what the checkpoint's state stores hold, read by the caller (the command
// lists state/ with internal/state and reads the files the restart loads, Result.State.Loads):
// plain data, so that Plan does no I/O. Plan then predicts the load of the version the restart's
// first batch needs in every partition, as Spark's providers do it.
type StateInventory struct {
	Operators []StateOperator
	// Checked says that the files of every load (Result.State.Loads, from a Plan without
	// damage) were read and StateFile.Damage says what was found; without it, only missing
	// files are predicted.
	Checked bool
}

// StateOperator is state/<op>/.
type StateOperator struct {
	ID     int64
	Stores []StateStore
}

// StateStore is one store of an operator: its provider (StateProviderHDFS or
// StateProviderRocksDB, as the files tell) and partitions.
type StateStore struct {
	Name       string
	Provider   string
	Partitions []StatePartition
	// Schema is what reading the rows of the version the restart loads against the store's
	// schema file found; nil when they fit or were not read.
	Schema *StateSchemaFit
}

// StatePartition is one partition directory of a store, with its version files.
type StatePartition struct {
	ID    int
	Dir   string
	Files []StateFile
}

// StateFile is one version file (checkpoint-relative Path).
type StateFile struct {
	Path    string
	Version int64
	Kind    string
	// UniqueID is the checkpoint format v2 id of a file named <version>_<uuid>.<ext>; "" in
	// format v1.
	UniqueID string
	// SSTFormat is, for a RocksDB zip, the highest BlockBasedTable format_version of the SST
	// files it lists, as their footers say; 0 when they were not read (Checked) or are missing.
	SSTFormat int
	// Damage is what reading the file found; nil when it reads whole or was not read.
	Damage *StateDamage
}

// Damage kinds: how a state file fails to read, in the terms that decide Spark's error.
const (
	// DamageEmpty: the file has no bytes.
	DamageEmpty = "empty"
	// DamageEndsEarly: the decompressed stream ends, at a codec block boundary, before the
	// records' end marker.
	DamageEndsEarly = "ends-early"
	// DamageCodecTruncated: the file ends inside a codec block (or its header).
	DamageCodecTruncated = "codec-truncated"
	// DamageCodecCorrupt: a codec block does not decompress, or its checksum does not match.
	DamageCodecCorrupt = "codec-corrupt"
	// DamageKeySize, DamageValueSize: a record's size field is negative (Size).
	DamageKeySize   = "key-size"
	DamageValueSize = "value-size"
	// DamageZipTruncated: a RocksDB zip ends inside an entry's data.
	DamageZipTruncated = "zip-truncated"
	// DamageZipCorrupt: a RocksDB zip does not unzip otherwise.
	DamageZipCorrupt = "zip-corrupt"
	// DamageSSTMissing: an SST file the zip lists is missing below SSTs/ (File), or has
	// another size.
	DamageSSTMissing = "sst-missing"
	// DamageSSTFooter: an SST file (File) has no valid footer: RocksDB fails to open the DB.
	DamageSSTFooter = "sst-footer"
	// DamageSSTBlock: a block of an SST file (File) fails its checksum: RocksDB fails when the
	// batch reads it.
	DamageSSTBlock = "sst-block"
	// DamageChecksum: Spark 4.1+'s checksum file <file>.crc does not match the file
	// (StateDamage.Checksum; StateFailure.Damage only).
	DamageChecksum = "checksum"
	// DamageV2Name: a RocksDB zip named <version>_<uuid>.zip (checkpoint format v2) in a
	// partition the restart loads with the format v1 loader (StateFailure.Damage only).
	DamageV2Name = "checkpoint-v2-name"
	// DamageSSTFormat: an SST file of the zip the load opens has a BlockBasedTable
	// format_version the release's RocksDB does not read (StateFailure.Damage only).
	DamageSSTFormat = "sst-format"
)

// StateDamage says how a file fails to read.
type StateDamage struct {
	// Kind is how the file fails to decode, one of the Damage* kinds; "" when it decodes and
	// only its checksum file disagrees.
	Kind string
	// File is the damaged file when it is not the inventory's file itself (an SST file of a
	// zip); "" otherwise.
	File string
	// Size is the bad size of DamageKeySize and DamageValueSize; the file's size for
	// DamageSSTMissing when it has another size (-1: missing).
	Size int64
	// Detail is what ckpt's reader said, for messages.
	Detail string
	// Magic is the number that DamageSSTFooter's file has where RocksDB's table magic belongs.
	Magic uint64
	// Checksum is set when Spark 4.1+'s checksum file <file>.crc does not match the file,
	// which those releases check before they decode it.
	Checksum *ChecksumMismatch
}

// ChecksumMismatch is a Spark 4.1+ checksum file's record against the file.
type ChecksumMismatch struct {
	// Expected and ExpectedSize are the checksum file's CRC32C (as a signed int, as Spark
	// writes it) and mainFileSize; Computed and Size the file's.
	Expected, Computed int32
	ExpectedSize, Size int64
}

// StateLoad is what the restart's first batch loads from the state stores (Result.State).
type StateLoad struct {
	// Version is the state version the first batch loads: batch N loads version N, the state
	// the batch before it committed (HDFSBackedStateStoreProvider.getStore(N), RocksDB.load(N)).
	Version int64 `json:"version"`
	// Checked says whether the files were read for damage (false: only their listing).
	Checked bool `json:"checked"`
	// Loads are the partitions' loads, by operator, store and partition.
	Loads []StatePartitionLoad `json:"loads"`
	// Failure is the load Spark fails on, nil when every load succeeds.
	Failure *StateFailure `json:"failure"`
	// Schemas are the stores whose rows do not fit their schema file, by operator and store,
	// with what Spark's schema check does; the first that fails fails the restart, before
	// any load (Result.Reason ReasonStateSchemaMismatch).
	Schemas []StateSchemaVerdict `json:"schemas,omitempty"`
	// Batch is the batch that runs against Version (Result.NextBatch), and Rerun says that it
	// runs again (Result.RerunBatch): the batch whose commit is missing re-runs against the
	// version the batch before it committed, never against the one it wrote itself.
	Batch int64 `json:"batch"`
	Rerun bool  `json:"rerun"`
	// Stores sums up the loads per operator and store: where version Version comes from, and
	// the files of the version the batch writes that a crashed attempt left.
	Stores []StateStoreLoad `json:"stores"`
}

// StateStoreLoad is the load of one store of one operator, summed up over its partitions.
type StateStoreLoad struct {
	Operator int64  `json:"operator"`
	Store    string `json:"store"`
	// Provider is StateProviderHDFS or StateProviderRocksDB.
	Provider   string `json:"provider"`
	Partitions int    `json:"partitions"`
	// BasePartitions are the partitions whose load starts from a snapshot (HDFS-backed) or a
	// zip (RocksDB) at or below Version, BaseMin and BaseMax the lowest and highest such
	// version; the other partitions start from the empty map and read every delta or
	// changelog from version 1.
	BasePartitions int   `json:"basePartitions"`
	BaseMin        int64 `json:"baseMin,omitempty"`
	BaseMax        int64 `json:"baseMax,omitempty"`
	// Steps is the number of deltas (changelogs) the loads read after their bases, all
	// partitions together.
	Steps int `json:"steps"`
	// Ahead are the partitions that already hold a file of version Version+1, the version the
	// batch writes: a re-run batch's crashed attempt wrote them (all partitions: it crashed
	// after its state commit; some: during it). The load does not read them; the batch
	// writes that version again (the HDFS-backed provider overwrites its delta).
	Ahead []int `json:"ahead"`
}

// StatePartitionLoad is the load of one partition of one store.
type StatePartitionLoad struct {
	Operator  int64  `json:"operator"`
	Store     string `json:"store"`
	Partition int    `json:"partition"`
	// Files are the files Spark opens, in order: the base (snapshot or zip) and the deltas or
	// changelogs after it; a file that is missing is listed where Spark looks for it.
	Files []string `json:"files"`
	// Failure is where this load fails, nil when it succeeds as far as ckpt read. Spark stops
	// at the first (StateLoad.Failure); doctor reports each.
	Failure *StateFailure `json:"failure,omitempty"`
}

// StateFailure is the first load that fails and why.
type StateFailure struct {
	Operator  int64  `json:"operator"`
	Store     string `json:"store"`
	Partition int    `json:"partition"`
	// File is the file Spark fails on (a missing one included); Damage says how ("missing",
	// or a Damage* kind).
	File   string `json:"file"`
	Damage string `json:"damage"`
	// TaskException and TaskError are the exception the task fails with, as the driver
	// reports it inside "Job aborted due to stage failure".
	TaskException string `json:"taskException"`
	TaskError     string `json:"taskError"`
	// TaskErrorInexact is set when TaskError is ckpt's rendering (a path local to the
	// executor, a codec's internal offset).
	TaskErrorInexact bool `json:"taskErrorInexact,omitempty"`
	// SparkError is the query's failure as Spark prints it, Java's way: "<exception>:
	// <message>", then "Caused by: <exception>: <message>" for its root cause when that is
	// another exception.
	SparkError string `json:"sparkError"`
}

// DamageMissing is StateFailure.Damage of a file that is not there.
const DamageMissing = "missing"

// stateStep is one file a load opens, or the place of a missing one.
type stateStep struct {
	path string
	kind string
	file *StateFile // nil: missing
}

// stateChain is the files the provider opens to load version v of p, in order: HDFS-backed
// (HDFSBackedStateStoreProvider.loadMap): the newest snapshot at or below v (walking down to
// version 1, an empty map below), then every delta after it, from the lowest up, so that a
// missing delta is the lowest one after the base. RocksDB (RocksDB.load): the newest zip at or
// below v (none: an empty DB), then every changelog after it.
func stateChain(p StatePartition, provider string, v int64) []stateStep {
	find := func(n int64, kind string) *StateFile {
		for i := range p.Files {
			if f := &p.Files[i]; f.Version == n && f.Kind == kind {
				return f
			}
		}
		return nil
	}
	baseKind, stepKind := StateKindSnapshot, StateKindDelta
	if provider == StateProviderRocksDB {
		baseKind, stepKind = StateKindZip, StateKindChangelog
	}
	var steps []stateStep
	base := int64(0)
	for n := v; n > 0; n-- {
		if f := find(n, baseKind); f != nil {
			base = n
			steps = append(steps, stateStep{path: f.Path, kind: baseKind, file: f})
			break
		}
	}
	for n := base + 1; n <= v; n++ {
		f := find(n, stepKind)
		path := fmt.Sprintf("%s/%d.%s", p.Dir, n, stepKind)
		if f != nil {
			path = f.Path
		}
		steps = append(steps, stateStep{path: path, kind: stepKind, file: f})
	}
	return steps
}

// planState predicts the state loads of the restart's first batch (res.State) and, when one
// fails, the restart's failure. A restart that fails before its first batch, or whose first
// batch is batch 0 (a new query: version 0, nothing to load), loads nothing; a re-run batch 0
// gets a StateLoad of version 0 with no loads, for the files of version 1 its attempt left.
func (p *planner) planState(inv *StateInventory) {
	res := p.res
	// A Spark bug that strikes after the first batch ran (SparkBug) comes after its load.
	afterLoad := res.SparkBug != nil
	if inv == nil || (res.Failed() && !afterLoad) || res.NextBatch < 0 || (res.NextBatch == 0 && res.RerunBatch == nil) {
		return
	}
	v := res.NextBatch
	sl := &StateLoad{Version: v, Checked: inv.Checked, Loads: []StatePartitionLoad{}, Batch: v, Rerun: res.RerunBatch != nil && *res.RerunBatch == v,
		Stores: []StateStoreLoad{}}
	res.State = sl
	ops := append([]StateOperator(nil), inv.Operators...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	var schemaFail *StateSchemaVerdict
	schemaTask := 0
	for _, op := range ops {
		for _, st := range op.Stores {
			parts := append([]StatePartition(nil), st.Partitions...)
			sort.SliceStable(parts, func(i, j int) bool { return parts[i].ID < parts[j].ID })
			if v := p.schemaVerdict(op, st); v != nil {
				sl.Schemas = append(sl.Schemas, *v)
				if v.Fails && schemaFail == nil {
					schemaFail = v
					if len(parts) > 0 {
						schemaTask = parts[0].ID
					}
				}
			}
			sum := &StateStoreLoad{Operator: op.ID, Store: st.Name, Provider: st.Provider, Partitions: len(parts), Ahead: []int{}}
			for _, part := range parts {
				steps := stateChain(part, st.Provider, v)
				load := StatePartitionLoad{Operator: op.ID, Store: st.Name, Partition: part.ID, Files: []string{}}
				for _, s := range steps {
					load.Files = append(load.Files, s.path)
				}
				if f := p.firstStateFailure(op, st, part, steps); f != nil {
					chain := p.taskFailure(f)
					f.SparkError = chain.exception + ": " + chain.message
					if root := chain.root(); chain.cause != nil {
						f.SparkError += "\nCaused by: " + root.exception + ": " + root.message
					}
					load.Failure = f
					if sl.Failure == nil {
						sl.Failure = f
					}
				}
				if v > 0 { // version 0 is the empty state: a re-run batch 0 loads nothing
					sl.Loads = append(sl.Loads, load)
				}
				sum.add(part, steps, v)
			}
			sl.Stores = append(sl.Stores, *sum)
		}
	}
	if afterLoad && (schemaFail != nil || sl.Failure != nil) {
		res.SparkBug = nil // the batch fails loading its state, before it reaches the bug
	}
	if v := schemaFail; v != nil {
		// Spark checks the schemas before it loads a store (4.x when it plans the batch, 3.5
		// when the task gets the store, the lowest partition's task first): a damaged file is
		// not reached. The goldens hold no swap with damage; 3.5's order against another
		// partition's damage is the task order's, not a restart's observation.
		res.recordFailure(ReasonStateSchemaMismatch, v.File, p.schemaFailure(v, schemaTask))
		res.Warnings[len(res.Warnings)-1] = "the error text has placeholders where Spark prints what the checkpoint does not hold: the query's key and value schemas (" + QueryKeySchema + ", " + QueryValueSchema + ")"
		if !p.rel.atLeast(4, 0) {
			res.Warnings[len(res.Warnings)-1] += ", and the stage and task ids and the executor host (<stage>, <tid>, <host>)"
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the restart's first batch %d checks the schemas of the state version %d; Spark does so only when that batch runs (a restart that finds no new data runs none)", res.NextBatch, sl.Version))
		return
	}
	if f := sl.Failure; f != nil {
		reason := ReasonStateFileCorrupt
		switch f.Damage {
		case DamageMissing, DamageSSTMissing:
			reason = ReasonStateFileMissing
		case DamageV2Name, DamageSSTFormat:
			reason = ReasonStateFormatUnsupported
		}
		chain := p.taskFailure(f)
		res.recordFailure(reason, f.File, chain)
		if !chain.allExact() {
			// Say which part of the text ckpt cannot know, instead of recordFailure's words.
			res.Warnings[len(res.Warnings)-1] = "the error text has placeholders where Spark writes what only the run knows: stage and task ids and the executor host (<stage>, <tid>, <host>), the run id (<uuid>), RocksDB's local files (<workdir>), numbers of a codec or of RocksDB (<n>)"
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the restart's first batch %d loads state version %d; Spark loads it only when that batch runs (a restart that finds no new data runs none)", res.NextBatch, v))
	}
}

// add counts one partition's load of version v (steps) and whether it holds version v+1.
func (s *StateStoreLoad) add(p StatePartition, steps []stateStep, v int64) {
	for i, st := range steps {
		if i == 0 && (st.kind == StateKindSnapshot || st.kind == StateKindZip) {
			n := st.file.Version
			if s.BasePartitions == 0 || n < s.BaseMin {
				s.BaseMin = n
			}
			s.BaseMax = max(s.BaseMax, n)
			s.BasePartitions++
			continue
		}
		s.Steps++
	}
	for _, f := range p.Files {
		if f.Version == v+1 {
			s.Ahead = append(s.Ahead, p.ID)
			break
		}
	}
}

// firstStateFailure is the failure of the load of steps, in Spark's order: the base, then (for
// RocksDB) its SST files as the DB opens, the deltas or changelogs, and last the SST blocks the
// batch reads; nil when the load succeeds as far as the inventory shows.
func (p *planner) firstStateFailure(op StateOperator, st StateStore, part StatePartition, steps []stateStep) *StateFailure {
	mk := func(file, damage string) *StateFailure {
		return &StateFailure{Operator: op.ID, Store: st.Name, Partition: part.ID, File: file, Damage: damage}
	}
	if st.Provider == StateProviderRocksDB && p.cfg.commitFmt == 1 && len(steps) > 0 {
		// The format v1 loader lists the partition's zips and parses each name as a version
		// before it opens any file.
		if z := newestV2Zip(part); z != nil {
			f := mk(z.Path, DamageV2Name)
			p.stateFormatError(f, z)
			return f
		}
	}
	var late *StateFailure // an SST block: read by the batch, after every changelog
	for _, s := range steps {
		if s.file == nil {
			f := mk(s.path, DamageMissing)
			p.stateTaskError(f, st, part, nil)
			return f
		}
		if s.kind == StateKindZip && s.file.SSTFormat > p.rel.maxSSTFormat() && (s.file.Damage == nil || s.file.Damage.Kind == "" || s.file.Damage.Kind == DamageSSTBlock) {
			// RocksDB checks the table format when it opens the file, before any block.
			f := mk(s.path, DamageSSTFormat)
			p.stateFormatError(f, s.file)
			return f
		}
		d := s.file.Damage
		if d == nil {
			continue
		}
		// 4.1+ verifies a delta's, snapshot's or changelog's checksum file when the read
		// reaches the end of the file: a decoder that fails before (flipped bytes) fails first.
		checksum := d.Checksum != nil && p.rel.verifiesStateChecksums() && s.kind != StateKindZip &&
			(d.Kind == "" || d.Kind == DamageEmpty || d.Kind == DamageEndsEarly || d.Kind == DamageCodecTruncated)
		if d.Kind == "" && !checksum {
			continue
		}
		file := s.path
		if d.File != "" {
			file = d.File
		}
		f := mk(file, d.Kind)
		if checksum {
			f = mk(s.path, DamageChecksum)
		}
		p.stateTaskError(f, st, part, d)
		if d.Kind == DamageSSTBlock {
			late = f
			continue
		}
		return f
	}
	return late
}

// newestV2Zip is the partition's zip of the highest version named with a unique id, nil when
// it has none.
func newestV2Zip(part StatePartition) *StateFile {
	var z *StateFile
	for i := range part.Files {
		f := &part.Files[i]
		if f.Kind == StateKindZip && f.UniqueID != "" && (z == nil || f.Version > z.Version) {
			z = f
		}
	}
	return z
}

// recordFailure records Spark's failure f for reason in r.
func (r *Result) recordFailure(reason, file string, f sparkFailure) {
	r.Outcome = OutcomeFail
	r.Reason, r.FailedFile = reason, file
	r.Error = ptr(f.message)
	r.Exception = f.exception
	r.ErrorClass = f.chainClass()
	root := f.root()
	r.RootCause = &Cause{Exception: root.exception, Error: root.message, ErrorClass: root.class()}
	if !f.allExact() {
		r.ErrorInexact = true
		r.Warnings = append(r.Warnings, "the error text is ckpt's description: Spark's own message for this case could not be reproduced exactly")
	}
	r.key = reason
}
