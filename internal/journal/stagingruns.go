// Staging runs: who staged what, and which leftovers are safe to remove.

package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// StageOwner is the marker StagingDir/<run>.json a command writes before it stages a file
// (ClaimStaging) and removes when it ends: its staging is in progress from the first file to
// the journal, which takes the lock only then.
type StageOwner struct {
	Command string    `json:"command"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Tool    string    `json:"tool"`
	// Owner is unique to the process and the moment (the lock's Owner form).
	Owner string `json:"owner"`
}

// stageOwnerPath is where run's marker is.
func stageOwnerPath(run string) string { return StagingDir + "/" + run + ".json" }

// ClaimStaging writes run's marker (create-only) before anything is staged under it, and
// returns what removes it: call that once nothing will use the staged files any more (the
// journal done, undone, or never written; a journal stopped half-way holds the lock, which
// keeps them).
func ClaimStaging(ctx context.Context, s storage.Store, run, command, tool string) (func(), error) {
	o := StageOwner{Command: command, Host: hostname(), PID: os.Getpid(), Started: time.Now().UTC(), Tool: tool, Owner: newOwner()}
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := put(ctx, s, stageOwnerPath(run), append(data, '\n')); err != nil {
		return nil, fmt.Errorf("claim %s: %w", StagingDir+"/"+run, err)
	}
	running.Store(o.Owner, true)
	return func() {
		running.Delete(o.Owner)
		_ = del(context.WithoutCancel(ctx), s, stageOwnerPath(run))
		for _, d := range []string{StagingDir, Dir} { // what the run leaves empty
			if es, err := s.List(context.WithoutCancel(ctx), d); err == nil && len(es) == 0 {
				_ = s.Delete(context.WithoutCancel(ctx), d)
			}
		}
	}, nil
}

// StagingRun is one run's leftovers under StagingDir: its staged files, its marker, and
// whether they may go.
type StagingRun struct {
	Run string `json:"run"`
	// Files are the staged files (paths in the checkpoint's store), Bytes their size.
	Files []string `json:"files"`
	Bytes int64    `json:"bytes"`
	// Owner is the run's marker, nil when there is none (removed, or never written).
	Owner *StageOwner `json:"owner,omitempty"`
	// Keep says why the run must stay; "" when it is stale: no process that may be alive
	// stages into it, and no journal that may still place its files names it.
	Keep string `json:"keep,omitempty"`
}

// Stale reports whether r's files may be removed.
func (r StagingRun) Stale() bool { return r.Keep == "" }

// StagingRuns lists the runs under StagingDir of the checkpoint in s, each judged: kept while
// its marker's process may be alive (on this host, a live pid; on another host ckpt cannot tell),
// while the repair lock is held by a ckpt that runs or by a journal that exists, or while a
// journal under RepairsDir that is not done or undone places one of its files. nil when there
// is no staging directory.
func StagingRuns(ctx context.Context, s storage.Store) ([]StagingRun, error) {
	es, err := s.List(ctx, StagingDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	byRun := map[string]*StagingRun{}
	get := func(run string) *StagingRun {
		if byRun[run] == nil {
			byRun[run] = &StagingRun{Run: run, Files: []string{}}
		}
		return byRun[run]
	}
	for _, e := range es {
		name := path.Base(e.Path)
		if !e.IsDir {
			if run, ok := strings.CutSuffix(name, ".json"); ok {
				r := get(run)
				data, err := readFile(ctx, s, e.Path)
				var o StageOwner
				if err == nil && json.Unmarshal(data, &o) == nil {
					r.Owner = &o
				} else {
					r.Owner = &StageOwner{} // a marker that does not read: someone wrote it
				}
			}
			continue
		}
		r := get(name)
		files, err := s.Walk(ctx, e.Path)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if !f.IsDir {
				r.Files = append(r.Files, f.Path)
				r.Bytes += f.Size
			}
		}
	}
	runs := make([]StagingRun, 0, len(byRun))
	for _, r := range byRun {
		runs = append(runs, *r)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Run < runs[j].Run })

	lock, err := DescribeLock(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	var placing map[string]string
	for i := range runs {
		r := &runs[i]
		switch {
		case r.Owner != nil && stagerAlive(*r.Owner):
			where := "on this host"
			if r.Owner.Host != hostname() {
				where = "on host " + r.Owner.Host + ", which ckpt cannot check from here"
			}
			r.Keep = fmt.Sprintf("ckpt %s (pid %d %s, since %s) may still be staging into it", r.Owner.Command, r.Owner.PID, where, r.Owner.Started.Format(time.RFC3339))
		case lock != nil && !lock.Stale():
			r.Keep = "the checkpoint is locked by ckpt " + lock.Holder.Op + " " + lock.Holder.ID + " (journal " + lock.Holder.Journal + "), whose journal may place these files: let it finish, or resume or undo it"
		default:
			if placing == nil {
				if placing, err = journalsPlacing(ctx, s); err != nil {
					return nil, err
				}
			}
			if j, ok := placing[r.Run]; ok {
				r.Keep = "journal " + j + " places these files and is not done or undone: `ckpt repair resume` or `ckpt repair undo` it first"
			}
		}
	}
	return runs, nil
}

// stagerAlive reports whether the process of a staging marker may still be running: only a
// process on this host can be checked, anything else counts as alive.
func stagerAlive(o StageOwner) bool {
	return holderAlive(Lock{Host: o.Host, PID: o.PID, Owner: o.Owner})
}

// journalsPlacing maps each staging run to a journal under RepairsDir that copies from it and
// is neither done nor undone. A journal that does not read counts as placing every run it might
// name: it is reported by its directory for every run.
func journalsPlacing(ctx context.Context, s storage.Store) (map[string]string, error) {
	out := map[string]string{}
	es, err := s.List(ctx, RepairsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		if !e.IsDir {
			continue
		}
		loc := Location{Store: s, Dir: e.Path}
		j, err := Read(ctx, loc)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // no journal: nothing to place
			}
			return nil, fmt.Errorf("journal %s: %w (ckpt keeps every staged file until it reads)", loc.URI(), err)
		}
		if j.State == StateDone || j.State == StateUndone {
			continue
		}
		for _, a := range j.Actions {
			if a.Op != OpCopy {
				continue
			}
			if run, _, ok := strings.Cut(strings.TrimPrefix(a.From, StagingDir+"/"), "/"); ok && strings.HasPrefix(a.From, StagingDir+"/") {
				out[run] = loc.URI()
			}
		}
	}
	return out, nil
}

// RemoveStagingRun deletes a stale run's files, its marker and the directories they leave
// empty. It judges again first: a run that is no longer stale is refused.
func RemoveStagingRun(ctx context.Context, s storage.Store, run string) (StagingRun, error) {
	runs, err := StagingRuns(ctx, s)
	if err != nil {
		return StagingRun{}, err
	}
	for _, r := range runs {
		if r.Run != run {
			continue
		}
		if !r.Stale() {
			return r, fmt.Errorf("%s/%s stays: %s", StagingDir, run, r.Keep)
		}
		if err := RemoveStaged(ctx, s, r.Files); err != nil {
			return r, err
		}
		if r.Owner != nil {
			if err := del(ctx, s, stageOwnerPath(run)); err != nil {
				return r, err
			}
		}
		_ = s.Delete(ctx, StagingDir+"/"+run) // a directory left empty (local disk)
		if es, err := s.List(ctx, StagingDir); err == nil && len(es) == 0 {
			_ = s.Delete(ctx, StagingDir)
		}
		return r, nil
	}
	return StagingRun{}, fmt.Errorf("%s/%s: %w", StagingDir, run, fs.ErrNotExist)
}
