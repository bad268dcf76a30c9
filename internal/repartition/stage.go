package repartition

import (
	"context"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Staged streams the new state files of another state change (`ckpt state edit`) as a
// repartition streams its own: each file compressed in the query's codec as it is written,
// hashed, given its Hadoop checksum where crc, written to journal.StagedPath(run, path) in
// stage (nil: nowhere, a dry run's digests only), and placed by a copy action, so that
// neither the plan nor the journal holds its bytes.
type Staged struct{ out *output }

// NewStaged starts the files of a change of the checkpoint in s; ov gets each copy as it is
// planned (the restart is predicted on it). reason says why each file is added.
func NewStaged(ctx context.Context, s storage.Store, ov *journal.Overlay, stage storage.Store, run, codec string, crc bool, reason func(string) string) *Staged {
	return &Staged{out: &output{ctx: ctx, s: s, stage: stage, run: run, codec: codec, ov: ov, crc: crc, reason: reason}}
}

// StateFile is a new delta, snapshot or changelog being written.
type StateFile struct{ f *newFile }

// Writer takes the file's records.
func (f *StateFile) Writer() *statefmt.FileWriter { return f.f.w }

// Create starts the state file at path (which must not exist).
func (s *Staged) Create(path string) (*StateFile, error) {
	f, err := s.out.create(path)
	if err != nil {
		return nil, err
	}
	return &StateFile{f}, nil
}

// Finish ends f and plans its copy (and its checksum's).
func (s *Staged) Finish(f *StateFile) error { return s.out.finish(f.f) }

// Actions are the copies planned so far, and their total size.
func (s *Staged) Actions() ([]journal.Action, int64) { return s.out.actions, s.out.bytes }

// Keep leaves the staged files for the journal to place (or the caller to remove).
func (s *Staged) Keep() { s.out.keep() }

// Abort removes what was staged unless Keep was called.
func (s *Staged) Abort() { s.out.abort() }
