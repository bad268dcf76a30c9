package repair

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Lock is the content of _ckpt/lock: who holds the checkpoint for a repair.
//
// The lock is created with the store's atomic no-overwrite write (a hard link on local disk, a
// conditional PUT with If-None-Match on S3), so of two ckpt processes exactly one gets it. It is
// removed when the repair, undo or resume finishes, and when it fails before changing the
// checkpoint. It is deliberately kept when a repair stops half-way: the checkpoint is then in a
// state only that repair's journal explains, and the lock names the journal. `ckpt repair resume`
// or `undo` of that journal take the lock over (same ID); anything else is refused until then, or
// until --force. ckpt never expires a lock by age: a slow repair on S3 and a crashed one look the
// same from outside, and clocks differ between machines.
//
// Owner is unique to the process and the moment that took the lock, and a process removes the lock
// only when it still holds its Owner: a run that fails never removes a lock another run took.
type Lock struct {
	// ID is the repair's id; Journal is where its journal is.
	ID      string `json:"id"`
	Journal string `json:"journal"`
	// Op is what holds it: repair, undo or resume.
	Op       string    `json:"op"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Acquired time.Time `json:"acquired"`
	Tool     string    `json:"tool"`
	// Owner identifies the process that took the lock (host, pid, a nanosecond time and random
	// bits); empty in locks written before ckpt recorded it.
	Owner string `json:"owner,omitempty"`
}

// newOwner returns a lock owner no other process and no other acquisition has.
func newOwner() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return fmt.Sprintf("%s/%d/%d/%s", hostname(), os.Getpid(), time.Now().UnixNano(), hex.EncodeToString(b[:]))
}

// LockedError is returned when another repair holds the lock.
type LockedError struct {
	Holder Lock
}

// Error names the holder and the ways out (wait, resume or undo its journal, --force).
func (e *LockedError) Error() string {
	h := e.Holder
	return fmt.Sprintf("the checkpoint is locked by another ckpt repair (%s %s, host %s, pid %d, since %s; journal %s).\n"+
		"If that process is still running, wait for it. If it stopped half-way, finish it with `ckpt repair resume %s` or revert it with `ckpt repair undo %s`. "+
		"If you are sure no ckpt is working on this checkpoint, --force takes the lock over",
		h.Op, h.ID, h.Host, h.PID, h.Acquired.Format(time.RFC3339), h.Journal, h.Journal, h.Journal)
}

// ReadLock returns the current lock, or nil when there is none.
func ReadLock(ctx context.Context, s storage.Store) (*Lock, error) {
	data, err := s.ReadFile(ctx, LockPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		// A lock that does not parse is still a lock: someone created it.
		return &l, fmt.Errorf("unreadable repair lock %s: %w", LockPath, err)
	}
	return &l, nil
}

// acquireLock creates the lock for me (me.Owner must be set). With takeover, a lock with the same
// ID (the same repair, resumed or undone after a crash) is replaced by mine; another lock is an
// error unless force, which replaces it. It returns a warning when it replaced someone else's
// lock, and the lock it replaced (nil when there was none).
func acquireLock(ctx context.Context, s storage.Store, me Lock, force, takeover bool) (string, *Lock, error) {
	data, err := json.MarshalIndent(me, "", "  ")
	if err != nil {
		return "", nil, err
	}
	for attempt := 0; ; attempt++ {
		err := put(ctx, s, LockPath, append(data, '\n'))
		if err == nil {
			return "", nil, nil
		}
		if !errors.Is(err, fs.ErrExist) || attempt > 0 {
			return "", nil, fmt.Errorf("take the repair lock: %w", err)
		}
		held, rerr := ReadLock(ctx, s)
		if held == nil && rerr == nil {
			continue // released meanwhile
		}
		own := takeover && held != nil && rerr == nil && held.ID == me.ID
		if !own && !force {
			if rerr != nil {
				return "", nil, fmt.Errorf("%w (--force replaces it)", rerr)
			}
			return "", nil, &LockedError{Holder: *held}
		}
		if err := del(ctx, s, LockPath); err != nil {
			return "", nil, fmt.Errorf("remove the repair lock: %w", err)
		}
		warn := ""
		switch {
		case own:
			// Our own repair, continued after it stopped: the lock becomes ours, so that only
			// this process releases it.
		case held != nil && rerr == nil:
			warn = fmt.Sprintf("--force: took over the repair lock held by %s %s (host %s, pid %d, since %s)",
				held.Op, held.ID, held.Host, held.PID, held.Acquired.Format(time.RFC3339))
		default:
			warn = "--force: took over the repair lock"
		}
		if err := put(ctx, s, LockPath, append(data, '\n')); err != nil {
			return "", nil, fmt.Errorf("take the repair lock: %w", err)
		}
		if rerr != nil {
			held = nil
		}
		return warn, held, nil
	}
}

// releaseLock removes the lock if it is still mine: same ID and same Owner. A lock another
// process took (even for the same repair) is left alone.
func releaseLock(ctx context.Context, s storage.Store, me Lock) error {
	held, err := ReadLock(ctx, s)
	if err != nil || held == nil || held.ID != me.ID || held.Owner != me.Owner {
		return err
	}
	if err := del(ctx, s, LockPath); err != nil {
		return fmt.Errorf("release the repair lock: %w", err)
	}
	// With --backup-dir elsewhere the lock was all of _ckpt/; on local disk its empty directory
	// would stay behind in a checkpoint that is otherwise as it was.
	if es, err := s.List(ctx, Dir); err == nil && len(es) == 0 {
		_ = s.Delete(ctx, Dir)
	}
	return nil
}

// restoreLock puts the lock back as it was before me took it: prev (a lock me took over), or none.
// Best effort: a lock that is no longer mine is left alone.
func restoreLock(ctx context.Context, s storage.Store, me Lock, prev *Lock) {
	if prev == nil {
		_ = releaseLock(ctx, s, me)
		return
	}
	held, err := ReadLock(ctx, s)
	if err != nil || held == nil || held.ID != me.ID || held.Owner != me.Owner {
		return
	}
	data, err := json.MarshalIndent(prev, "", "  ")
	if err != nil {
		return
	}
	if del(ctx, s, LockPath) == nil {
		_ = put(ctx, s, LockPath, append(data, '\n'))
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
