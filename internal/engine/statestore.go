// The state store providers the stateful operators' store (stateful.go) writes through: Spark's HDFS-backed provider
// (N.delta per batch, N.snapshot and cleanup in maintenance) and its RocksDB provider (N.zip
// naming SST files per batch, or N.changelog with periodic N.zip snapshots). Both write with
// the one state writer, internal/statefmt.

package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// stateRow is one row of a store partition: key and value UnsafeRows, or a removal of the key
// (del, no value).
type stateRow struct {
	key, value []byte
	del        bool
}

// stateView is an operator's state after a batch, as the store writes it.
type stateView interface {
	// changed is what the batch put in partition p, ascending by key, then the keys it
	// removed (evicted), ascending: the order of Spark's puts and removes in a delta.
	changed(p int) ([]stateRow, error)
	// all is every row of partition p after the batch (removed keys left out), ascending by key.
	all(p int) ([]stateRow, error)
}

// stateProvider writes the versions of one operator's store (store "default", every partition).
type stateProvider interface {
	// loaded says the state held is version v, read from the checkpoint (0: empty).
	loaded(v int64)
	// commit writes version v of every partition; afterPart runs after each partition's
	// files (the mid-state-commit crash point).
	commit(ctx context.Context, v int64, view stateView, afterPart func()) error
	// maintain is the provider's maintenance after version v: snapshots and cleanup.
	maintain(ctx context.Context, v int64, view stateView) error
}

// storeConf is what a store needs to write: where, how many partitions, the codec of delta and
// changelog files, the release line of the RocksDB metadata, and the maintenance confs.
type storeConf struct {
	st         storage.Store
	dir        string // state/<operator>
	partitions int
	codec      string
	line       string // "3.5" or "4" (RocksDB zip metadata fields)
	// minDeltas is spark.sql.streaming.stateStore.minDeltasForSnapshot, retain
	// spark.sql.streaming.minBatchesToRetain (the store's minVersionsToRetain).
	minDeltas int
	retain    int
	changelog bool // RocksDB changelog checkpointing
}

func (c *storeConf) partDir(p int) string { return path.Join(c.dir, strconv.Itoa(p)) }

// newProvider picks the provider the checkpoint's offsets log records.
func newProvider(provider string, c storeConf) (stateProvider, error) {
	switch provider {
	case query.HDFSStateProvider:
		return &hdfsStore{c}, nil
	case query.RocksDBStateProvider:
		return &rocksStore{storeConf: c, lastSnapshot: map[int]int64{}}, nil
	}
	return nil, fmt.Errorf("the checkpoint's state store provider is %s: ckpt run writes the state of %s and %s", provider, query.HDFSStateProvider, query.RocksDBStateProvider)
}

// replaceFile writes name, replacing a file already there (Spark's createAtomic with
// overwriteIfPossible=true, as a re-run batch or a snapshot rewrites its file).
func replaceFile(ctx context.Context, st storage.Store, name string, data []byte) error {
	err := st.WriteFile(ctx, name, data)
	if errors.Is(err, fs.ErrExist) {
		if err = st.Delete(ctx, name); err == nil {
			err = st.WriteFile(ctx, name, data)
		}
	}
	return err
}

