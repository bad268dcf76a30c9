package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Names inside the checkpoint root that belong to ckpt. Spark reads only metadata, offsets/,
// commits/, sources/ and state/, and Hadoop tools treat names starting with "_" as hidden, so a
// "_ckpt" directory beside them changes nothing for Spark; it works the same on S3, where it is
// just another prefix.
const (
	// Dir is ckpt's own directory in the checkpoint root.
	Dir = "_ckpt"
	// RepairsDir holds one directory per repair (journal and backups) unless --backup-dir says
	// otherwise.
	RepairsDir = Dir + "/repairs"
	// LockPath is the repair lock.
	LockPath = Dir + "/lock"
)

// Version is the version of the journal format this package writes. Version 2 added the
// digest chain (Binding, Prev); a version 1 journal has none and is refused, since nothing would
// show whether it was edited. Version 3 writes the actions once, in the first snapshot, and
// every later snapshot records only the actions' progress (Progress): a purge of 40,000 files
// wrote ~16 MB a snapshot before. Version 2 journals are still read (and continued with
// version 3 snapshots).
const Version = 3

// oldestJournalVersion is the oldest version Read accepts.
const oldestJournalVersion = 2

// Location is a repair's directory: the journal snapshots under journal/ and the backups under
// files/. By default it is <checkpoint>/_ckpt/repairs/<id> in the checkpoint's own store, so the
// backups sit beside the data on every store ckpt supports, with the same permissions, and travel
// with the checkpoint when it is copied.
type Location struct {
	Store storage.Store
	// Dir is the repair directory relative to Store's root ("" when the store is rooted there).
	Dir string
}

// URI is the location as a user types it, e.g. s3://bucket/ckpt/_ckpt/repairs/<id>.
func (l Location) URI() string {
	if l.Dir == "" {
		return l.Store.URI()
	}
	return strings.TrimRight(l.Store.URI(), "/") + "/" + l.Dir
}

func (l Location) journalDir() string { return storage.Join(l.Dir, "journal") }

// State is where a repair (the journal as a whole) stands.
type State string

// The journal states, in the order a repair goes through them.
const (
	StatePlanned  State = "planned"   // journal written, nothing copied or changed yet
	StateBackedUp State = "backed-up" // every file to be touched is copied to files/
	StateApplying State = "applying"  // actions are being applied
	StateApplied  State = "applied"   // every action applied; not yet verified
	StateDone     State = "done"      // applied and verified by the planner
	StateUndoing  State = "undoing"   // undo in progress
	StateUndone   State = "undone"    // every change reverted, byte for byte
)

// ActionState is where one action stands. It is advisory: Undo and Resume trust the file hashes,
// since a crash can fall between a change and the journal write that records it.
type ActionState string

// The action states.
const (
	ActionPending  ActionState = "pending"
	ActionApplying ActionState = "applying" // recorded durably just before the change
	ActionDone     ActionState = "done"
	ActionUndone   ActionState = "undone"
)

