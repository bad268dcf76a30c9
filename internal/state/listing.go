// Package state reads Spark state stores from a checkpoint: the listing behind `ckpt state ls`,
// the rows behind `ckpt state read` (streamed), and the chain checks doctor reports. Byte
// formats are statefmt's; this package finds the files, picks the ones a version needs the way
// Spark's providers do, and decodes rows with the stored schema.
package state

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Providers, as told by file names.
const (
	ProviderHDFS    = "hdfs"
	ProviderRocksDB = "rocksdb"
	ProviderUnknown = "unknown"
)

// DefaultStore is Spark's StateStoreId.DEFAULT_STORE_NAME: the store whose files sit directly in
// the partition directory.
const DefaultStore = "default"

// File kinds.
const (
	KindDelta     = "delta"
	KindSnapshot  = "snapshot"
	KindZip       = "zip"
	KindChangelog = "changelog"
)

// File is one versioned state file.
type File struct {
	Path    string `json:"path"`
	Version int64  `json:"version"`
	Kind    string `json:"kind"`
	// UniqueID is the checkpoint format v2 id in <version>_<uuid>.<ext>; "" in format v1.
	UniqueID string `json:"uniqueId,omitempty"`
	Size     int64  `json:"size"`
}

// Partition is state/<op>/<partition>/[<store>/].
type Partition struct {
	ID  int    `json:"id"`
	Dir string `json:"dir"`
	// Files are the version files, by version then kind.
	Files []File `json:"files"`
	// SSTs are the RocksDB SST files under SSTs/ by name, with their sizes.
	SSTs  map[string]int64 `json:"-"`
	Bytes int64            `json:"bytes"`
}

// Store is one store of an operator.
type Store struct {
	Name       string       `json:"name"`
	Provider   string       `json:"provider"`
	Partitions []*Partition `json:"-"`
	// SchemaFile is state/<op>/0/[<store>/]_metadata/schema when listed, else "".
	SchemaFile string `json:"schemaFile"`
}

// Operator is state/<op>/.
type Operator struct {
	ID  int64  `json:"id"`
	Dir string `json:"dir"`
	// MetadataFile is state/<op>/_metadata/metadata when listed (Spark 3.5+), else "".
	MetadataFile string `json:"metadataFile"`
	// SchemaV3Files are transformWithState's state/<op>/_stateSchema/... files.
	SchemaV3Files []string `json:"schemaV3Files,omitempty"`
	// MetadataV2Files are the v2 operator metadata files state/<op>/_metadata/v2/<batch>
	// (transformWithState), by name.
	MetadataV2Files []string `json:"metadataV2Files,omitempty"`
	Stores          []*Store `json:"-"`
	Bytes           int64    `json:"bytes"`
}

// Listing is what one walk of state/ shows.
type Listing struct {
	Operators []*Operator
}

// Operator returns the operator with id, or nil.
func (l *Listing) Operator(id int64) *Operator {
	for _, o := range l.Operators {
		if o.ID == id {
			return o
		}
	}
	return nil
}

