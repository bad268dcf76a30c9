package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/ckpt-dev/ckpt/internal/logformat"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Op is what an action does to one file.
type Op string

// The operations a repair performs. There is no "overwrite": stores never replace a file (Spark's
// createAtomic with overwriteIfPossible=false), and neither does repair.
const (
	// OpDelete removes Path (after the backup has a copy of it).
	OpDelete Op = "delete"
	// OpCopy creates Path with the bytes of From; Path must not exist.
	OpCopy Op = "copy"
	// OpWrite creates Path with Data, bytes ckpt computed (a new offsets file of `ckpt offsets
	// reset`); Path must not exist. The journal carries the bytes, so resume needs nothing else.
	OpWrite Op = "write"
	// OpReplace replaces Path, which must exist, with Data: a delete (after the backup has a
	// copy) and a create, since stores never overwrite. Between the two the file is absent, a
	// state Resume finishes and Undo reverts. Only `ckpt sink repair` uses it, for a damaged
	// compaction file of a file sink's log, whose name Spark reads exactly.
	OpReplace Op = "replace"
)

// Action is one change to one file.
type Action struct {
	Op Op `json:"op"`
	// Store is where Path is: "" the checkpoint, StoreSink the file sink's output directory
	// (`offsets reset --sink`, `rewind --sink`), so that one journal covers both halves.
	Store string `json:"store,omitempty"`
	// Path is the file changed, relative to the checkpoint root ("offsets/21").
	Path string `json:"path"`
	// From is the file whose bytes OpCopy writes; empty for deletes.
	From string `json:"from,omitempty"`
	// Data are the bytes OpWrite and OpReplace write (base64 in JSON); nil for other operations.
	Data []byte `json:"data,omitempty"`
	// Reason says why, in one sentence, for the plan's table.
	Reason string `json:"reason"`
	// Code is the doctor finding code this action answers.
	Code string `json:"code,omitempty"`
	// Before is the sha256 of Path when the plan was made (empty: the file did not exist), and
	// After the sha256 it has once the action is applied (empty: the file is gone). Apply
	// refuses when Path no longer has Before, and Undo and Resume tell from them which actions
	// were applied.
	Before Digest `json:"sha256Before"`
	After  Digest `json:"sha256After"`
	// Size is the size of the file the action removes or writes, in bytes.
	Size int64 `json:"size"`
}

// StoreSink is Action.Store for a file of the query's file sink output directory.
const StoreSink = "sink"

// Digest is the hex SHA-256 of a file's bytes. The empty Digest stands for "no file", and is null in
// JSON.
type Digest string

// Absent reports whether d stands for "no file".
func (d Digest) Absent() bool { return d == "" }

// Short is the first 12 hex digits, for messages.
func (d Digest) Short() string {
	if d == "" {
		return "(absent)"
	}
	if len(d) > 12 {
		return string(d[:12])
	}
	return string(d)
}

// MarshalJSON writes null for the absent digest.
func (d Digest) MarshalJSON() ([]byte, error) {
	if d == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(d))
}

// UnmarshalJSON reads null as the absent digest.
func (d *Digest) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = Digest(s)
	return nil
}

// DigestOf hashes data.
func DigestOf(data []byte) Digest {
	sum := sha256.Sum256(data)
	return Digest(hex.EncodeToString(sum[:]))
}

// readFile is every read repair makes of a checkpoint file, a backup, a sink log file or the lock
// (to plan, to digest, to back up): capped at logformat.MaxFileBytes (64 MiB; CKPT_MAX_FILE_BYTES
// raises it), so a damaged file of a 1 GiB line costs at most the cap, not gigabytes. Spark's
// files are far smaller.
func readFile(ctx context.Context, s storage.Store, p string) ([]byte, error) {
	return readCapped(ctx, s, p, logformat.MaxFileBytes)
}

// readCapped reads p whole, refusing (logformat.TooLarge) a file over limit after reading at most
// one byte more.
func readCapped(ctx context.Context, s storage.Store, p string, limit int64) ([]byte, error) {
	rc, err := s.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > limit {
		return nil, logformat.TooLarge(p, int64(len(data)))
	}
	return data, nil
}

// readDigest reads p and returns its bytes and digest; a missing file gives the absent digest and
// no error.
func readDigest(ctx context.Context, s storage.Store, p string) ([]byte, Digest, error) {
	data, err := readFile(ctx, s, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return data, DigestOf(data), nil
}

// put creates p with data. A store can fail after the write landed (an S3 PUT whose response was
// lost), so on any error it reads p back: if p holds exactly data, the write happened and put
// succeeds. Every write repair makes goes through put, which is what lets a repair continue past a
// lost acknowledgement instead of stopping half-way.
func put(ctx context.Context, s storage.Store, p string, data []byte) error {
	err := s.WriteFile(ctx, p, data)
	if err == nil {
		return nil
	}
	if got, rerr := readFile(ctx, s, p); rerr == nil && bytes.Equal(got, data) {
		return nil
	}
	return err
}

// del removes p, succeeding when p is gone afterwards whatever the store reported.
func del(ctx context.Context, s storage.Store, p string) error {
	err := s.Delete(ctx, p)
	if err == nil {
		return nil
	}
	if _, serr := s.Stat(ctx, p); errors.Is(serr, fs.ErrNotExist) {
		return nil
	}
	return err
}

// fill sets an action's digests and size from the overlay as it is before the action.
func fill(ctx context.Context, s storage.Store, a *Action) error {
	data, d, err := readDigest(ctx, s, a.Path)
	if err != nil {
		return err
	}
	a.Before = d
	switch a.Op {
	case OpDelete:
		if d.Absent() {
			return fmt.Errorf("repair: planned to delete %s, which does not exist", a.Path)
		}
		a.After, a.Size = "", int64(len(data))
	case OpCopy:
		if !d.Absent() {
			return fmt.Errorf("repair: planned to create %s, which exists", a.Path)
		}
		src, sd, err := readDigest(ctx, s, a.From)
		if err != nil {
			return err
		}
		if sd.Absent() {
			return fmt.Errorf("repair: planned to copy %s, which does not exist", a.From)
		}
		a.After, a.Size = sd, int64(len(src))
	case OpWrite:
		if !d.Absent() {
			return fmt.Errorf("repair: planned to create %s, which exists", a.Path)
		}
		a.After, a.Size = DigestOf(a.Data), int64(len(a.Data))
	case OpReplace:
		if d.Absent() {
			return fmt.Errorf("repair: planned to replace %s, which does not exist", a.Path)
		}
		a.After, a.Size = DigestOf(a.Data), int64(len(a.Data))
	}
	return nil
}

// Fill sets an action's digests and size from s as it is before the action: the planning step
// of callers that build their own actions (offsets reset, rewind).
func Fill(ctx context.Context, s storage.Store, a *Action) error { return fill(ctx, s, a) }
