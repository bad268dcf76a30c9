package state

import (
	"fmt"
)

// Chain is the files Spark's provider reads to load one version of one partition of a store:
// a base (an HDFS snapshot or a RocksDB zip; nil: start empty at version 0), then the deltas or
// changelogs after it, in order.
type Chain struct {
	Version int64  `json:"version"`
	Base    *File  `json:"base"`
	Steps   []File `json:"steps"`
}

// MissingError says which file a version needs and does not have.
type MissingError struct {
	// Dir is the partition (store) directory.
	Dir string
	// Version is the version asked for; Need the version whose file is missing.
	Version, Need int64
	// Path is the file Spark opens and does not find.
	Path string
	// Kind is the missing file's kind (delta, changelog).
	Kind string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s: version %d cannot be rebuilt: %s does not exist (no %s for version %d and no snapshot at or after it)", e.Dir, e.Version, e.Path, e.Kind, e.Need)
}

// IDs gives the checkpoint format v2 unique id of (version) for one partition of one store:
// the id commits/<version-1> records; ok false when unknown (format v1, or no such commit).
type IDs func(version int64) (id string, ok bool)

// pick returns the file of version v and kind among files, honouring the v2 unique id when ids
// knows it; nil when there is none.
func pick(files []File, v int64, kind string, ids IDs) *File {
	var want string
	var known bool
	if ids != nil {
		want, known = ids(v)
	}
	var found *File
	for i := range files {
		f := &files[i]
		if f.Version != v || f.Kind != kind {
			continue
		}
		if known && f.UniqueID != want {
			continue
		}
		if !known && f.UniqueID != "" && found != nil {
			// Several v2 files of one version and no commit to choose: the newest listed wins
			// in neither Spark nor here; keep the first and let the lineage check report it.
			continue
		}
		if found == nil {
			found = f
		}
	}
	return found
}

// ChainFor is the chain Spark's provider uses to load version v of partition p:
// HDFS-backed (HDFSBackedStateStoreProvider.loadMap): walking down from v, the first snapshot
// found is the base; every version above it needs its delta. RocksDB (RocksDB.load): the
// newest zip at or below v is the base; every version above it needs its changelog.
func ChainFor(p *Partition, provider string, v int64, ids IDs) (*Chain, error) {
	c := &Chain{Version: v, Steps: []File{}}
	if provider == ProviderRocksDB {
		var base int64
		for i := range p.Files {
			f := p.Files[i]
			if f.Kind == KindZip && f.Version <= v && f.Version > base {
				if g := pick(p.Files, f.Version, KindZip, ids); g != nil {
					base, c.Base = f.Version, g
				}
			}
		}
		for n := base + 1; n <= v; n++ {
			f := pick(p.Files, n, KindChangelog, ids)
			if f == nil {
				return nil, &MissingError{Dir: p.Dir, Version: v, Need: n, Path: fileName(p.Dir, n, KindChangelog, ids), Kind: KindChangelog}
			}
			c.Steps = append(c.Steps, *f)
		}
		return c, nil
	}
	var steps []File
	for n := v; n > 0; n-- {
		if f := pick(p.Files, n, KindSnapshot, nil); f != nil {
			c.Base = f
			break
		}
		f := pick(p.Files, n, KindDelta, nil)
		if f == nil {
			return nil, &MissingError{Dir: p.Dir, Version: v, Need: n, Path: fileName(p.Dir, n, KindDelta, nil), Kind: KindDelta}
		}
		steps = append(steps, *f)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		c.Steps = append(c.Steps, steps[i])
	}
	return c, nil
}

func fileName(dir string, v int64, kind string, ids IDs) string {
	if ids != nil {
		if id, ok := ids(v); ok {
			return fmt.Sprintf("%s/%d_%s.%s", dir, v, id, kind)
		}
	}
	return fmt.Sprintf("%s/%d.%s", dir, v, kind)
}