// Store returns the store named name, or nil.
func (o *Operator) Store(name string) *Store {
	for _, s := range o.Stores {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Partition returns partition id, or nil.
func (s *Store) Partition(id int) *Partition {
	for _, p := range s.Partitions {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// Versions returns the lowest and highest version of any file of the store; ok is false when
// it has none.
func (s *Store) Versions() (lo, hi int64, ok bool) {
	for _, p := range s.Partitions {
		for _, f := range p.Files {
			if !ok {
				lo, hi, ok = f.Version, f.Version, true
			}
			lo, hi = min(lo, f.Version), max(hi, f.Version)
		}
	}
	return lo, hi, ok
}

// Scan walks state/ once and groups its files.
func Scan(ctx context.Context, st storage.Store) (*Listing, error) {
	entries, err := st.Walk(ctx, "state")
	if err != nil {
		return nil, err
	}
	return FromEntries(entries), nil
}

// FromEntries builds the listing from a walk of state/ (paths relative to the checkpoint).
func FromEntries(entries []storage.Entry) *Listing {
	ops := map[int64]*Operator{}
	stores := map[string]*Store{}
	parts := map[string]*Partition{}
	opFor := func(id int64, seg string) *Operator {
		o := ops[id]
		if o == nil {
			o = &Operator{ID: id, Dir: "state/" + seg}
			ops[id] = o
		}
		return o
	}
	storeFor := func(o *Operator, name string) *Store {
		k := strconv.FormatInt(o.ID, 10) + "/" + name
		s := stores[k]
		if s == nil {
			s = &Store{Name: name}
			stores[k] = s
			o.Stores = append(o.Stores, s)
		}
		return s
	}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		seg := strings.Split(e.Path, "/")
		if len(seg) < 3 || seg[0] != "state" {
			continue
		}
		id, err := strconv.ParseInt(seg[1], 10, 64)
		if err != nil || id < 0 {
			continue
		}
		o := opFor(id, seg[1])
		o.Bytes += e.Size
		rest := seg[2:]
		switch rest[0] {
		case "_metadata":
			if len(rest) == 2 && rest[1] == "metadata" {
				o.MetadataFile = e.Path
			} else if len(rest) == 3 && rest[1] == "v2" && !strings.HasPrefix(rest[2], ".") {
				o.MetadataV2Files = append(o.MetadataV2Files, e.Path)
			}
			continue
		case "_stateSchema":
			if !strings.HasPrefix(rest[len(rest)-1], ".") {
				o.SchemaV3Files = append(o.SchemaV3Files, e.Path)
			}
			continue
		}
		pid, err := strconv.Atoi(rest[0])
		if err != nil || pid < 0 || len(rest) < 2 {
			continue
		}
		sub := rest[1:]
		name := DefaultStore
		dir := strings.Join(seg[:3], "/")
		// A sub-directory that is not SSTs/, logs/ or _metadata/ is a named store (a join's).
		if len(sub) >= 2 && sub[0] != "SSTs" && sub[0] != "logs" && sub[0] != "_metadata" {
			name, sub, dir = sub[0], sub[1:], dir+"/"+sub[0]
		}
		s := storeFor(o, name)
		if sub[0] == "_metadata" {
			if len(sub) == 2 && sub[1] == "schema" && pid == 0 {
				s.SchemaFile = e.Path
			}
			continue
		}
		pk := strconv.FormatInt(o.ID, 10) + "/" + name + "/" + rest[0]
		p := parts[pk]
		if p == nil {
			p = &Partition{ID: pid, Dir: dir, SSTs: map[string]int64{}}
			parts[pk] = p
			s.Partitions = append(s.Partitions, p)
		}
		p.Bytes += e.Size
		if sub[0] == "SSTs" && len(sub) == 2 {
			p.SSTs[sub[1]] = e.Size
			continue
		}
		if len(sub) != 1 {
			continue
		}
		if f, ok := ParseFileName(sub[0]); ok {
			f.Path, f.Size = e.Path, e.Size
			p.Files = append(p.Files, f)
		}
	}
	l := &Listing{}
	for _, o := range ops {
		for _, s := range o.Stores {
			slices.SortFunc(s.Partitions, func(a, b *Partition) int { return a.ID - b.ID })
			s.Provider = ProviderUnknown
			for _, p := range s.Partitions {
				slices.SortFunc(p.Files, func(a, b File) int {
					if a.Version != b.Version {
						if a.Version < b.Version {
							return -1
						}
						return 1
					}
					return strings.Compare(a.Path, b.Path)
				})
				for _, f := range p.Files {
					switch f.Kind {
					case KindDelta, KindSnapshot:
						if s.Provider == ProviderUnknown {
							s.Provider = ProviderHDFS
						}
					default:
						s.Provider = ProviderRocksDB
					}
				}
				if len(p.SSTs) > 0 {
					s.Provider = ProviderRocksDB
				}
			}
		}
		slices.SortFunc(o.Stores, func(a, b *Store) int { return strings.Compare(a.Name, b.Name) })
		l.Operators = append(l.Operators, o)
	}
	slices.SortFunc(l.Operators, func(a, b *Operator) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return l
}

// ParseFileName recognises <version>.delta|.snapshot|.zip|.changelog and the checkpoint format
// v2 form <version>_<uuid>.<ext>.
func ParseFileName(name string) (File, bool) {
	if strings.HasPrefix(name, ".") {
		return File{}, false
	}
	stem, ext, ok := strings.Cut(name, ".")
	if !ok {
		return File{}, false
	}
	switch ext {
	case KindDelta, KindSnapshot, KindZip, KindChangelog:
	default:
		return File{}, false
	}
	var uid string
	if v, u, cut := strings.Cut(stem, "_"); cut {
		stem, uid = v, u
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return File{}, false
	}
	return File{Version: n, Kind: ext, UniqueID: uid}, true
}
