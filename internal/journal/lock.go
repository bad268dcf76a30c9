package journal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
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
	// Running: the holder is a process on this host that is alive (or this process's own run).
	Running bool
	// Journal says whether the holder's journal exists: 1 yes, 0 no, -1 cannot tell (a
	// --backup-dir elsewhere). Only a journal that exists can be resumed or undone.
	Journal int
	// Self: the holder is the very repair being resumed or undone (another run of it).
	Self bool
}

// Error names the holder and only the ways out that work: wait for a running holder, resume or
// undo a journal that exists, --force when nothing on this host can tell.
func (e *LockedError) Error() string {
	h := e.Holder
	who := fmt.Sprintf("%s %s, host %s, pid %d, since %s", h.Op, h.ID, h.Host, h.PID, h.Acquired.Format(time.RFC3339))
	switch {
	case e.Running:
		return fmt.Sprintf("the checkpoint is locked by a ckpt that is running now (%s; journal %s): wait for it to finish", who, h.Journal)
	case e.Self:
		return fmt.Sprintf("this repair is held by another run of it (%s) on host %s, which ckpt cannot check from here: "+
			"if no ckpt runs there any more, --force takes the lock over", who, h.Host)
	case e.Journal == 1:
		return fmt.Sprintf("the checkpoint is locked by a ckpt repair that stopped (%s; journal %s).\n"+
			"Finish it with `ckpt repair resume %s` or revert it with `ckpt repair undo %s`. "+
			"If you are sure no ckpt is working on this checkpoint, --force takes the lock over",
			who, h.Journal, h.Journal, h.Journal)
	case e.Journal == 0:
		return fmt.Sprintf("the checkpoint is locked by ckpt (%s), which wrote no journal at %s: it stopped before changing anything, or is still starting on host %s. "+
			"If no ckpt is working on this checkpoint there, --force takes the lock over", who, h.Journal, h.Host)
	}
	return fmt.Sprintf("the checkpoint is locked by another ckpt repair (%s; journal %s).\n"+
		"If that process is still running, wait for it. If it stopped half-way and its journal exists, finish it with `ckpt repair resume %s` or revert it with `ckpt repair undo %s`. "+
		"If you are sure no ckpt is working on this checkpoint, --force takes the lock over",
		who, h.Journal, h.Journal, h.Journal)
}

// ReadLock returns the current lock, or nil when there is none.
func ReadLock(ctx context.Context, s storage.Store) (*Lock, error) {
	data, err := readFile(ctx, s, LockPath)
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

// lockPolicy says which held locks acquireLock may replace.
type lockPolicy struct {
	// force replaces any lock, with a warning.
	force bool
	// takeover replaces a lock with the same ID (the same repair, resumed or undone) once its
	// holder is known to be gone.
	takeover bool
	// journalAt finds the Location of a held lock's journal (nil: cannot tell).
	journalAt func(l Lock) (Location, bool)
}

// acquireLock creates the lock for me (me.Owner must be set). A held lock is replaced only when
// its holder is known to be gone from this host (a dead pid, or an Owner this process no longer
// runs) and either it is the same repair (policy.takeover) or it wrote no journal (a stale lock:
// the holder stopped before changing anything), or with policy.force. It returns a warning when
// it replaced someone else's lock, and the lock it replaced (nil when there was none).
func acquireLock(ctx context.Context, s storage.Store, me Lock, policy lockPolicy) (string, *Lock, error) {
	data, err := json.MarshalIndent(me, "", "  ")
	if err != nil {
		return "", nil, err
	}
	data = append(data, '\n')
	for attempt := 0; ; attempt++ {
		err := put(ctx, s, LockPath, data)
		if err == nil {
			running.Store(me.Owner, true)
			return "", nil, nil
		}
		if !errors.Is(err, fs.ErrExist) || attempt > 3 {
			return "", nil, fmt.Errorf("take the repair lock: %w", err)
		}
		raw, rerr := readFile(ctx, s, LockPath)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if rerr != nil {
			return "", nil, fmt.Errorf("read the repair lock: %w", rerr)
		}
		var held Lock
		perr := json.Unmarshal(raw, &held)
		var warn string
		switch {
		case perr != nil:
			if !policy.force {
				return "", nil, fmt.Errorf("unreadable repair lock %s: %v (--force replaces it)", LockPath, perr)
			}
			warn = "--force: took over the unreadable repair lock"
		default:
			lerr := describeLock(ctx, held, policy.journalAt)
			own := policy.takeover && held.ID == me.ID
			switch {
			case !lerr.Running && lerr.Holder.Host == hostname() && own:
				// Our own repair, continued after it stopped: the lock becomes ours, so that only
				// this process releases it.
			case !lerr.Running && lerr.Holder.Host == hostname() && lerr.Journal == 0:
				warn = fmt.Sprintf("took over a stale repair lock: %s %s (pid %d on this host) is gone and wrote no journal, so it changed nothing",
					held.Op, held.ID, held.PID)
			case policy.force:
				warn = fmt.Sprintf("--force: took over the repair lock held by %s %s (host %s, pid %d, since %s)",
					held.Op, held.ID, held.Host, held.PID, held.Acquired.Format(time.RFC3339))
			default:
				lerr.Self = own
				return "", nil, lerr
			}
		}
		ok, err := replaceLock(ctx, s, raw, data)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			continue // someone else replaced or released it meanwhile: look again
		}
		running.Store(me.Owner, true)
		if perr != nil {
			return warn, nil, nil
		}
		return warn, &held, nil
	}
}

