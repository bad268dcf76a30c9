package inspect

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Leftovers are files an interrupted or careless process left behind. Spark ignores them when
// listing, but they confuse people and tools, and a stale .crc makes Hadoop's checksummed file
// system fail a later read of a rewritten file.
type Leftovers struct {
	// Temps are .tmp files of atomic writes that never got renamed (.N.<uuid>.tmp).
	Temps []Leftover `json:"tmp"`
	// OrphanCRCs are Hadoop checksum files .X.crc whose X is gone.
	OrphanCRCs []Leftover `json:"orphanCrc"`
}

// Leftover is one such file.
type Leftover struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// findLeftovers looks in the root, offsets/, commits/ (from the checkpoint's listings) and in the
// walks of sources/ and state/, without copying them: the batch files of offsets/ and commits/ can
// be neither temp nor checksum files, so only the logs' Temps, Checksums and Others are scanned,
// and a checksum's target is looked up where it would be. The log listings have names only
// (storage.ListNames), so the leftovers found there are stat'ed for their size.
func findLeftovers(ctx context.Context, cp *checkpoint.Checkpoint, sourceFiles, stateFiles []storage.Entry) (Leftovers, error) {
	lo := Leftovers{Temps: []Leftover{}, OrphanCRCs: []Leftover{}}
	for _, files := range [][]storage.Entry{cp.Root, sourceFiles, stateFiles} {
		scanLeftovers(&lo, files, func(p string) bool { return inSorted(files, p) })
	}
	sizedT, sizedC := len(lo.Temps), len(lo.OrphanCRCs)
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		lists := [][]storage.Entry{l.Temps, l.Checksums, l.Others}
		exists := func(p string) bool {
			if n := logformat.ParseName(path.Base(p)); n.Kind == logformat.NameBatch {
				if l.FilePath(n.Batch) == p {
					return true
				}
			}
			for _, es := range lists {
				if slices.ContainsFunc(es, func(e storage.Entry) bool { return e.Path == p }) {
					return true
				}
			}
			return false
		}
		for _, es := range lists {
			scanLeftovers(&lo, es, exists)
		}
	}
	for _, ls := range [][]Leftover{lo.Temps[sizedT:], lo.OrphanCRCs[sizedC:]} {
		for i := range ls {
			st, err := cp.Store.Stat(ctx, ls[i].Path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return Leftovers{}, err
			}
			ls[i].Size = st.Size
		}
	}
	byPath := func(a, b Leftover) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(lo.Temps, byPath)
	slices.SortFunc(lo.OrphanCRCs, byPath)
	return lo, nil
}

// inSorted reports whether the listing es, sorted by Path, has a file p.
func inSorted(es []storage.Entry, p string) bool {
	i, ok := slices.BinarySearchFunc(es, p, func(e storage.Entry, p string) int { return strings.Compare(e.Path, p) })
	return ok && !es[i].IsDir
}

// scanLeftovers adds the leftovers among files: anything ending in .tmp is a temp file; .X.crc
// whose sibling X does not exist is an orphan checksum. Directories are skipped.
func scanLeftovers(lo *Leftovers, files []storage.Entry, exists func(string) bool) {
	for _, e := range files {
		if e.IsDir {
			continue
		}
		dir, name := path.Split(e.Path)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			lo.Temps = append(lo.Temps, Leftover{Path: e.Path, Size: e.Size})
		case len(name) > len("..crc") && name[0] == '.' && strings.HasSuffix(name, ".crc"):
			if !exists(dir + name[1:len(name)-len(".crc")]) {
				lo.OrphanCRCs = append(lo.OrphanCRCs, Leftover{Path: e.Path, Size: e.Size})
			}
		}
	}
}
