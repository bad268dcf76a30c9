package doctor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/migrate"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/state"
)

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
	l := r.listing // listed once, for the planner
	if l == nil {
		var err error
		if l, err = state.Scan(r.ctx, r.cp.Store); err != nil {
			return err
		}
	}
	if len(l.Operators) == 0 {
		return nil
	}
	r.stateAhead(l)
	r.stateFormat()
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

// stateFormat reports the planner's failure on state in a format the release does not read
// (recovery.ReasonStateFormatUnsupported): doctor decides nothing about it itself.
func (r *runner) stateFormat() {
	res := r.res
	if res.Reason != recovery.ReasonStateFormatUnsupported || res.State == nil || res.State.Failure == nil {
		return
	}
	sf := res.State.Failure
	what := "its checkpoint format v2 name (<version>_<uuid>), which the format v1 loader parses as a version: the restart's " +
		"spark.sql.streaming.stateStore.checkpointFormatVersion is 1"
	if sf.Damage == recovery.DamageSSTFormat {
		what = "its SST files' table format, which this release's RocksDB does not read"
	}
	f := r.stateFinding(CodeStateFormatUnsupported, Error, sf.File, nil,
		fmt.Sprintf("operator %d store %s partition %d: the restart loads state version %d and Spark %s fails on %s: %s",
			sf.Operator, sf.Store, sf.Partition, res.State.Version, res.SparkVersion, sf.File, what))
	f.SparkError = sparkError(res, false)
	if to, err := migrate.Target(res.SparkVersion); err == nil {
		f.Commands = append(f.Commands, r.cmd("migrate", "--to-spark", to))
	}
	b := res.State.Version - 1
	f.Batch = &b
	r.add(f)
}

// plannedLoad is the planner's load of one partition of one store (recovery.StateLoad), nil
// when the planner predicted none (the restart fails before its first batch, or starts anew).
func (r *runner) plannedLoad(op int64, store string, part int) *recovery.StatePartitionLoad {
	if r.res.State == nil {
		return nil
	}
	for i, l := range r.res.State.Loads {
		if l.Operator == op && l.Store == store && l.Partition == part {
			return &r.res.State.Loads[i]
		}
	}
	return nil
}

// plannedError is Spark's error for a failure of the planner's load, with the path Spark
// fails on; ok false when the planner has none for this partition.
func (r *runner) plannedError(op int64, store string, part int) (path string, spark *string, ok bool) {
	l := r.plannedLoad(op, store, part)
	if l == nil || l.Failure == nil {
		return "", nil, false
	}
	e := l.Failure.SparkError
	return l.Failure.File, &e, true
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
	// The file Spark looks for first and its error are the planner's (its walk from the newest
	// snapshot up names the lowest missing delta).
	path := me.Path
	planned, spark, ok := r.plannedError(op.ID, st.Name, p.ID)
	if ok {
		path = planned
	}
	f := r.stateFinding(CodeStateVersionMissing, Error, path, nil,
		fmt.Sprintf("operator %d store %s partition %d: the restart loads state version %d, and %s is missing with no snapshot above it", op.ID, st.Name, p.ID, me.Version, path))
	if ok {
		f.SparkError = spark
	}
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
		SparkError: spark, Fix: c.Fix, Commands: []string{"ckpt state ls " + shell.Quote(r.loc)}}
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
			keep := latest - logformat.DefaultMinBatchesToRetain
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
		fmt.Sprintf("operator %d: %d state files (%d bytes) are older than the last %d versions and will be deleted by Spark's maintenance", op.ID, files, bytes, logformat.DefaultMinBatchesToRetain)))
}

// stateDeep reports the damaged files of one partition's restart chain: state.FileDamage reads
// them as Spark's provider does; Spark's error is the planner's, which had the same reading
// (doctor --deep plans with the files read).
func (r *runner) stateDeep(op *state.Operator, st *state.Store, p *state.Partition, chain *state.Chain) error {
	files := append([]state.File{}, chain.Steps...)
	if chain.Base != nil {
		files = append([]state.File{*chain.Base}, files...)
	}
	for _, f := range files {
		d, err := state.FileDamage(r.ctx, r.cp.Store, p, f)
		if err != nil {
			return err
		}
		if d == nil || (d.Kind == "" && !r.plannedFails(op, st, p, f.Path)) {
			continue
		}
		r.stateDamaged(op, st, p, f, d)
		return nil
	}
	return nil
}

// plannedFails says whether the planner's load of p fails on path.
func (r *runner) plannedFails(op *state.Operator, st *state.Store, p *state.Partition, path string) bool {
	planned, _, ok := r.plannedError(op.ID, st.Name, p.ID)
	return ok && planned == path
}

func (r *runner) stateDamaged(op *state.Operator, st *state.Store, p *state.Partition, f state.File, d *recovery.StateDamage) {
	code, path := CodeStateFileCorrupt, f.Path
	what := fmt.Sprintf("%s does not decode: %s", f.Path, d.Detail)
	switch d.Kind {
	case "":
		c := d.Checksum
		what = fmt.Sprintf("%s does not match its checksum file %s.crc (%d bytes, CRC32C %d; the checksum file says %d bytes, %d)", f.Path, f.Path, c.Size, c.Computed, c.ExpectedSize, c.Expected)
	case recovery.DamageEmpty:
		what = f.Path + " is empty"
	case recovery.DamageSSTMissing:
		code, path = CodeRocksDBSSTMissing, d.File
		what = fmt.Sprintf("operator %d store %s partition %d: %s lists %s, which is missing or of another size (%d bytes)", op.ID, st.Name, p.ID, f.Path, d.File, d.Size)
	case recovery.DamageSSTFooter, recovery.DamageSSTBlock:
		path = d.File
		what = fmt.Sprintf("operator %d store %s partition %d: %s (listed by %s) does not decode: %s", op.ID, st.Name, p.ID, d.File, f.Path, d.Detail)
	}
	ff := r.stateFinding(code, Error, path, nil, what)
	if planned, spark, ok := r.plannedError(op.ID, st.Name, p.ID); ok && (planned == path || planned == f.Path) {
		ff.SparkError = spark
	}
	b := f.Version - 1
	ff.Batch = &b
	r.add(ff)
}
