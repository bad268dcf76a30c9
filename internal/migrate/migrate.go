// Package migrate plans `ckpt migrate --to-spark VERSION`: rewriting what a newer Spark release
// wrote into a checkpoint in the formats an older release reads, so that the older release can
// restart the query (a rollback after an upgrade).
//
// What the releases showed (testdata/spark-migrate, TestSparkLiveMigrate):
//
//   - With spark.sql.streaming.stateStore.checkpointFormatVersion=2 (Spark 4.0+, RocksDB) each
//     commit is v2 ({"nextBatchWatermarkMs":…,"stateUniqueIds":…}) and each state file is named
//     <version>_<uuid>.zip or .changelog. A restart with the default setting (1) fails on
//     commits/L: Spark 3.5 "UnsupportedLogVersion: maximum supported log version is v1", 4.0 and
//     4.1 INVALID_LOG_VERSION.EXACT_MATCH_VERSION. Even a release that reads the commit (4.2)
//     fails with the setting at 1, loading the v2-named state.
//   - The checkpoint format is not in the offsets log: it is the restart's session setting.
//   - RocksDB SST files of rocksdb.formatVersion 6 (4.1+) are refused by Spark 3.5's RocksDB.
//
// Which release fails on which of these, and with what text, is the recovery planner's
// (recovery.CheckVersion, recovery.MaxSSTFormat, and the state load of Plan.Before, which reads
// the files the restart loads): migrate decides only what to write.
//   - Everything else a 4.2.0 aggregation writes (the offsets log with conf keys 3.5 does not
//     know, the v1 commit log, the schema and operator metadata files, RocksDB zips with 4.x's
//     column family fields, XXH3 SST checksums) restarts on 3.5.7 as it is.
//
// So a migration, after the last committed batch L, adds a no-data batch L+1 (offsets/L+1 a
// copy of offsets/L, commits/L+1 a v1 commit with L's watermark) and writes state version L+2
// of every store in checkpoint format v1: for a v2 RocksDB store, L+2.zip and one SST file
// (statefmt.RocksDBWriter, format version 5) holding the rows of version L+1; for the other
// stores an empty L+2.delta or L+2.changelog. The v2-named state files are deleted (backed up
// by the journal), since the older release cannot list them. What cannot be expressed in the
// older release's formats is refused with the reason.
package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/repartition"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Strategy names a migration in its journal.
const Strategy journal.Strategy = "migrate"

// Targets are the releases a checkpoint can be migrated to.
var Targets = []string{"3.5", "4.0", "4.1", "4.2"}

// Conf keys whose values decide the state's format.
const (
	ConfCheckpointFormat = "spark.sql.streaming.stateStore.checkpointFormatVersion"
	confEncodingFormat   = "spark.sql.streaming.stateStore.encodingFormat"
	confRowChecksum      = "spark.sql.streaming.stateStore.rowChecksum.enabled"
	confRocksFormat      = "spark.sql.streaming.stateStore.rocksdb.formatVersion"
)

// Target parses a --to-spark value ("3.5", "4.1.1") into its release line.
func Target(v string) (string, error) {
	parts := strings.Split(v, ".")
	if len(parts) >= 2 {
		line := parts[0] + "." + parts[1]
		if slices.Contains(Targets, line) {
			return line, nil
		}
	}
	return "", fmt.Errorf("--to-spark %q: ckpt migrates to Spark %s", v, strings.Join(Targets, ", "))
}

// Options configure NewPlan.
type Options struct {
	// To is the release line the checkpoint is migrated to (Target).
	To string
	// Mode is the engine of the restart the plan predicts (recovery.Options.Mode).
	Mode recovery.Mode
}

// Plan is what a migration would change.
type Plan struct {
	Checkpoint string `json:"checkpoint"`
	To         string `json:"toSpark"`
	// Batch is L, the last committed batch; NewBatch the no-data batch L+1 the plan adds and
	// Version L+2 the state version it writes (0 when nothing needs rewriting).
	Batch    int64 `json:"batch"`
	NewBatch int64 `json:"newBatch,omitempty"`
	Version  int64 `json:"version,omitempty"`
	// Found is what the checkpoint holds that matters to the target release, each with what
	// the migration does about it.
	Found   []Item           `json:"found"`
	Actions []journal.Action `json:"actions"`
	Bytes   int64            `json:"bytes"`
	// Before is the restart on the target release as the checkpoint is; After once migrated.
	Before *recovery.Result `json:"before"`
	After  *recovery.Result `json:"after,omitempty"`
	// Nothing is set when the target release reads the checkpoint as it is.
	Nothing  bool     `json:"nothingToDo,omitempty"`
	Refused  string   `json:"refused,omitempty"`
	Warnings []string `json:"warnings"`

	options recovery.Options
}

