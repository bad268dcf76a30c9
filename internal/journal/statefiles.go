package journal

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// stateSuffixes are the versioned files of the state stores: HDFSBackedStateStoreProvider's
// <v>.delta and <v>.snapshot, RocksDBStateStoreProvider's <v>.zip and <v>.changelog. With
// checkpoint format v2 (Spark 4.0) the version carries the store's unique id: <v>_<uuid>.zip.
var stateSuffixes = []string{".delta", ".snapshot", ".zip", ".changelog"}

// StateVersion parses the version of a state store file path (state/<op>/<partition>[/<store>]/
// <name>, with Hadoop's ".<name>.crc" checksum counted as its file's); ok is false for any other
// path, including the stores' shared SST files and their metadata, which no rewind touches.
func StateVersion(p string) (version int64, ok bool) {
	if lexical(p) != nil {
		return 0, false
	}
	parts := strings.Split(p, "/")
	// state/<op>/<partition>/<file> or state/<op>/<partition>/<store>/<file>.
	if len(parts) < 4 || len(parts) > 5 || parts[0] != "state" || !digits(parts[1]) || !digits(parts[2]) {
		return 0, false
	}
	name := path.Base(p)
	if n, isCRC := strings.CutSuffix(name, ".crc"); isCRC {
		if !strings.HasPrefix(n, ".") {
			return 0, false
		}
		name = n[1:]
	}
	for _, suf := range stateSuffixes {
		stem, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		if v, uid, hasUID := strings.Cut(stem, "_"); hasUID {
			if uid == "" || strings.ContainsAny(uid, "_.") {
				return 0, false
			}
			stem = v
		}
		if !digits(stem) {
			return 0, false
		}
		n, err := strconv.ParseInt(stem, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// IsStateFile reports whether p is a versioned state store file (StateVersion).
func IsStateFile(p string) bool {
	_, ok := StateVersion(p)
	return ok
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// confineState is Confine for the one kind of state file a journal may delete: a versioned state
// store file (StateVersion), never through a symbolic link on local disk.
func confineState(s storage.Store, p string, c *confinedDirs) error {
	if !IsStateFile(p) {
		return fmt.Errorf("%w: %q is not a state store version file", ErrOutside, p)
	}
	if root, isLocal := localRoot(s); isLocal {
		return confineLocal(root, p, c)
	}
	return nil
}

// IsSinkLogFile reports whether p is a batch file of a file sink's log, _spark_metadata/<n> or
// _spark_metadata/<n>.compact, or the Hadoop checksum of one: the files `ckpt rewind --sink`
// moves into the backup of the sink's own journal.
func IsSinkLogFile(p string) bool {
	if lexical(p) != nil {
		return false
	}
	dir, name := path.Split(p)
	if dir != sinklog.Dir+"/" {
		return false
	}
	if n, isCRC := strings.CutSuffix(name, ".crc"); isCRC {
		if !strings.HasPrefix(n, ".") {
			return false
		}
		name = n[1:]
	}
	return digits(strings.TrimSuffix(name, ".compact"))
}

func confineSinkLog(s storage.Store, p string, c *confinedDirs) error {
	if !IsSinkLogFile(p) {
		return fmt.Errorf("%w: %q is not a file sink log file", ErrOutside, p)
	}
	if root, isLocal := localRoot(s); isLocal {
		return confineLocal(root, p, c)
	}
	return nil
}
