package repair

import (
	"fmt"
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
// and checksum files, and the root files) was modified less than window before now. It uses the
// listing's modification times (S3 LastModified), so it costs no extra request; on S3 that is the
// server's clock, so a skewed local clock shifts the window. ignore lists paths repair itself wrote
// (so undo right after a repair is not refused because of the repair's own files). window <= 0
// disables the check.
func CheckIdle(cp *checkpoint.Checkpoint, now time.Time, window time.Duration, ignore map[string]bool) error {
	if window <= 0 {
		return nil
	}
	var newest storage.Entry
	consider := func(es ...storage.Entry) {
		for _, e := range es {
			if e.IsDir || ignore[e.Path] || strings.HasPrefix(e.Path, Dir+"/") || e.Path == Dir {
				continue
			}
			if e.ModTime.After(newest.ModTime) {
				newest = e
			}
		}
	}
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		if l == nil {
			continue
		}
		for _, e := range l.Files {
			consider(e)
		}
		consider(l.Temps...)
		consider(l.Checksums...)
	}
	consider(cp.Root...)
	if newest.Path == "" {
		return nil
	}
	age := now.Sub(newest.ModTime)
	if age < window {
		return &LiveError{Path: newest.Path, Age: max(age, 0), Window: window}
	}
	return nil
}