// Item is one thing the checkpoint holds in a newer release's format.
type Item struct {
	// What names it ("commits/4 is v2 (checkpoint format v2)").
	What string `json:"what"`
	// Change is what the migration writes instead ("" when it is refused).
	Change string `json:"change,omitempty"`
	// Refused says why it cannot be expressed in the target release's formats.
	Refused string `json:"refused,omitempty"`
}

// JournalPlan is the plan in the form journal.Apply applies.
func (p *Plan) JournalPlan() *journal.Plan {
	return &journal.Plan{Strategy: Strategy, Actions: p.Actions, After: p.After, Options: p.options}
}

// restart is the restart the plan predicts: the target release with its default settings.
func (o Options) restart() recovery.Options {
	return recovery.Options{Mode: o.Mode, SparkVersion: o.To, CommitFormatVersion: 1}
}

func (p *Plan) refuse(format string, args ...any) (*Plan, error) {
	p.Refused = fmt.Sprintf(format, args...)
	p.Actions = []journal.Action{}
	return p, nil
}

// NewPlan plans the migration of the checkpoint in s to release o.To. It reads the state of
// the last committed batch of every store it rewrites once, and changes nothing.
func NewPlan(ctx context.Context, s storage.Store, o Options) (*Plan, error) {
	to, err := Target(o.To)
	if err != nil {
		return nil, err
	}
	o.To = to
	p := &Plan{Checkpoint: s.URI(), To: to, Found: []Item{}, Actions: []journal.Action{}, Warnings: []string{}, options: o.restart()}
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		return nil, err
	}
	// The restart as it is, with the state it loads read: the planner decides what the target
	// release fails on, state formats included.
	var listing *state.Listing
	p.Before, listing, err = state.Restart(ctx, cp, p.options, true)
	if err != nil {
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
	p.Batch = last
	commit, err := cp.ReadCommit(ctx, last)
	if err != nil {
		return nil, err
	}
	if listing == nil {
		listing = &state.Listing{}
	}
	m := &migration{cp: cp, plan: p, opts: o, base: base, listing: listing}
	m.inspect(off, commit)
	for _, it := range p.Found {
		if it.Refused != "" {
			return p.refuse("%s: %s", it.What, it.Refused)
		}
	}
	if !m.rewrite {
		p.Nothing = true
		if p.Before.Outcome == "fail" {
			return p.refuse("nothing here is in a format newer than Spark %s reads, yet the recovery planner predicts that its restart fails: %s (ckpt doctor --spark-version %s says why)",
				to, p.Before.Verdict(), to)
		}
		return p, nil
	}
	p.NewBatch, p.Version = last+1, last+2
	if err := m.writeStores(ctx); err != nil {
		return nil, err
	}
	m.noDataBatch(off, commit)
	m.actions = append(m.actions, m.deletes...)
	ov := journal.NewOverlay(cp)
	for i := range m.actions {
		a := &m.actions[i]
		if err := ov.Add(ctx, a); err != nil {
			return nil, err
		}
		if a.Op != journal.OpDelete {
			p.Bytes += a.Size
		}
	}
	p.Actions = m.actions
	if p.After, err = ov.Predict(ctx, p.options); err != nil {
		return nil, err
	}
	if p.After.Outcome == "fail" {
		return p.refuse("the recovery planner predicts that the restart on Spark %s after the migration fails: %s", to, p.After.Verdict())
	}
	if p.Before.Outcome == "fail" && p.Before.Reason == recovery.ReasonStateFormatUnsupported && recovery.CheckVersion(to, recovery.LogCommits, 2, 2) == nil && m.v2 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("as it is, the checkpoint restarts on Spark %s only with %s=2", to, ConfCheckpointFormat))
	}
	p.Warnings = append(p.Warnings,
		fmt.Sprintf("restart on Spark %s with %s unset or 1 (its default): the migrated checkpoint is in format v1", to, ConfCheckpointFormat),
		"undo restores every byte only until the older release has run a batch (it cleans up files of its own)")
	return p, nil
}

// inspect finds what the target does not read, reading no state.
func (m *migration) inspect(off *logformat.OffsetSeq, commit *logformat.Commit) {
	m.logs(off, commit)
	m.conf(off)
	m.inspectStores()
}

