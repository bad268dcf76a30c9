package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// LogDir is the transaction log below a table's root.
const LogDir = "_delta_log"

// Checkpoint is one complete checkpoint of the log: every part of a multi-part checkpoint is
// present (Delta ignores an incomplete one).
type Checkpoint struct {
	Version int64    `json:"version"`
	Files   []string `json:"files"` // store paths
}

// Table is what ckpt read of one Delta table's log: listings and the newest metaData.
type Table struct {
	// Location is the table root as given.
	Location string `json:"location"`
	// Commits are the versions of the JSON commit files present, ascending.
	Commits []int64 `json:"-"`
	// Checkpoints are the complete checkpoints present, ascending.
	Checkpoints []Checkpoint `json:"-"`
	// LastCheckpoint is _last_checkpoint; nil when absent.
	LastCheckpoint *LastCheckpoint `json:"lastCheckpoint,omitempty"`
	// Latest is the newest version (commit or checkpoint); -1 for an empty or missing log.
	Latest int64 `json:"latestVersion"`
	// EarliestCommit is the oldest JSON commit present; -1 without one.
	EarliestCommit int64 `json:"earliestCommit"`
	// ID is the table id of the newest metaData action; "" when none was found.
	ID string `json:"id"`
	// IDVersion is the version (commit, or checkpoint) ID was read from.
	IDVersion int64 `json:"idVersion"`

	store storage.Store
}

// ErrNoLog is returned when the location holds no _delta_log with a commit or checkpoint.
var ErrNoLog = errors.New("no Delta table: _delta_log holds no commit or checkpoint")

// Read lists the table's _delta_log and reads the newest metaData: the commits after the newest
// checkpoint, newest first, then that checkpoint.
func Read(ctx context.Context, s storage.Store, location string) (*Table, error) {
	entries, err := storage.ListNames(ctx, s, LogDir)
	if err != nil {
		return nil, err
	}
	t := &Table{Location: location, Latest: -1, EarliestCommit: -1, IDVersion: -1, store: s}
	parts := map[int64]map[int][]string{} // version -> parts count -> files
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		name := path.Base(e.Path)
		if name == "_last_checkpoint" {
			data, err := s.ReadFile(ctx, e.Path)
			if err != nil {
				return nil, err
			}
			if t.LastCheckpoint, err = ParseLastCheckpoint(e.Path, data); err != nil {
				return nil, err
			}
			continue
		}
		n := ParseName(name)
		switch n.Kind {
		case NameCommit:
			t.Commits = append(t.Commits, n.Version)
		case NameCheckpoint:
			k := n.Parts
			if k == 0 {
				k = 1
			}
			if parts[n.Version] == nil {
				parts[n.Version] = map[int][]string{}
			}
			parts[n.Version][k] = append(parts[n.Version][k], e.Path)
		}
	}
	slices.Sort(t.Commits)
	for v, byCount := range parts {
		for k, files := range byCount {
			if len(files) == k {
				slices.Sort(files)
				t.Checkpoints = append(t.Checkpoints, Checkpoint{Version: v, Files: files})
				break
			}
		}
	}
	slices.SortFunc(t.Checkpoints, func(a, b Checkpoint) int { return int(a.Version - b.Version) })
	if n := len(t.Commits); n > 0 {
		t.EarliestCommit, t.Latest = t.Commits[0], t.Commits[n-1]
	}
	if n := len(t.Checkpoints); n > 0 {
		t.Latest = max(t.Latest, t.Checkpoints[n-1].Version)
	}
	if t.Latest < 0 {
		return nil, fmt.Errorf("%s: %w", location, ErrNoLog)
	}
	err = t.walk(ctx, func(v int64, c *Commit) bool {
		if c.Metadata != nil {
			t.ID, t.IDVersion = c.Metadata.ID, v
			return true
		}
		return false
	}, func(v int64, r *checkpointActions) bool {
		if r.metadataID != "" {
			t.ID, t.IDVersion = r.metadataID, v
			return true
		}
		return false
	})
	return t, err
}

// walk visits the commits from the newest down to the newest checkpoint (exclusive), then that
// checkpoint; it stops when a visitor returns true. Without a checkpoint it visits every commit.
func (t *Table) walk(ctx context.Context, commit func(int64, *Commit) bool, ckpt func(int64, *checkpointActions) bool) error {
	var cp *Checkpoint
	if n := len(t.Checkpoints); n > 0 {
		cp = &t.Checkpoints[n-1]
	}
	for i := len(t.Commits) - 1; i >= 0; i-- {
		v := t.Commits[i]
		if cp != nil && v <= cp.Version {
			break
		}
		p := LogDir + "/" + CommitName(v)
		data, err := t.store.ReadFile(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // cleaned up since the listing
		}
		if err != nil {
			return err
		}
		c, err := ParseCommit(p, data)
		if err != nil {
			return err
		}
		if commit(v, c) {
			return nil
		}
	}
	if cp == nil {
		return nil
	}
	r, err := readCheckpoint(ctx, t.store, cp.Files)
	if err != nil {
		return err
	}
	ckpt(cp.Version, r)
	return nil
}

// SinkTxn is the Delta sink's record for one query: the newest txn action with its appId.
type SinkTxn struct {
	AppID string `json:"appId"`
	// Version is the latest batch id the sink committed for the query; -1 when the log has no
	// txn for it (the sink never committed a batch of this query).
	Version int64 `json:"version"`
	// TableVersion is the commit (or checkpoint) version the txn was read from; -1 without one.
	TableVersion int64 `json:"tableVersion"`
}

// Txn finds the newest txn action for appID (a streaming query's id, as the Delta sink writes it).
func (t *Table) Txn(ctx context.Context, appID string) (*SinkTxn, error) {
	out := &SinkTxn{AppID: appID, Version: -1, TableVersion: -1}
	err := t.walk(ctx, func(v int64, c *Commit) bool {
		for i := len(c.Txns) - 1; i >= 0; i-- {
			if c.Txns[i].AppID == appID {
				out.Version, out.TableVersion = c.Txns[i].Version, v
				return true
			}
		}
		return false
	}, func(v int64, r *checkpointActions) bool {
		if tv, ok := r.txns[appID]; ok {
			out.Version, out.TableVersion = tv, v
			return true
		}
		return false
	})
	return out, err
}

// FirstCommitAtOrAfter is the oldest JSON commit whose version is v or more: the first file
// DeltaLog.getChanges(v) lists.
func (t *Table) FirstCommitAtOrAfter(v int64) (int64, bool) {
	i, _ := slices.BinarySearch(t.Commits, v)
	if i == len(t.Commits) {
		return 0, false
	}
	return t.Commits[i], true
}

// HasCommit reports whether the JSON commit of version v is present.
func (t *Table) HasCommit(v int64) bool {
	_, ok := slices.BinarySearch(t.Commits, v)
	return ok
}

// Reconstructable reports whether the snapshot at version v can be built from the files present:
// a checkpoint at c <= v with every commit c+1..v, or every commit 0..v.
func (t *Table) Reconstructable(v int64) bool {
	if v < 0 || v > t.Latest {
		return false
	}
	from := int64(0)
	for i := len(t.Checkpoints) - 1; i >= 0; i-- {
		if c := t.Checkpoints[i].Version; c <= v {
			from = c + 1
			break
		}
	}
	if from > v {
		return true
	}
	// Commits are unique and sorted: from..v are all present when the slice between them has
	// exactly v-from+1 entries.
	i, okFrom := slices.BinarySearch(t.Commits, from)
	j, okTo := slices.BinarySearch(t.Commits, v)
	return okFrom && okTo && int64(j-i) == v-from
}