// encodeFile is rows in Spark's delta/snapshot file format in codec.
func encodeFile(codec string, rows []stateRow) ([]byte, error) {
	var buf bytes.Buffer
	w, err := statefmt.NewFileWriter(codec, &buf)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if r.del {
			err = w.Delete(r.key)
		} else {
			err = w.Put(r.key, r.value)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// hdfsStore is HDFSBackedStateStoreProvider: version v of a partition is v.delta (the rows the
// batch changed); maintenance writes v.snapshot and deletes old files.
type hdfsStore struct{ storeConf }

func (h *hdfsStore) loaded(int64) {}

func (h *hdfsStore) commit(ctx context.Context, v int64, view stateView, afterPart func()) error {
	for p := 0; p < h.partitions; p++ {
		rows, err := view.changed(p)
		if err != nil {
			return err
		}
		data, err := encodeFile(h.codec, rows)
		if err != nil {
			return err
		}
		if err := replaceFile(ctx, h.st, path.Join(h.partDir(p), strconv.FormatInt(v, 10)+".delta"), data); err != nil {
			return err
		}
		afterPart()
	}
	return nil
}

// hdfsFile is one version of a partition as HDFSBackedStateStoreProvider.fetchFiles sees it:
// the snapshot when the version has one, else its delta.
type hdfsFile struct {
	version  int64
	name     string
	snapshot bool
}

// hdfsFiles lists a partition's versions (fetchFiles), ascending.
func hdfsFiles(entries []storage.Entry) []hdfsFile {
	byVersion := map[int64]hdfsFile{}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		f, ok := state.ParseFileName(path.Base(e.Path))
		if !ok || f.UniqueID != "" || (f.Kind != state.KindDelta && f.Kind != state.KindSnapshot) {
			continue
		}
		snap := f.Kind == state.KindSnapshot
		if old, ok := byVersion[f.Version]; ok && (old.snapshot || !snap) {
			continue
		}
		byVersion[f.Version] = hdfsFile{version: f.Version, name: e.Path, snapshot: snap}
	}
	out := make([]hdfsFile, 0, len(byVersion))
	for _, f := range byVersion {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b hdfsFile) int { return cmpOrdered(a.version, b.version) })
	return out
}

// hdfsChain is filesForVersion: the latest snapshot at or below v and the deltas after it up
// to v (every file up to v without a snapshot); ok is false when v has no file (Spark's
// require fails and the maintenance step is skipped with a warning).
func hdfsChain(files []hdfsFile, v int64) (chain []hdfsFile, ok bool) {
	if !slices.ContainsFunc(files, func(f hdfsFile) bool { return f.version == v }) {
		return nil, false
	}
	start := 0
	for i, f := range files {
		if f.version > v {
			break
		}
		if f.snapshot {
			start = i
		}
	}
	for _, f := range files[start:] {
		if f.version > v {
			break
		}
		chain = append(chain, f)
	}
	return chain, true
}

// hdfsMaintenance decides a partition's maintenance from its files (doMaintenance: doSnapshot,
// then cleanup): whether to write a snapshot of the last version (more than minDeltas deltas
// since the last snapshot) and which files to delete (every version below the first file of
// the chain of last-minVersionsToRetain, the listing taken after the snapshot).
func hdfsMaintenance(files []hdfsFile, minDeltas, retain int) (snapshot int64, remove []string) {
	snapshot = -1
	if len(files) == 0 {
		return -1, nil
	}
	last := files[len(files)-1]
	chain, _ := hdfsChain(files, last.version)
	deltas := 0
	for _, f := range chain {
		if !f.snapshot {
			deltas++
		}
	}
	if deltas > minDeltas {
		snapshot = last.version
		files[len(files)-1] = hdfsFile{version: last.version, name: path.Join(path.Dir(last.name), strconv.FormatInt(last.version, 10)+".snapshot"), snapshot: true}
	}
	earliest := last.version - int64(retain)
	if earliest <= 0 {
		return snapshot, nil
	}
	chain, ok := hdfsChain(files, earliest)
	if !ok {
		return snapshot, nil
	}
	for _, f := range files {
		if f.version < chain[0].version {
			remove = append(remove, f.name)
		}
	}
	return snapshot, remove
}