// replaceLock replaces the lock whose bytes are old by mine. Stores have no compare-and-swap, so
// two processes replacing the same stale lock are serialised by a second lock, _ckpt/lock.takeover,
// created with the same atomic no-overwrite write: the one that creates it checks that the lock
// still has the old bytes, replaces it, and removes the marker. ok is false when the lock changed
// meanwhile (the caller looks again).
func replaceLock(ctx context.Context, s storage.Store, old, mine []byte) (bool, error) {
	marker := LockPath + ".takeover"
	if err := put(ctx, s, marker, mine); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("take the repair lock over: %w", err)
		}
		// A marker left by a process that died while taking over blocks nobody for long: it is
		// removed when its writer is gone, and the lock is looked at again.
		var l Lock
		if raw, rerr := readFile(ctx, s, marker); rerr == nil && json.Unmarshal(raw, &l) == nil && l.Host == hostname() && !holderAlive(l) {
			_ = del(ctx, s, marker)
			return false, nil
		}
		return false, errors.New("another ckpt is taking the repair lock over right now; try again")
	}
	defer func() { _ = del(context.WithoutCancel(ctx), s, marker) }()
	cur, err := readFile(ctx, s, LockPath)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !bytes.Equal(cur, old)) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the repair lock: %w", err)
	}
	if err := del(ctx, s, LockPath); err != nil {
		return false, fmt.Errorf("remove the repair lock: %w", err)
	}
	if err := put(ctx, s, LockPath, mine); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil // a new repair took it between the two: it is theirs
		}
		return false, fmt.Errorf("take the repair lock: %w", err)
	}
	return true, nil
}

// running holds the Owner of every lock a run of this process holds right now: the answer to
// "is the holder alive" when the holder is this process (tests, or one ckpt running two things).
var running sync.Map

// holderAlive reports whether the process that wrote l may still be running. Only a holder on
// this host can be checked; anything else counts as alive, the safe answer.
func holderAlive(l Lock) bool {
	if l.Host != hostname() || l.PID <= 0 {
		return true
	}
	if l.PID == os.Getpid() {
		_, ok := running.Load(l.Owner)
		return ok
	}
	return processAlive(l.PID)
}

// describeLock fills a LockedError for held: whether its holder runs, whether its journal exists.
func describeLock(ctx context.Context, held Lock, journalAt func(Lock) (Location, bool)) *LockedError {
	e := &LockedError{Holder: held, Running: held.Host == hostname() && holderAlive(held), Journal: -1}
	if journalAt != nil {
		if loc, ok := journalAt(held); ok {
			es, err := loc.Store.List(ctx, loc.journalDir())
			switch {
			case err == nil && len(es) > 0:
				e.Journal = 1
			case err == nil || errors.Is(err, fs.ErrNotExist):
				e.Journal = 0
			}
		}
	}
	return e
}

// journalFinder finds a lock's journal in the checkpoint's store (the default _ckpt/repairs) or
// under root (--backup-dir), by the location the lock records.
func journalFinder(s storage.Store, root *Location) func(Lock) (Location, bool) {
	return func(l Lock) (Location, bool) {
		cands := []Location{{Store: s}}
		if root != nil {
			cands = append(cands, *root)
		}
		for _, c := range cands {
			base := strings.TrimRight(c.URI(), "/") + "/"
			if rel, ok := strings.CutPrefix(l.Journal, base); ok && rel != "" && lexical(rel) == nil {
				return Location{Store: c.Store, Dir: storage.Join(c.Dir, rel)}, true
			}
		}
		return Location{}, false
	}
}

// DescribeLock reads the lock of the checkpoint in s and says who holds it: nil when there is
// none. backupRoot is --backup-dir (nil: the default), where the holder's journal may be.
func DescribeLock(ctx context.Context, s storage.Store, backupRoot *Location) (*LockedError, error) {
	l, err := ReadLock(ctx, s)
	if err != nil || l == nil {
		return nil, err
	}
	return describeLock(ctx, *l, journalFinder(s, backupRoot)), nil
}

// Warning is the plan-time line about a held lock: what --execute will do with it.
func (e *LockedError) Warning() string {
	if e.Stale() {
		h := e.Holder
		return fmt.Sprintf("a stale repair lock is left by %s %s (pid %d on this host is gone, and it wrote no journal): --execute takes it over", h.Op, h.ID, h.PID)
	}
	return e.Error()
}

// Stale reports whether the lock can be taken over without --force: its holder is gone from this
// host and wrote no journal.
func (e *LockedError) Stale() bool {
	return !e.Running && e.Holder.Host == hostname() && e.Journal == 0
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
	running.Delete(me.Owner)
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