// Assess says what of the checkpoint cp (state/ listed as listing) is in a format newer than
// release line to reads, and what a migration does about each; it reads the last committed
// batch's offsets and commit file and no state. nil when the checkpoint offers no base for a
// migration (no committed batch, or a last batch that did not commit). doctor names it in its
// findings on a restart that fails on a newer format.
func Assess(ctx context.Context, cp *checkpoint.Checkpoint, listing *state.Listing, to string) ([]Item, error) {
	to, err := Target(to)
	if err != nil {
		return nil, err
	}
	base, why, err := repartition.LoadBase(ctx, cp)
	if err != nil || why != nil {
		return nil, err
	}
	commit, err := cp.ReadCommit(ctx, base.Batch)
	if err != nil {
		return nil, err
	}
	if listing == nil {
		listing = &state.Listing{}
	}
	m := &migration{cp: cp, plan: &Plan{Found: []Item{}}, opts: Options{To: to}, base: base, listing: listing}
	m.inspect(base.Offsets, commit)
	return m.plan.Found, nil
}

type migration struct {
	cp      *checkpoint.Checkpoint
	plan    *Plan
	opts    Options
	base    *repartition.Base
	listing *state.Listing
	// rewrite is set when something must be written in an older format.
	rewrite bool
	// offsetsConf are conf values offsets/L+1 gets instead of offsets/L's.
	offsetsConf map[string]string
	// actions are the new state files, then the no-data batch that makes the restart load
	// them, then (deletes) the v2 files: until the commit is written the checkpoint is still
	// the newer release's, whole.
	actions, deletes []journal.Action
	crc              bool
	planned          []plannedStore
	// v2 is set when a store has checkpoint format v2 files.
	v2 bool
}

func (m *migration) found(it Item) { m.plan.Found = append(m.plan.Found, it) }

// logs checks the headers of the offsets and commit files the restart reads.
func (m *migration) logs(off *logformat.OffsetSeq, commit *logformat.Commit) {
	to, last := m.opts.To, m.base.Batch
	if off.Version > 1 && recovery.CheckVersion(to, recovery.LogOffsets, off.Version, 1) != nil {
		m.found(Item{What: fmt.Sprintf("offsets/%d is v%d (sources by name, Spark 4.1)", last, off.Version),
			Refused: fmt.Sprintf("Spark %s reads offsets v1 only, and ckpt does not rewrite named sources as positions", to)})
	}
	switch {
	case commit.Version == 2:
		it := Item{What: fmt.Sprintf("commits/%d is v2 (checkpoint format v2: the state's unique ids)", last),
			Change: fmt.Sprintf("commits/%d written as v1, with the same watermark", last+1)}
		if recovery.CheckVersion(to, recovery.LogCommits, 2, 2) == nil {
			it.Change += fmt.Sprintf(" (Spark %s also restarts the checkpoint as it is with %s=2)", to, ConfCheckpointFormat)
		}
		m.found(it)
		m.rewrite = true
	case commit.Version > 2:
		m.found(Item{What: fmt.Sprintf("commits/%d is v%d (sinkMetadataMap, Spark 4.2)", last, commit.Version),
			Refused: "the sinks' metadata it records has no place in a v1 commit, and dropping it was not checked with Spark"})
	}
}

// conf checks the offsets log's settings that decide the state's format.
func (m *migration) conf(off *logformat.OffsetSeq) {
	to := m.opts.To
	if v, ok := off.ConfValue(confEncodingFormat); ok && v != "unsaferow" && to == "3.5" {
		m.found(Item{What: fmt.Sprintf("%s=%s", confEncodingFormat, v),
			Refused: "Spark 3.5 reads state rows as UnsafeRows only; ckpt does not re-encode " + v + " rows"})
	}
	if v, ok := off.ConfValue(confRowChecksum); ok && v == "true" && to != "4.2" {
		m.found(Item{What: fmt.Sprintf("%s=true (Spark 4.2)", confRowChecksum),
			Refused: "the state rows carry checksums that Spark " + to + " does not expect; ckpt does not strip them"})
	}
	if v, ok := off.ConfValue(confRocksFormat); ok {
		// The planner knows which table formats the release reads (recovery.MaxSSTFormat);
		// the restart writes its own snapshots in the format the offsets log says.
		most, err := recovery.MaxSSTFormat(to)
		if n, perr := strconv.Atoi(v); err != nil || perr != nil || n <= most || !m.hasRocksDB() {
			return
		}
		m.found(Item{What: fmt.Sprintf("%s=%s", confRocksFormat, v),
			Change: fmt.Sprintf("offsets/L+1 says 5, and every RocksDB store's version L+2 is written in SST format 5: Spark %s's RocksDB reads format %d at most", to, most)})
		if m.offsetsConf == nil {
			m.offsetsConf = map[string]string{}
		}
		m.offsetsConf[confRocksFormat] = "5"
		m.rewrite = true
	}
}