func (h *hdfsStore) maintain(ctx context.Context, v int64, view stateView) error {
	for p := 0; p < h.partitions; p++ {
		entries, err := h.st.List(ctx, h.partDir(p))
		if err != nil {
			return err
		}
		files := hdfsFiles(entries)
		snap, remove := hdfsMaintenance(files, h.minDeltas, h.retain)
		if snap >= 0 {
			if snap != v {
				// The map of that version is not held (Spark: "probably some other instance is
				// in charge"): no snapshot, and no cleanup based on one.
				continue
			}
			rows, err := view.all(p)
			if err != nil {
				return err
			}
			data, err := encodeFile(h.codec, rows)
			if err != nil {
				return err
			}
			if err := replaceFile(ctx, h.st, path.Join(h.partDir(p), strconv.FormatInt(v, 10)+".snapshot"), data); err != nil {
				return err
			}
		}
		for _, f := range remove {
			if err := h.st.Delete(ctx, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// rocksStore is RocksDBStateStoreProvider with checkpoint format version 1: version v of a
// partition is v.zip naming the SST files under SSTs/ (changelog checkpointing off), or
// v.changelog with a v.zip snapshot every minDeltas versions (on).
type rocksStore struct {
	storeConf
	// lastSnapshot is each partition's newest zip version at or below the state held; a
	// partition not in it is listed on its next commit.
	lastSnapshot map[int]int64
	// Spark 4.x's batched deletion (RocksDBFileManager.shouldSkipDeletion): the versions this
	// process has seen (maxSeen, 0: none; minSeen starts at 1 and moves to the oldest kept
	// after a deletion); old versions are deleted only once at least minVersionsToDelete
	// (round(spark.sql.streaming.ratioExtraSpaceAllowedInCheckpoint 0.3 × minBatchesToRetain))
	// are past the retained ones. 3.5 deletes at every maintenance (0).
	minSeen, maxSeen int64
}

// minVersionsToDelete is Spark 4.x's StateStoreConf.minVersionsToDelete for minBatchesToRetain
// retain: Math.round(0.3 × retain). 3.5 has no such gate.
func (r *rocksStore) minVersionsToDelete() int64 {
	if r.line == "3.5" {
		return 0
	}
	return int64(math.Floor(0.3*float64(r.retain) + 0.5))
}

func (r *rocksStore) loaded(v int64) {
	clear(r.lastSnapshot)
	r.maxSeen = max(r.maxSeen, v)
}

// writeZip writes version v of partition p from all its rows: the SST file, then the zip that
// names it (the zip is the commit point: an SST without a zip is an orphan that cleanup deletes).
func (r *rocksStore) writeZip(ctx context.Context, p int, v int64, rows []stateRow) error {
	w := statefmt.NewRocksDBWriter()
	for _, row := range rows {
		if err := w.Put(row.key, row.value); err != nil {
			return fmt.Errorf("state partition %d version %d: %w", p, v, err)
		}
	}
	ver, err := w.Finish(uuid.NewString(), r.line)
	if err != nil {
		return err
	}
	if ver.NumKeys > 0 {
		if err := r.st.WriteFile(ctx, path.Join(r.partDir(p), "SSTs", ver.SSTName), ver.SST); err != nil {
			return err
		}
	}
	return replaceFile(ctx, r.st, path.Join(r.partDir(p), strconv.FormatInt(v, 10)+".zip"), ver.Zip)
}

func (r *rocksStore) commit(ctx context.Context, v int64, view stateView, afterPart func()) error {
	r.maxSeen = max(r.maxSeen, v)
	for p := 0; p < r.partitions; p++ {
		if !r.changelog {
			rows, err := view.all(p)
			if err != nil {
				return err
			}
			if err := r.writeZip(ctx, p, v, rows); err != nil {
				return err
			}
			afterPart()
			continue
		}
		rows, err := view.changed(p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		w, err := statefmt.NewChangelogWriter(r.codec, &buf, statefmt.ChangelogHeader{Version: 1})
		if err != nil {
			return err
		}
		for _, row := range rows {
			if row.del {
				err = w.Delete(row.key)
			} else {
				err = w.Put(row.key, row.value)
			}
			if err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		if err := replaceFile(ctx, r.st, path.Join(r.partDir(p), strconv.FormatInt(v, 10)+".changelog"), buf.Bytes()); err != nil {
			return err
		}
		last, ok := r.lastSnapshot[p]
		if !ok {
			if last, err = r.latestZip(ctx, p, v-1); err != nil {
				return err
			}
		}
		// RocksDB.commit: a snapshot once minDeltasForSnapshot versions have passed since the
		// last one (Spark takes it at commit and uploads it in maintenance; ckpt writes it now).
		if v-last >= int64(r.minDeltas) {
			all, err := view.all(p)
			if err != nil {
				return err
			}
			if err := r.writeZip(ctx, p, v, all); err != nil {
				return err
			}
			last = v
		}
		r.lastSnapshot[p] = last
		afterPart()
	}
	return nil
}

// latestZip is partition p's newest zip version at or below v (0 for none).
func (r *rocksStore) latestZip(ctx context.Context, p int, v int64) (int64, error) {
	entries, err := r.st.List(ctx, r.partDir(p))
	if err != nil {
		return 0, err
	}
	var last int64
	for _, e := range entries {
		if f, ok := state.ParseFileName(path.Base(e.Path)); ok && f.Kind == state.KindZip && f.UniqueID == "" && f.Version <= v {
			last = max(last, f.Version)
		}
	}
	return last, nil
}

func (r *rocksStore) maintain(ctx context.Context, _ int64, _ stateView) error {
	if r.minSeen == 0 {
		r.minSeen = 1
	}
	if m := r.minVersionsToDelete(); m > 0 && r.maxSeen > 0 && max(r.maxSeen-r.minSeen+1-int64(r.retain), 0) < m {
		return nil
	}
	kept := int64(-1)
	for p := 0; p < r.partitions; p++ {
		k, err := r.deleteOldVersions(ctx, p)
		if err != nil {
			return err
		}
		kept = max(kept, k)
	}
	if kept > 0 {
		// Each partition has its own file manager in Spark; ckpt's partitions see the same
		// versions, so one gate serves them all.
		r.minSeen = kept
	}
	return nil
}

// rocksCleanup is RocksDBFileManager.deleteOldVersions's decision over a partition's zip
// versions: the newest zip at or below max-minVersionsToRetain+1 is kept, with every version
// after it; older zips and changelogs go, with the SST files only they used. 0 and nil: none
// goes.
func rocksCleanup(zips []int64, retain int) (minKeep int64, remove []int64) {
	if len(zips) == 0 {
		return 0, nil
	}
	slices.Sort(zips)
	top := zips[len(zips)-1]
	for _, z := range zips {
		if z <= top-int64(retain)+1 {
			minKeep = max(minKeep, z)
		}
	}
	for _, z := range zips {
		if z < minKeep {
			remove = append(remove, z)
		}
	}
	if len(remove) == 0 {
		return 0, nil
	}
	return minKeep, remove
}

// deleteOldVersions deletes partition p's old versions and returns the oldest version kept
// when it deleted any (0 when not).
func (r *rocksStore) deleteOldVersions(ctx context.Context, p int) (int64, error) {
	dir := r.partDir(p)
	entries, err := r.st.List(ctx, dir)
	if err != nil {
		return 0, err
	}
	var zips []int64
	var changelogs []state.File
	for _, e := range entries {
		f, ok := state.ParseFileName(path.Base(e.Path))
		if !ok || f.UniqueID != "" || e.IsDir {
			continue
		}
		switch f.Kind {
		case state.KindZip:
			zips = append(zips, f.Version)
		case state.KindChangelog:
			changelogs = append(changelogs, f)
		}
	}
	minKeep, remove := rocksCleanup(zips, r.retain)
	if remove == nil {
		return 0, nil
	}
	// Every version's files, and the newest version using each.
	lastUse := map[string]int64{}
	for _, z := range zips {
		name := path.Join(dir, strconv.FormatInt(z, 10)+".zip")
		data, err := r.st.ReadFile(ctx, name)
		if err != nil {
			return 0, err
		}
		m, err := statefmt.ParseRocksDBZip(name, data)
		if err != nil {
			return 0, err
		}
		for _, f := range append(m.SSTFiles, m.LogFiles...) {
			lastUse[f.DFSName()] = max(lastUse[f.DFSName()], z)
		}
	}
	var del []string
	for name, v := range lastUse {
		if v < minKeep {
			del = append(del, path.Join(dir, "SSTs", name))
		}
	}
	// Orphans (findOrphanFiles): SST files no version names, older than every file one does
	// (a newer one may belong to a version being written).
	ssts, err := r.st.List(ctx, path.Join(dir, "SSTs"))
	if err != nil {
		return 0, err
	}
	var oldest time.Time
	for _, e := range ssts {
		if _, ok := lastUse[path.Base(e.Path)]; ok && (oldest.IsZero() || e.ModTime.Before(oldest)) {
			oldest = e.ModTime
		}
	}
	for _, e := range ssts {
		if _, ok := lastUse[path.Base(e.Path)]; !ok && !e.IsDir && !oldest.IsZero() && e.ModTime.Before(oldest) {
			del = append(del, e.Path)
		}
	}
	slices.Sort(del)
	for _, z := range remove {
		del = append(del, path.Join(dir, strconv.FormatInt(z, 10)+".zip"))
	}
	for _, c := range changelogs {
		if c.Version < minKeep {
			del = append(del, path.Join(dir, strconv.FormatInt(c.Version, 10)+".changelog"))
		}
	}
	for _, name := range del {
		if err := r.st.Delete(ctx, name); err != nil {
			return 0, err
		}
	}
	return minKeep, nil
}

// storeView is a stateStore's state after batch id as its provider writes it: per partition,
// the keys the batch updated and those it evicted (gone), and every key left, each ascending
// by key bytes (sortKeys, partitions at hand); each list is built on first use, so a delta
// commit sorts only the batch's keys.
type storeView struct {
	s                    *stateStore
	id                   int64
	changedP, delP, allP [][]string
}

// bucket sorts keys and splits them by partition.
func (v *storeView) bucket(keys []string) [][]string {
	ents := v.s.sortKeys(keys)
	out := make([][]string, v.s.partitions)
	for i, k := range keys {
		p := ents[i].part
		out[p] = append(out[p], k)
	}
	return out
}

func (v *storeView) bucketChanged() {
	if v.changedP != nil {
		return
	}
	var changed, dels []string
	for k, ent := range v.s.entries {
		if ent.touched == v.id {
			changed = append(changed, k)
		}
		if ent.gone {
			dels = append(dels, k)
		}
	}
	v.changedP, v.delP = v.bucket(changed), v.bucket(dels)
}

func (v *storeView) bucketAll() {
	if v.allP != nil {
		return
	}
	var all []string
	for k, ent := range v.s.entries {
		if !ent.gone {
			all = append(all, k)
		}
	}
	v.allP = v.bucket(all)
}

func (v *storeView) put(rows []stateRow, keys []string) ([]stateRow, error) {
	for _, k := range keys {
		val, err := statefmt.EncodeRow(&statefmt.Object{Values: v.s.entries[k].value}, v.s.valueType)
		if err != nil {
			return nil, err
		}
		rows = append(rows, stateRow{key: []byte(k), value: val})
	}
	return rows, nil
}

func (v *storeView) changed(p int) ([]stateRow, error) {
	v.bucketChanged()
	rows, err := v.put(nil, v.changedP[p])
	if err != nil {
		return nil, err
	}
	// The provider's remove after the puts, as StateStoreSaveExec evicts after it saved.
	for _, k := range v.delP[p] {
		rows = append(rows, stateRow{key: []byte(k), del: true})
	}
	return rows, nil
}

func (v *storeView) all(p int) ([]stateRow, error) {
	v.bucketAll()
	return v.put(nil, v.allP[p])
}

// stateConf is the store configuration of operator op from the engine's query and recorded conf.
func (e *Engine) stateConf(op, partitions int, codec string) storeConf {
	line := "3.5"
	if scala213(e.opts.SparkVersion) {
		line = "4"
	}
	return storeConf{st: e.opts.Store, dir: path.Join("state", strconv.Itoa(op)), partitions: partitions, codec: codec, line: line,
		minDeltas: cmp.Or(e.q.MinDeltasForSnapshot, query.DefaultMinDeltasForSnapshot),
		retain:    cmp.Or(e.q.MinBatchesToRetain, logformat.DefaultMinBatchesToRetain), changelog: e.q.RocksDBChangelog}
}

// withProvider is conf with the state store provider set to provider ("": kept).
func withProvider(conf []logformat.KV, provider string) []logformat.KV {
	for i := range conf {
		if provider == "" {
			break
		}
		if conf[i].Key == query.ConfStateProvider {
			conf[i].Value = provider
		}
	}
	return conf
}
