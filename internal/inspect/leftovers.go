package inspect

import (
	"path"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
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
// walks of sources/ and state/.
func findLeftovers(cp *checkpoint.Checkpoint, sourceFiles, stateFiles []storage.Entry) Leftovers {
	var all []storage.Entry
	for _, e := range cp.Root {
		if !e.IsDir {
			all = append(all, e)
		}
	}
	for _, l := range []*checkpoint.Log{cp.Offsets, cp.Commits} {
		for _, e := range l.Files {
			all = append(all, e)
		}
		all = append(all, l.Temps...)
		all = append(all, l.Checksums...)
		for _, e := range l.Others {
			if !e.IsDir {
				all = append(all, e)
			}
		}
	}
	all = append(all, sourceFiles...)
	all = append(all, stateFiles...)
	return scanLeftovers(all)
}

// scanLeftovers classifies files by name: anything ending in .tmp is a temp file; .X.crc whose
// sibling X is not among files is an orphan checksum.
func scanLeftovers(files []storage.Entry) Leftovers {
	exists := make(map[string]bool, len(files))
	for _, e := range files {
		exists[e.Path] = true
	}
	lo := Leftovers{Temps: []Leftover{}, OrphanCRCs: []Leftover{}}
	for _, e := range files {
		dir, name := path.Split(e.Path)
		switch {
		case strings.HasSuffix(name, ".tmp"):
			lo.Temps = append(lo.Temps, Leftover{Path: e.Path, Size: e.Size})
		case len(name) > len("..crc") && name[0] == '.' && strings.HasSuffix(name, ".crc"):
			target := dir + name[1:len(name)-len(".crc")]
			if !exists[target] {
				lo.OrphanCRCs = append(lo.OrphanCRCs, Leftover{Path: e.Path, Size: e.Size})
			}
		}
	}
	byPath := func(a, b Leftover) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(lo.Temps, byPath)
	slices.SortFunc(lo.OrphanCRCs, byPath)
	return lo
}
