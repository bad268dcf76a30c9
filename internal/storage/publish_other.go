//go:build !linux

package storage

import (
	"errors"
	"io"
)

// publish gives the fsync'd temporary file tmp the name p unless p exists
// (fs.ErrExist), by a hard link; tmp is left for the caller to remove.
func publish(tmp, p string) (tmpLeft bool, err error) {
	return linkPublish(tmp, p)
}

// errNoUnnamed says that writeUnnamed cannot work here.
var errNoUnnamed = errors.New("no unnamed temporary files here")

// writeUnnamed is Linux's O_TMPFILE write; elsewhere WriteFile uses a named
// temporary file.
func writeUnnamed(dir, p string, fill func(io.Writer) error, others func()) error {
	return errNoUnnamed
}

// journalless is Linux's test for ext4 without a journal; elsewhere false.
func journalless(dir string) bool { return false }
