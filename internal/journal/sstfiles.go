package journal

import (
	"fmt"
	"path"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// IsSSTFile reports whether p is an SST file of a RocksDB state store,
// state/<op>/<partition>[/<store>]/SSTs/<number>-<uuid>.sst, or Hadoop's checksum of one. A
// journal only creates them (`ckpt state repartition`): the versions of a store share its SST
// files, so repair never replaces or deletes one, and undo removes only those it created.
func IsSSTFile(p string) bool {
	if lexical(p) != nil {
		return false
	}
	parts := strings.Split(p, "/")
	if len(parts) < 5 || len(parts) > 6 || parts[0] != "state" || !digits(parts[1]) || !digits(parts[2]) || parts[len(parts)-2] != "SSTs" {
		return false
	}
	name := path.Base(p)
	if n, isCRC := strings.CutSuffix(name, ".crc"); isCRC {
		if !strings.HasPrefix(n, ".") {
			return false
		}
		name = n[1:]
	}
	stem, ok := strings.CutSuffix(name, ".sst")
	num, uid, hasUID := strings.Cut(stem, "-")
	return ok && hasUID && digits(num) && uid != "" && !strings.ContainsAny(uid, "./")
}

func confineSST(s storage.Store, p string, c *confinedDirs) error {
	if !IsSSTFile(p) {
		return fmt.Errorf("%w: %q is not a RocksDB SST file of a state store", ErrOutside, p)
	}
	if root, isLocal := localRoot(s); isLocal {
		return confineLocal(root, p, c)
	}
	return nil
}
