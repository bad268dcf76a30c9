package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// DefaultActiveWindow is --active-window's default: a log file younger than this means the query
// may be running. Spark writes offsets/ and commits/ files at every micro-batch, and a trigger
// interval above a minute is rare; a stopped query is normally repaired long after that.
const DefaultActiveWindow = 2 * time.Minute

// LiveError is returned when the checkpoint looks in use by a running query.
type LiveError struct {
	// Path is the newest log file and Age how old it is.
	Path   string
	Age    time.Duration
	Window time.Duration
}

// Error names the newest file and its age, and the ways out.
func (e *LiveError) Error() string {
	return fmt.Sprintf("the query looks alive: %s was written %s ago, within --active-window %s.\n"+
		"Stop the query first (a repair under a running query races its writes), wait, or pass --force if you are sure it is stopped",
		e.Path, e.Age.Round(time.Second), e.Window)
}

// CheckIdle returns a *LiveError when a log file of cp (offsets/, commits/, including temporary
// and checksum files, and the root files) was modified less than window before now. A running
// query writes the newest batch files, so only those are considered: the two newest of each log
// with their checksum files, every temporary file, and the root listing's files. The log
// listings carry no times (storage.ListNames), so these few are stat'ed (S3: LastModified, the
// server's clock, so a skewed local clock shifts the window). ignore lists paths repair itself
// wrote (so undo right after a repair is not refused because of the repair's own files).
// window <= 0 disables the check.
func CheckIdle(ctx context.Context, cp *checkpoint.Checkpoint, now time.Time, window time.Duration, ignore map[string]bool) error {
	if window <= 0 {
		return nil
	}
	recent, err := recentFiles(ctx, cp)
	if err != nil {
		return err
	}
	var newest storage.Entry
	for _, e := range recent {
		if e.IsDir || ignore[e.Path] || strings.HasPrefix(e.Path, Dir+"/") || e.Path == Dir {
			continue
		}
		if e.ModTime.After(newest.ModTime) {
			newest = e
		}
	}
	if newest.Path == "" {
		return nil
	}
	age := now.Sub(newest.ModTime)
	if age < window {
		return &LiveError{Path: newest.Path, Age: max(age, 0), Window: window}
	}
	return nil
}

// recentFiles are the files whose modification time tells whether a query is writing: the two
// newest batch files of offsets/ and commits/ with their checksum files, the temp files (stat'ed:
// the listings carry no times) and the root's entries (from its listing, which does).
func recentFiles(ctx context.Context, cp *checkpoint.Checkpoint) ([]storage.Entry, error) {
	var out []storage.Entry
	stat := func(es ...storage.Entry) error {
		for _, e := range es {
			if e.IsDir {
				continue
			}
			st, err := cp.Store.Stat(ctx, e.Path)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since the listing
				}
				return err
			}
			out = append(out, st)
		}
		return nil
	}
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		if l == nil {
			continue
		}
		for _, id := range l.IDs()[max(len(l.IDs())-2, 0):] {
			e, _ := l.File(id)
			es := []storage.Entry{e}
			if crc, ok := l.ChecksumFor(path.Base(e.Path)); ok {
				es = append(es, crc)
			}
			if err := stat(es...); err != nil {
				return nil, err
			}
		}
		if err := stat(l.Temps...); err != nil {
			return nil, err
		}
	}
	return append(out, cp.Root...), nil
}

// checkIdleOwn is CheckLive for a new repair, which knows ckpt's own writes: a file a journal says
// ckpt wrote (a copy, or a restore by undo), still with the modification time it had then, is not a
// sign of a running query. Journals are read only when the plain check fails, from the checkpoint's
// _ckpt/repairs and from backupRoot (--backup-dir) when set; a journal elsewhere is not seen.
func checkIdleOwn(ctx context.Context, s storage.Store, cp *checkpoint.Checkpoint, now time.Time, window time.Duration, backupRoot *Location) error {
	err := CheckLive(ctx, s, cp, now, window, nil)
	var live *LiveError
	if !errors.As(err, &live) {
		return err
	}
	own := ownWrites(ctx, s, backupRoot)
	if len(own) == 0 {
		return err
	}
	recent, rerr := recentFiles(ctx, cp)
	if rerr != nil {
		return err
	}
	ignore := map[string]bool{}
	for _, e := range recent {
		if own[writeKey{e.Path, e.ModTime.UnixNano()}] {
			ignore[e.Path] = true
		}
	}
	return CheckLive(ctx, s, cp, now, window, ignore)
}

type writeKey struct {
	path string
	mod  int64 // UnixNano
}

// ownWrites lists the files the journals of this checkpoint say ckpt wrote, with the modification
// time each had right after. Unreadable journals are skipped: at worst the check stays strict.
func ownWrites(ctx context.Context, s storage.Store, backupRoot *Location) map[writeKey]bool {
	roots := []Location{{Store: s, Dir: RepairsDir}}
	if backupRoot != nil {
		roots = append(roots, *backupRoot)
	}
	me := absoluteURI(s)
	out := map[writeKey]bool{}
	for _, root := range roots {
		dirs, err := root.Store.List(ctx, root.Dir)
		if err != nil {
			continue
		}
		for _, d := range dirs {
			if !d.IsDir {
				continue
			}
			j, err := Read(ctx, Location{Store: root.Store, Dir: d.Path})
			if err != nil || j.Checkpoint != me {
				continue
			}
			for _, a := range j.Actions {
				if a.Written != nil {
					out[writeKey{a.Path, a.Written.UnixNano()}] = true
				}
			}
		}
	}
	return out
}