func (m *migration) hasRocksDB() bool {
	for _, op := range m.listing.Operators {
		for _, s := range op.Stores {
			if s.Provider == state.ProviderRocksDB {
				return true
			}
		}
	}
	return false
}

// storeKind is how a store's version L+2 is written.
type storeKind int

const (
	keepEmpty storeKind = iota // an empty delta or changelog: the store is in format v1
	rewriteV1                  // a zip and SST holding version L+1's rows
)

// plannedStore is a store whose version L+2 a rewrite writes.
type plannedStore struct {
	op   *state.Operator
	st   *state.Store
	kind storeKind
}

// inspectStores finds the state in formats the target does not read, and the stores a rewrite
// writes (m.planned). It reads no state.
func (m *migration) inspectStores() {
	to := m.opts.To
	var tws []*state.Operator
	for _, op := range m.listing.Operators {
		if len(op.MetadataV2Files) > 0 || len(op.SchemaV3Files) > 0 {
			tws = append(tws, op)
			continue
		}
		for _, st := range op.Stores {
			v2 := false
			for _, part := range st.Partitions {
				for _, f := range part.Files {
					v2 = v2 || f.UniqueID != ""
				}
			}
			kind := keepEmpty
			switch {
			case v2 && st.Provider == state.ProviderRocksDB:
				kind, m.v2 = rewriteV1, true
				m.found(Item{What: fmt.Sprintf("operator %d store %s: RocksDB state in checkpoint format v2 (files <version>_<uuid>.zip, .changelog)", op.ID, st.Name),
					Change: fmt.Sprintf("version %d written as %d.zip and one SST file (format 5) in every partition; the v2 files moved into the backup", m.base.Batch+1, m.base.Batch+2)})
				m.rewrite = true
			case v2:
				m.found(Item{What: fmt.Sprintf("operator %d store %s: %s state with checkpoint format v2 file names", op.ID, st.Name, st.Provider),
					Refused: "Spark writes checkpoint format v2 for RocksDB only; ckpt does not know what this is"})
			case st.Provider == state.ProviderRocksDB && m.offsetsConf[confRocksFormat] != "":
				kind = rewriteV1 // its SST files may be in format 6
			}
			m.planned = append(m.planned, plannedStore{op, st, kind})
		}
	}
	for _, op := range tws {
		it := Item{What: fmt.Sprintf("operator %d is transformWithState (state variables in RocksDB column families, operator metadata v2, state schema v3)", op.ID)}
		switch {
		case to == "3.5":
			it.Refused = "Spark 3.5 has no transformWithState"
		case m.rewrite || v2Store(op):
			it.Refused = "its typed, column-family state is not written by ckpt, and a rewrite needs a new version of every store"
		default:
			continue // written by a 4.x release in format v1: nothing to rewrite
		}
		m.found(it)
	}
}

// writeStores plans version L+2 of every store.
func (m *migration) writeStores(ctx context.Context) error {
	m.crc = repartition.HasChecksum(ctx, m.cp.Store, m.cp, m.base.Batch)
	for _, ps := range m.planned {
		if err := m.store(ctx, ps.op, ps.st, ps.kind); err != nil {
			return err
		}
	}
	return nil
}

func v2Store(op *state.Operator) bool {
	for _, st := range op.Stores {
		for _, part := range st.Partitions {
			for _, f := range part.Files {
				if f.UniqueID != "" {
					return true
				}
			}
		}
	}
	return false
}