// Record is the durable record of one repair. It is written as a sequence of snapshots,
// journal/000001.json, journal/000002.json, …, each a new file: stores never overwrite, so a
// snapshot is either fully there or absent, and the newest one is the journal. The first snapshot
// holds every action; each later one holds everything else in full and, instead of the actions,
// their progress (which action is in which state), so a snapshot costs the same for 4 actions
// and for 40,000. A person can read them with cat.
type Record struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Tool is the ckpt build that wrote it.
	Tool string `json:"tool"`
	// Checkpoint is the checkpoint location (absolute for local paths).
	Checkpoint string `json:"checkpoint"`
	// QueryID is the id in the checkpoint's metadata file, checked before undo and resume so a
	// journal is never replayed onto another query's checkpoint. Empty when there is no metadata.
	QueryID string `json:"queryId,omitempty"`
	// Location is where the journal and the backups are.
	Location string `json:"location"`
	// Sink is the file sink output directory of the actions with Store "sink", "" for none.
	Sink string `json:"sink,omitempty"`
	// Strategy is the strategy of the plan applied.
	Strategy Strategy `json:"strategy"`
	State    State    `json:"state"`
	// Seq is this snapshot's number.
	Seq     int       `json:"seq"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Actions are in the first snapshot (and in every snapshot of a version 2 journal); a later
	// snapshot has Progress instead.
	Actions []Entry `json:"actions,omitempty"`
	// Progress is the actions' states and write times in a snapshot that does not repeat the
	// actions; nil in a snapshot that holds them.
	Progress *Progress `json:"progress,omitempty"`
	// Predicted is the planner's prediction for the repaired checkpoint, and Verified its answer
	// after the actions were applied.
	Predicted *recovery.Result `json:"predicted"`
	Verified  *recovery.Result `json:"verified"`
	// Options are the planner options predicted and verified with.
	Options PlannerOptions `json:"plannerOptions"`
	// Error is the error that stopped the last run, if any.
	Error string `json:"error,omitempty"`
	// Warnings were given while it ran (--force overrides, a verified restart that differs from
	// the prediction).
	Warnings []string `json:"warnings,omitempty"`
	// Binding is the SHA-256 of what the repair is (its id, checkpoint, query id, strategy and
	// every action with its paths, digests and backup), the same in every snapshot; Prev is the
	// SHA-256 of the previous snapshot's bytes (null in the first). Undo and resume recompute
	// both and refuse a journal whose actions or backups were edited: they only ever put back
	// what the repair itself changed.
	Binding Digest `json:"binding"`
	Prev    Digest `json:"prevSnapshot"`

	// lock is the repair lock this run holds (not recorded: it belongs to the process).
	lock Lock
	// last is the digest of the newest snapshot's bytes, the next snapshot's Prev.
	last Digest
}

// Entry is an Action with its backup and progress.
type Entry struct {
	Action
	// Backup is the copy of the original file, relative to the repair directory
	// ("files/offsets/21"); empty when the action creates a file that did not exist.
	Backup string      `json:"backup,omitempty"`
	State  ActionState `json:"state"`
	// Written is the modification time the store gave Path when ckpt last wrote it (a copy, or a
	// restore by undo), so the liveness check of a later repair knows the file for ckpt's own
	// and not a sign of a running query. nil when ckpt has not written Path.
	Written *time.Time `json:"written,omitempty"`
}

// Progress is where every action of a journal stands, in a snapshot after the first: the states
// run-length encoded in action order ({"state": "done", "count": 39800}), and the write time of
// each action ckpt wrote (Entry.Written).
type Progress struct {
	States  []StateRun  `json:"states"`
	Written []WrittenAt `json:"written,omitempty"`
}

// StateRun is Count consecutive actions in State.
type StateRun struct {
	State ActionState `json:"state"`
	Count int         `json:"count"`
}

// WrittenAt is the Written time of the action at Index (0-based, in the order of the actions).
type WrittenAt struct {
	Index int       `json:"index"`
	Time  time.Time `json:"time"`
}

// progressOf encodes the states and write times of as.
func progressOf(as []Entry) *Progress {
	p := &Progress{States: []StateRun{}}
	for i, a := range as {
		if n := len(p.States); n > 0 && p.States[n-1].State == a.State {
			p.States[n-1].Count++
		} else {
			p.States = append(p.States, StateRun{State: a.State, Count: 1})
		}
		if a.Written != nil {
			p.Written = append(p.Written, WrittenAt{Index: i, Time: *a.Written})
		}
	}
	return p
}

// applyTo sets the states and write times of as (the actions of the first snapshot) from p. A
// progress record that does not fit the actions (other counts, an index out of range or twice,
// an unknown state) was not written by ckpt.
func (p *Progress) applyTo(as []Entry) error {
	k := 0
	for _, r := range p.States {
		switch r.State {
		case ActionPending, ActionApplying, ActionDone, ActionUndone:
		default:
			return fmt.Errorf("%w: its progress names the action state %q", ErrForged, r.State)
		}
		if r.Count <= 0 || r.Count > len(as)-k {
			return fmt.Errorf("%w: its progress counts other actions than the journal has (%d)", ErrForged, len(as))
		}
		for i := k; i < k+r.Count; i++ {
			as[i].State = r.State
			as[i].Written = nil
		}
		k += r.Count
	}
	if k != len(as) {
		return fmt.Errorf("%w: its progress counts %d actions, the journal has %d", ErrForged, k, len(as))
	}
	last := -1
	for _, w := range p.Written {
		if w.Index <= last || w.Index >= len(as) {
			return fmt.Errorf("%w: its progress gives a write time to action %d, out of order or range", ErrForged, w.Index+1)
		}
		t := w.Time
		as[w.Index].Written = &t
		last = w.Index
	}
	return nil
}

// snapshotName is the file of snapshot seq; fixed width, so listings sort numerically.
func snapshotName(seq int) string { return fmt.Sprintf("%06d.json", seq) }

// write records j as snapshot j.Seq+1 and advances j.Seq. The write is durable when it returns
// (the store's atomic write), which is what lets every change be preceded by its record.
func (j *Record) write(ctx context.Context, loc Location, now time.Time) error {
	next := *j
	next.Version = Version
	next.Seq++
	next.Updated = now.UTC()
	if next.Binding == "" || j.Seq == 0 {
		// The binding is over what no run changes, so it is computed once, for the first
		// snapshot; a journal read back had its binding checked against its actions.
		next.Binding = j.binding()
	}
	next.Prev = j.last
	if j.Seq > 0 {
		// The actions are in an earlier snapshot of the chain (the first, or a version 2 one).
		next.Actions, next.Progress = nil, progressOf(j.Actions)
	}
	data, err := json.MarshalIndent(&next, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := put(ctx, loc.Store, storage.Join(loc.journalDir(), snapshotName(next.Seq)), data); err != nil {
		return fmt.Errorf("write repair journal: %w", err)
	}
	j.Seq, j.Updated, j.Binding, j.Prev, j.last = next.Seq, next.Updated, next.Binding, next.Prev, DigestOf(data)
	return nil
}

// binding hashes what the repair is, not how far it got: the fields no run changes. Every field
// is length-prefixed, so no two journals share an encoding.
func (j *Record) binding() Digest {
	h := sha256.New()
	var buf []byte
	field := func(s string) {
		buf = strconv.AppendInt(buf[:0], int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
		buf = append(buf, ';')
		h.Write(buf)
	}
	field("ckpt-journal-binding-v2")
	field(j.ID)
	field(j.Checkpoint)
	field(j.QueryID)
	field(string(j.Strategy))
	field(j.Sink)
	field(strconv.Itoa(len(j.Actions)))
	for _, a := range j.Actions {
		field(string(a.Op))
		field(a.Store)
		field(a.Path)
		field(a.From)
		field(string(a.Before))
		field(string(a.After))
		field(strconv.FormatInt(a.Size, 10))
		field(a.Backup)
		data := ""
		if a.Data != nil {
			data = string(DigestOf(a.Data))
		}
		field(data)
	}
	return Digest(hex.EncodeToString(h.Sum(nil)))
}

// ErrForged is returned for a journal that is not as ckpt wrote it: its actions, their digests
// or its backups' names were edited, or a snapshot was changed, added or removed.
var ErrForged = errors.New("the repair journal is not as ckpt wrote it")

// check refuses a journal whose actions do not fit the repair they claim to be: every change
// must be one ckpt makes (a delete of an existing file with its backup under files/<path>, a
// create of a missing file), and the digests must be those the recorded bytes have.
func (j *Record) check() error {
	seen := map[string]bool{}
	for i, a := range j.Actions {
		bad := func(why string) error {
			return fmt.Errorf("%w: action %d (%s %s) %s", ErrForged, i+1, a.Op, a.Path, why)
		}
		if a.Store != "" && (a.Store != StoreSink || j.Sink == "") {
			return bad(fmt.Sprintf("names the store %q, which the journal does not have", a.Store))
		}
		key := a.Store + "\x00" + a.Path
		if seen[key] {
			return bad("names a file an earlier action changes")
		}
		seen[key] = true
		wantBackup := ""
		if !a.Before.Absent() {
			wantBackup = storage.Join("files", a.Store, a.Path)
		}
		if a.Backup != wantBackup {
			return bad(fmt.Sprintf("has the backup %q, not %q", a.Backup, wantBackup))
		}
		switch a.Op {
		case OpDelete:
			if a.Before.Absent() || !a.After.Absent() || a.Data != nil {
				return bad("is not a delete of an existing file")
			}
		case OpCopy:
			if !a.Before.Absent() || a.After.Absent() || a.From == "" || a.Data != nil {
				return bad("is not a copy onto a missing file")
			}
		case OpWrite, OpReplace:
			if (a.Op == OpWrite) != a.Before.Absent() || DigestOf(a.Data) != a.After {
				return bad("does not carry the bytes its digest names")
			}
		default:
			return bad("has an unknown operation")
		}
	}
	if b := j.binding(); b != j.Binding {
		return fmt.Errorf("%w: its binding digest is %s, its actions hash to %s", ErrForged, j.Binding.Short(), b.Short())
	}
	return nil
}

// ErrMissing is returned when a location holds no journal snapshot.
var ErrMissing = errors.New("no repair journal")

// snapshotHead is what Read decodes of every snapshot: its place in the chain, and whether
// it holds the actions or their progress (kept raw, not decoded: tens of thousands of actions).
type snapshotHead struct {
	Version  int             `json:"version"`
	Seq      int             `json:"seq"`
	Binding  Digest          `json:"binding"`
	Prev     Digest          `json:"prevSnapshot"`
	Actions  json.RawMessage `json:"actions"`
	Progress json.RawMessage `json:"progress"`
}

func (h *snapshotHead) hasProgress() bool { return len(h.Progress) > 0 && string(h.Progress) != "null" }

// Read returns the newest snapshot of the journal at loc, after checking the chain of
// every snapshot (journal.check, Prev): a journal edited by hand is refused with ErrForged. A
// newest snapshot that does not parse is skipped in favour of the one before it (stores write
// atomically, so that only happens to a file edited by hand, and the chain still holds up to it).
// A snapshot with progress instead of actions takes its actions from the newest snapshot before
// it that holds them.
func Read(ctx context.Context, loc Location) (*Record, error) {
	entries, err := loc.Store.List(ctx, loc.journalDir())
	if err != nil {
		return nil, err
	}
	type snap struct {
		seq  int
		path string
	}
	var snaps []snap
	for _, e := range entries {
		name := path.Base(e.Path)
		if e.IsDir || !strings.HasSuffix(name, ".json") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(name, ".json"))
		if err != nil {
			continue
		}
		snaps = append(snaps, snap{n, e.Path})
	}
	sort.Slice(snaps, func(a, b int) bool { return snaps[a].seq < snaps[b].seq })
	// read is one snapshot whose place in the chain was checked.
	type read struct {
		path   string
		data   []byte
		digest Digest
		full   *read // the newest snapshot up to this one that holds the actions
	}
	var (
		cur, prev *read
		binding   Digest
		lastErr   error
	)
	for i, sn := range snaps {
		data, err := readJournalFile(ctx, loc.Store, sn.path)
		if err != nil {
			return nil, err
		}
		var h snapshotHead
		if err := json.Unmarshal(data, &h); err != nil {
			if i == len(snaps)-1 {
				lastErr = fmt.Errorf("%s: %w", sn.path, err)
				break
			}
			return nil, fmt.Errorf("%w: %s does not parse (%v), and later snapshots follow it", ErrForged, sn.path, err)
		}
		if h.Version < oldestJournalVersion || h.Version > Version {
			return nil, fmt.Errorf("%s: journal version %d, this ckpt reads versions %d to %d (a version 1 journal has no digest chain: undo or resume it with the ckpt that wrote it)", sn.path, h.Version, oldestJournalVersion, Version)
		}
		if h.Seq != i+1 || sn.seq != i+1 {
			return nil, fmt.Errorf("%w: %s is snapshot %d of the directory but records seq %d (a snapshot was added or removed)", ErrForged, sn.path, i+1, h.Seq)
		}
		var prevDigest Digest
		if cur != nil {
			prevDigest = cur.digest
		}
		if h.Prev != prevDigest {
			return nil, fmt.Errorf("%w: %s records the previous snapshot as %s, but it is %s", ErrForged, sn.path, h.Prev.Short(), prevDigest.Short())
		}
		if i > 0 && h.Binding != binding {
			return nil, fmt.Errorf("%w: %s describes other actions than the snapshots before it", ErrForged, sn.path)
		}
		r := &read{path: sn.path, data: data, digest: DigestOf(data)}
		switch {
		case !h.hasProgress():
			r.full = r
		case h.Version < 3 || len(h.Actions) > 0 && string(h.Actions) != "null":
			return nil, fmt.Errorf("%w: %s holds progress it cannot hold (version %d, or actions too)", ErrForged, sn.path, h.Version)
		case cur == nil:
			return nil, fmt.Errorf("%w: %s records progress, but no snapshot before it holds the actions", ErrForged, sn.path)
		default:
			r.full = cur.full
		}
		binding = h.Binding
		prev, cur = cur, r
	}
	for k, r := range []*read{cur, prev} {
		if r == nil {
			continue
		}
		j, err := decodeSnapshot(r.data, r.full.data)
		if err != nil {
			if k == 0 && lastErr == nil && prev != nil && !errors.Is(err, ErrForged) {
				// The newest snapshot's fields do not decode: as unparseable as a syntax error.
				lastErr = fmt.Errorf("%s: %w", r.path, err)
				continue
			}
			if errors.Is(err, ErrForged) {
				return nil, fmt.Errorf("%s: %w", r.path, err)
			}
			return nil, fmt.Errorf("%w: %s does not parse (%v)", ErrForged, r.path, err)
		}
		if err := j.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", r.path, err)
		}
		j.last = r.digest
		return j, nil
	}
	if lastErr != nil {
		return nil, fmt.Errorf("%w at %s: %v", ErrMissing, loc.URI(), lastErr)
	}
	return nil, fmt.Errorf("%w at %s", ErrMissing, loc.URI())
}

// decodeSnapshot decodes a snapshot; one with progress gets the actions of full (the snapshot
// that holds them) with that progress applied.
func decodeSnapshot(data, full []byte) (*Record, error) {
	var j Record
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	if j.Progress == nil {
		return &j, nil
	}
	var f struct {
		Actions []Entry `json:"actions"`
	}
	if err := json.Unmarshal(full, &f); err != nil {
		return nil, err
	}
	if err := j.Progress.applyTo(f.Actions); err != nil {
		return nil, err
	}
	j.Actions, j.Progress = f.Actions, nil
	return &j, nil
}

// MaxSnapshotBytes bounds one journal snapshot Read reads (1 GiB, or logformat.MaxFileBytes
// when CKPT_MAX_FILE_BYTES sets it higher): the first snapshot of a purge of a million files is
// about 400 MB, and a larger file is not a journal ckpt wrote.
var MaxSnapshotBytes int64 = 1 << 30

func readJournalFile(ctx context.Context, s storage.Store, p string) ([]byte, error) {
	return readCapped(ctx, s, p, max(MaxSnapshotBytes, logformat.MaxFileBytes))
}

// DirOf turns what a user passes to `ckpt repair undo|resume` into the repair directory:
// the directory itself, its journal/ directory, or one snapshot file in it.
func DirOf(arg string) string {
	a := strings.TrimRight(arg, "/")
	if strings.HasSuffix(a, ".json") {
		if i := strings.LastIndex(a, "/"); i >= 0 {
			a = a[:i]
		}
	}
	a = strings.TrimSuffix(a, "/journal")
	return a
}

// CheckpointOf returns the checkpoint a default repair directory belongs to
// (<checkpoint>/_ckpt/repairs/<id>), so a journal still finds its checkpoint after the whole
// directory was moved; ok is false for a directory elsewhere (--backup-dir).
func CheckpointOf(repairDir string) (string, bool) {
	a := strings.TrimRight(repairDir, "/")
	i := strings.LastIndex(a, "/")
	if i < 0 {
		return "", false
	}
	parent := a[:i]
	if parent == RepairsDir {
		return ".", true // run from inside the checkpoint
	}
	if !strings.HasSuffix(parent, "/"+RepairsDir) {
		return "", false
	}
	cp := strings.TrimSuffix(parent, "/"+RepairsDir)
	if cp == "" || strings.HasSuffix(cp, ":/") || strings.HasSuffix(cp, ":") {
		return "", false
	}
	return cp, true
}

// PlannerOptions are recovery.Options as the journal records them.
type PlannerOptions struct {
	Mode                recovery.Mode `json:"mode"`
	SparkVersion        string        `json:"sparkVersion"`
	CommitFormatVersion int           `json:"commitFormatVersion"`
	SinkLatest          *int64        `json:"sinkLatest"`
	// SinkKind is "delta" when SinkLatest is a Delta sink's txn version; omitted for a file sink.
	SinkKind string `json:"sinkKind,omitempty"`
}

func journalOptions(o recovery.Options) PlannerOptions {
	return PlannerOptions{Mode: o.Mode, SparkVersion: o.SparkVersion, CommitFormatVersion: o.CommitFormatVersion, SinkLatest: o.SinkLatest, SinkKind: o.SinkKind}
}

func (o PlannerOptions) planner() recovery.Options {
	return recovery.Options{Mode: o.Mode, SparkVersion: o.SparkVersion, CommitFormatVersion: o.CommitFormatVersion, SinkLatest: o.SinkLatest, SinkKind: o.SinkKind}
}
