package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// defaultMinBatchesToRetain is Spark's spark.sql.streaming.minBatchesToRetain default.
const defaultMinBatchesToRetain = 100

// stateChecks are the state store findings. The default run uses one walk of state/ plus the
// latest offsets and commit files the planner has read already; Deep also reads the files of
// the chain each partition's restart loads (and RocksDB zips).
func (r *runner) stateChecks() error {
	hasState := false
	for _, e := range r.cp.Root {
		hasState = hasState || (e.IsDir && e.Path == "state")
	}
	if !hasState {
		return nil // the root listing shows no state/: no extra listing
	}
	l, err := state.Scan(r.ctx, r.cp.Store)
	if err != nil {
		return err
	}
	if len(l.Operators) == 0 {
		return nil
	}
	r.stateAhead(l)
	shuffle := -1
	if r.hasL {
		if o, err := r.cp.ReadOffsets(r.ctx, r.L); err == nil {
			if v, ok := o.ConfValue("spark.sql.shuffle.partitions"); ok {
				if n, err := strconv.Atoi(v); err == nil {
					shuffle = n
				}
			}
		}
	}
	var ids map[int64][][]string
	if r.hasC {
		if c, err := r.cp.ReadCommit(r.ctx, r.C); err == nil {
			ids, _ = c.StateIDs()
		}
	}
	need := int64(0)
	if r.hasC {
		need = r.C + 1
	}
	for _, op := range l.Operators {
		for si, st := range op.Stores {
			storeIdx := si
			if i := indexOf(state.JoinStoreNames, st.Name); i >= 0 {
				storeIdx = i
			} else if st.Name == state.DefaultStore {
				storeIdx = 0
			}
			r.statePartitions(op, st, shuffle, need)
			r.stateSchema(op, st)
			for _, p := range st.Partitions {
				var idf state.IDs
				if ids != nil {
					idf = state.IDsFor(r.ctx, r.cp, op.ID, storeIdx, p.ID)
					r.stateLineage(op, st, p, ids, storeIdx, need)
				}
				if need == 0 {
					continue
				}
				chain, err := state.ChainFor(p, st.Provider, need, idf)
				var me *state.MissingError
				if errors.As(err, &me) {
					r.stateMissing(op, st, p, me, idf)
					continue
				}
				if err != nil {
					return err
				}
				if r.opts.Deep {
					if err := r.stateDeep(op, st, p, chain); err != nil {
						return err
					}
				}
			}
		}
		r.stateReclaimable(op)
	}
	return nil
}