// store plans version L+2 of every partition of one store, and the deletion of its v2 files.
func (m *migration) store(ctx context.Context, op *state.Operator, st *state.Store, kind storeKind) error {
	last, n := m.base.Batch, m.base.Partitions
	version := strconv.FormatInt(last+2, 10)
	for part := range n {
		lp := st.Partition(part)
		if lp == nil {
			return fmt.Errorf("operator %d store %s has no partition %d of the %d in offsets/%d", op.ID, st.Name, part, n, last)
		}
		switch {
		case kind == rewriteV1:
			r, err := state.NewReader(ctx, m.cp, m.listing, state.ReadOptions{Operator: op.ID, Store: st.Name, Partition: part, Version: last + 1, Raw: true})
			if err != nil {
				return err
			}
			var rows [][2][]byte
			h := sha256.New()
			fmt.Fprintf(h, "ckpt migrate\x00%s\x00%d\x00", lp.Dir, last+2)
			err = r.Each(ctx, func(row *state.Row) error {
				rows = append(rows, [2][]byte{bytes.Clone(row.RawKey), bytes.Clone(row.RawValue)})
				return nil
			})
			if err != nil {
				return err
			}
			slices.SortFunc(rows, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
			w := statefmt.NewRocksDBWriter()
			for _, row := range rows {
				fmt.Fprintf(h, "%d:%d:", len(row[0]), len(row[1]))
				h.Write(row[0])
				h.Write(row[1])
				if err := w.Put(row[0], row[1]); err != nil {
					return fmt.Errorf("operator %d store %s partition %d: %w", op.ID, st.Name, part, err)
				}
			}
			line := "4"
			if m.opts.To == "3.5" {
				line = "3.5"
			}
			v, err := w.Finish(nameUUID(h.Sum(nil)), line)
			if err != nil {
				return err
			}
			m.write(path.Join(lp.Dir, "SSTs", v.SSTName), v.SST, fmt.Sprintf("the SST file of state version %d: the %d rows of version %d", last+2, len(rows), last+1))
			m.write(path.Join(lp.Dir, version+".zip"), v.Zip, fmt.Sprintf("state version %d in checkpoint format v1: version %d's rows", last+2, last+1))
		default:
			var buf bytes.Buffer
			w, err := statefmt.NewFileWriter(m.base.Codec, &buf)
			if err != nil {
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			ext := ".delta"
			if st.Provider == state.ProviderRocksDB {
				ext = ".changelog"
			}
			m.write(path.Join(lp.Dir, version+ext), buf.Bytes(), fmt.Sprintf("state version %d: no change (the store is in format v1)", last+2))
		}
		for _, f := range lp.Files {
			if f.UniqueID == "" {
				continue
			}
			m.del(f.Path, fmt.Sprintf("checkpoint format v2 file: Spark %s lists the store's files and cannot parse its name", m.opts.To))
			if crc := repartition.ChecksumPath(f.Path); m.exists(ctx, crc) {
				m.del(crc, "Hadoop's checksum of "+f.Path)
			}
		}
	}
	return nil
}

func (m *migration) exists(ctx context.Context, p string) bool {
	_, err := m.cp.Store.Stat(ctx, p)
	return err == nil
}

// nameUUID shapes a digest as a name-based UUID (version 8): the SST file's name is the same
// on every run of the plan, and new in the SSTs/ directory, whose files have Spark's random ones.
func nameUUID(s []byte) string {
	s[6] = s[6]&0x0f | 0x80
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

func (m *migration) write(p string, data []byte, reason string) {
	m.actions = append(m.actions, journal.Action{Op: journal.OpWrite, Path: p, Data: data, Reason: reason})
	if m.crc {
		m.actions = append(m.actions, journal.Action{Op: journal.OpWrite, Path: repartition.ChecksumPath(p), Data: logformat.HadoopChecksum(data), Reason: "Hadoop's checksum of " + p + ", as Spark writes one on this store"})
	}
}

func (m *migration) del(p, reason string) {
	m.deletes = append(m.deletes, journal.Action{Op: journal.OpDelete, Path: p, Reason: reason})
}

// noDataBatch adds offsets/L+1 (offsets/L with the conf values the target needs) and
// commits/L+1 (a v1 commit of L's watermark).
func (m *migration) noDataBatch(off *logformat.OffsetSeq, commit *logformat.Commit) {
	last := m.base.Batch
	next := *off
	if len(m.offsetsConf) > 0 && off.Metadata != nil {
		md := *off.Metadata
		md.Conf = slices.Clone(md.Conf)
		for i := range md.Conf {
			if v, ok := m.offsetsConf[md.Conf[i].Key]; ok {
				md.Conf[i].Value = v
			}
		}
		next.Metadata = &md
	}
	c := &logformat.Commit{Version: 1, NextBatchWatermarkMs: commit.NextBatchWatermarkMs, HasNextBatchWatermark: true}
	offWhy := fmt.Sprintf("the no-data batch %d: a copy of offsets/%d", last+1, last)
	if len(m.offsetsConf) > 0 {
		offWhy += " with " + confRocksFormat + "=5"
	}
	files := []struct {
		path, why string
		data      []byte
	}{
		{m.cp.Offsets.Path(last + 1), offWhy, next.Marshal()},
		{m.cp.Commits.Path(last + 1), fmt.Sprintf("batch %d committed: a v1 commit with commits/%d's watermark (%d)", last+1, last, commit.NextBatchWatermarkMs), c.Marshal()},
	}
	for _, f := range files {
		m.write(f.path, f.data, f.why)
	}
}