// stateAhead reports state versions the restart's new batches would write again: batch N writes
// version N+1, so a restart that resumes (or starts anew) at N collides with any version above
// N, and a re-run of batch L with any version above L+1 (version L+1 may be the re-run batch's
// own, written before its commit was lost). A restart that fails is not judged here.
func (r *runner) stateAhead(l *state.Listing) {
	res := r.res
	if res.Failed() || res.NextBatch < 0 {
		return
	}
	limit := res.NextBatch // highest version that may exist
	if res.RerunBatch != nil {
		limit = *res.RerunBatch + 1
	}
	var maxV int64 = -1
	var maxFile, firstFile string
	firstV := int64(-1)
	count := 0
	for _, op := range l.Operators {
		for _, st := range op.Stores {
			for _, p := range st.Partitions {
				for _, f := range p.Files {
					if f.Version <= limit {
						continue
					}
					count++
					if f.Version > maxV {
						maxV, maxFile = f.Version, f.Path
					}
					if firstV < 0 || f.Version < firstV || f.Version == firstV && f.Path < firstFile {
						firstV, firstFile = f.Version, f.Path
					}
				}
			}
		}
	}
	if maxV < 0 {
		return
	}
	logs := "the latest commit is " + strconv.FormatInt(r.C, 10)
	switch {
	case !r.hasL && !r.hasC:
		logs = "offsets/ and commits/ are empty"
	case !r.hasC:
		logs = "commits/ is empty"
	}
	what := fmt.Sprintf("the restart starts a new query at batch %d", res.NextBatch)
	switch {
	case res.RerunBatch != nil:
		what = fmt.Sprintf("the restart re-runs batch %d and then runs batch %d on", *res.RerunBatch, *res.RerunBatch+1)
	case r.hasL:
		what = fmt.Sprintf("the restart resumes at batch %d", res.NextBatch)
	}
	files := []string{maxFile}
	if firstFile != maxFile {
		files = []string{firstFile, maxFile}
	}
	f := r.stateFinding(CodeStateAheadOfLogs, Error, "state", files,
		fmt.Sprintf("state/ holds versions up to %d (%s) but %s: %s, whose batches write state versions %d and up, and %d state file(s) of those versions already exist, from %s on",
			maxV, maxFile, logs, what, limit+1, count, firstFile))
	r.add(f)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func (r *runner) spark4() bool {
	v := r.opts.SparkVersion
	return v != "" && v[0] >= '4' && v[0] <= '9'
}

func (r *runner) providerString(op *state.Operator, p *state.Partition) string {
	return fmt.Sprintf("HDFSStateStoreProvider[id = (op=%d,part=%d),dir = %s]", op.ID, p.ID, r.cp.SparkPath(p.Dir))
}

// deltaMissingError is Spark's text for a delta the HDFS-backed store cannot open.
func (r *runner) deltaMissingError(op *state.Operator, p *state.Partition, file string) string {
	f := r.cp.SparkPath(file)
	msg := fmt.Sprintf("Error reading delta file %s of %s: %s does not exist", f, r.providerString(op, p), f)
	if r.spark4() {
		return "org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.CANNOT_READ_DELTA_FILE_NOT_EXISTS] An error occurred during loading state. " + msg + ". SQLSTATE: 58030"
	}
	return "java.lang.IllegalStateException: " + msg
}

func (r *runner) stateMissing(op *state.Operator, st *state.Store, p *state.Partition, me *state.MissingError, ids state.IDs) {
	// The newest version at or below the one needed that is whole, for the fix.
	whole := int64(-1)
	for v := me.Need - 1; v >= 0; v-- {
		if v == 0 {
			whole = 0
			break
		}
		if _, err := state.ChainFor(p, st.Provider, v, ids); err == nil {
			whole = v
			break
		}
	}
	spark := "java.io.FileNotFoundException: File " + r.cp.SparkPath(me.Path) + " does not exist"
	if st.Provider != state.ProviderRocksDB {
		spark = r.deltaMissingError(op, p, me.Path)
	}
	f := r.stateFinding(CodeStateVersionMissing, Error, me.Path, nil,
		fmt.Sprintf("operator %d store %s partition %d: the restart loads state version %d, and %s is missing with no snapshot above it", op.ID, st.Name, p.ID, me.Version, me.Path))
	f.SparkError = &spark
	if whole >= 0 {
		f.Message += fmt.Sprintf("; the newest whole version of this partition is %d (after batch %d)", whole, whole-1)
	}
	b := me.Version - 1
	f.Batch = &b
	r.add(f)
}

func (r *runner) stateFinding(code string, sev Severity, path string, files []string, msg string) Finding {
	c, _ := Lookup(code)
	var spark *string
	if c.SparkError != "" {
		s := firstParagraph(c.SparkError)
		spark = &s
	}
	if files == nil {
		files = []string{}
	}
	return Finding{Code: code, Severity: sev, Path: path, Files: files, Message: msg, Explanation: c.Explanation,
		SparkError: spark, Fix: c.Fix, Commands: []string{"ckpt state ls " + ShellQuote(r.loc)}}
}

func (r *runner) statePartitions(op *state.Operator, st *state.Store, shuffle int, need int64) {
	if shuffle < 0 {
		return
	}
	n := len(st.Partitions)
	if n == shuffle {
		return
	}
	sev := Warning
	msg := fmt.Sprintf("operator %d store %s has %d partition directories, spark.sql.shuffle.partitions in offsets/%d is %d", op.ID, st.Name, n, r.L, shuffle)
	if n < shuffle {
		if need == 0 {
			return // the query has not committed a batch: partitions appear as they are written
		}
		sev = Error
		missing := []string{}
		for i := 0; i < shuffle && len(missing) < maxListed; i++ {
			if st.Partition(i) == nil {
				missing = append(missing, fmt.Sprint(i))
			}
		}
		msg += "; missing: " + strings.Join(missing, ", ")
	}
	r.add(r.stateFinding(CodeStatePartitionsMismatch, sev, op.Dir, nil, msg))
}

func (r *runner) stateSchema(op *state.Operator, st *state.Store) {
	if st.SchemaFile != "" || len(op.SchemaV3Files) > 0 {
		return
	}
	if _, _, ok := st.Versions(); !ok {
		return
	}
	dir := op.Dir + "/0/_metadata/schema"
	if st.Name != state.DefaultStore {
		dir = op.Dir + "/0/" + st.Name + "/_metadata/schema"
	}
	r.add(r.stateFinding(CodeStateSchemaMissing, Warning, dir, nil,
		fmt.Sprintf("operator %d store %s has state files but no schema file %s", op.ID, st.Name, dir)))
}

func (r *runner) stateLineage(op *state.Operator, st *state.Store, p *state.Partition, ids map[int64][][]string, storeIdx int, need int64) {
	parts, ok := ids[op.ID]
	if !ok || p.ID >= len(parts) || storeIdx >= len(parts[p.ID]) {
		return
	}
	id := parts[p.ID][storeIdx]
	for _, f := range p.Files {
		if f.Version == need && f.UniqueID == id {
			return
		}
	}
	want := fmt.Sprintf("%s/%d_%s", p.Dir, need, id)
	others := []string{}
	for _, f := range p.Files {
		if f.Version == need {
			others = append(others, f.Path)
		}
	}
	b := r.C
	f := r.stateFinding(CodeStateLineageBroken, Error, want+".zip", others,
		fmt.Sprintf("commits/%d names state id %s for operator %d store %s partition %d, and neither %s.zip nor %s.changelog exists", r.C, id, op.ID, st.Name, p.ID, want, want))
	f.Batch = &b
	r.add(f)
}

// stateReclaimable sums, per operator, the files Spark's maintenance would delete:
// those older than the base of the chain of (latest version - minBatchesToRetain).
func (r *runner) stateReclaimable(op *state.Operator) {
	var files int
	var bytes int64
	var first string
	for _, st := range op.Stores {
		for _, p := range st.Partitions {
			if len(p.Files) == 0 {
				continue
			}
			latest := p.Files[len(p.Files)-1].Version
			keep := latest - defaultMinBatchesToRetain
			if keep <= 0 {
				continue
			}
			chain, err := state.ChainFor(p, st.Provider, keep, nil)
			if err != nil {
				continue
			}
			from := keep
			if chain.Base != nil {
				from = chain.Base.Version
			} else if len(chain.Steps) > 0 {
				from = chain.Steps[0].Version
			}
			for _, f := range p.Files {
				if f.Version < from {
					files++
					bytes += f.Size
					if first == "" {
						first = f.Path
					}
				}
			}
		}
	}
	if files == 0 {
		return
	}
	r.add(r.stateFinding(CodeStateReclaimable, Info, op.Dir, []string{first},
		fmt.Sprintf("operator %d: %d state files (%d bytes) are older than the last %d versions and will be deleted by Spark's maintenance", op.ID, files, bytes, defaultMinBatchesToRetain)))
}

// stateDeep reads the files of one partition's restart chain.
func (r *runner) stateDeep(op *state.Operator, st *state.Store, p *state.Partition, chain *state.Chain) error {
	files := append([]state.File{}, chain.Steps...)
	if chain.Base != nil {
		if chain.Base.Kind == state.KindZip {
			if err := r.stateSSTs(op, st, p, *chain.Base); err != nil {
				return err
			}
		} else {
			files = append([]state.File{*chain.Base}, files...)
		}
	}
	for _, f := range files {
		if err := r.stateFile(op, p, f); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) stateFile(op *state.Operator, p *state.Partition, f state.File) error {
	rc, err := r.cp.Store.Open(r.ctx, f.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	head, _ := br.Peek(8)
	bad := func(e error) {
		spark := r.corruptSparkError(op, p, f, e)
		ff := r.stateFinding(CodeStateFileCorrupt, Error, f.Path, nil, fmt.Sprintf("%s does not decode: %v", f.Path, e))
		ff.SparkError = &spark
		b := f.Version - 1
		ff.Batch = &b
		r.add(ff)
	}
	codec := statefmt.DetectCodec(head)
	if codec == "" {
		bad(&statefmt.Error{File: f.Path, Offset: 0, Expected: "the framing of a compression codec (lz4, zstd, snappy, lzf)", Got: fmt.Sprintf("%q", head)})
		return nil
	}
	dr, err := statefmt.Decompress(f.Path, codec, br)
	if err != nil {
		bad(err)
		return nil
	}
	defer dr.Close()
	kind := statefmt.Delta
	var src io.Reader = dr
	switch f.Kind {
	case state.KindSnapshot:
		kind = statefmt.Snapshot
	case state.KindChangelog:
		kind = statefmt.Changelog
		cb := bufio.NewReader(dr)
		if _, err := statefmt.ReadChangelogHeader(f.Path, cb); err != nil {
			bad(err)
			return nil
		}
		src = cb
	}
	rr := statefmt.NewRecordReader(f.Path, kind, src)
	for {
		_, err := rr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var se *statefmt.Error
			if !errors.As(err, &se) {
				return err // an I/O error of the store, not damage
			}
			bad(err)
			return nil
		}
	}
}

// corruptSparkError is what Spark throws for the damage err describes.
func (r *runner) corruptSparkError(op *state.Operator, p *state.Partition, f state.File, err error) string {
	var se *statefmt.Error
	errors.As(err, &se)
	file := r.cp.SparkPath(f.Path)
	what := "delta"
	cond := "CANNOT_READ_DELTA_FILE_KEY_SIZE"
	if f.Kind == state.KindSnapshot {
		what, cond = "snapshot", "CANNOT_READ_SNAPSHOT_FILE_KEY_SIZE"
	}
	switch {
	case se != nil && se.Problem == statefmt.ProblemKeySize && f.Kind != state.KindChangelog:
		msg := fmt.Sprintf("Error reading %s file %s of %s: key size cannot be %d", what, file, r.providerString(op, p), se.Size)
		if r.spark4() {
			return "org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE." + cond + "] An error occurred during loading state. " + msg + ". SQLSTATE: 58030"
		}
		return "java.io.IOException: " + msg
	case se != nil && se.Problem == statefmt.ProblemValueSize && f.Kind == state.KindSnapshot:
		msg := fmt.Sprintf("Error reading snapshot file %s of %s: value size cannot be %d", file, r.providerString(op, p), se.Size)
		if r.spark4() {
			return "org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.CANNOT_READ_SNAPSHOT_FILE_VALUE_SIZE] An error occurred during loading state. " + msg + ". SQLSTATE: 58030"
		}
		return "java.io.IOException: " + msg
	case se != nil && se.Problem == statefmt.ProblemTruncated:
		return "java.io.EOFException"
	}
	return "java.io.IOException: Stream is corrupted (the codec rejects " + file + ")"
}

// stateSSTs reads a RocksDB zip and checks that every SST it lists is in SSTs/ with its size.
func (r *runner) stateSSTs(op *state.Operator, st *state.Store, p *state.Partition, zip state.File) error {
	data, err := r.cp.Store.ReadFile(r.ctx, zip.Path)
	if err != nil {
		return err
	}
	cp, err := statefmt.ParseRocksDBZip(zip.Path, data)
	if err != nil {
		spark := "java.util.zip.ZipException (Spark cannot unzip " + r.cp.SparkPath(zip.Path) + ")"
		f := r.stateFinding(CodeStateFileCorrupt, Error, zip.Path, nil, fmt.Sprintf("%s does not decode: %v", zip.Path, err))
		f.SparkError = &spark
		r.add(f)
		return nil
	}
	var missing []string
	var detail []string
	for _, s := range cp.SSTFiles {
		size, ok := p.SSTs[s.DFSName()]
		switch {
		case !ok:
			missing = append(missing, p.Dir+"/SSTs/"+s.DFSName())
			detail = append(detail, s.DFSName()+" missing")
		case size != s.SizeBytes:
			missing = append(missing, p.Dir+"/SSTs/"+s.DFSName())
			detail = append(detail, fmt.Sprintf("%s has %d bytes, the zip says %d", s.DFSName(), size, s.SizeBytes))
		}
	}
	if len(missing) == 0 {
		// Every SST is there: read them as RocksDB opens them (footer and magic, index,
		// block checksums).
		for _, s := range cp.SSTFiles {
			path := p.Dir + "/SSTs/" + s.DFSName()
			b, err := r.cp.Store.ReadFile(r.ctx, path)
			if err != nil {
				return err
			}
			if err := state.CheckSST(path, b); err != nil {
				spark := "org.rocksdb.RocksDBException: Corruption: ... (RocksDB rejects " + r.cp.SparkPath(path) + ": bad table magic number or block checksum mismatch)"
				f := r.stateFinding(CodeStateFileCorrupt, Error, path, nil, fmt.Sprintf("operator %d store %s partition %d: %s (listed by %s) does not decode: %v", op.ID, st.Name, p.ID, path, zip.Path, err))
				f.SparkError = &spark
				b := zip.Version - 1
				f.Batch = &b
				r.add(f)
				return nil
			}
		}
		return nil
	}
	list, more := capList(missing)
	f := r.stateFinding(CodeRocksDBSSTMissing, Error, missing[0], list,
		fmt.Sprintf("operator %d store %s partition %d: %s lists %d SST files missing or of another size: %s%s", op.ID, st.Name, p.ID, zip.Path, len(missing), strings.Join(detail[:min(len(detail), 3)], "; "), more))
	spark := "java.io.FileNotFoundException: File " + r.cp.SparkPath(missing[0]) + " does not exist"
	f.SparkError = &spark
	b := zip.Version - 1
	f.Batch = &b
	r.add(f)
	return nil
}
