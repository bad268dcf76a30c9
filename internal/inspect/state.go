package inspect

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// State providers, as told by file names: HDFSBackedStateStoreProvider writes N.delta and
// N.snapshot; RocksDBStateStoreProvider writes N.zip, N.changelog and SSTs/.
const (
	ProviderHDFS    = "hdfs"
	ProviderRocksDB = "rocksdb"
	ProviderUnknown = "unknown"
)

// DefaultStoreName is Spark's StateStoreId.DEFAULT_STORE_NAME: the store whose files sit directly
// in the partition directory.
const DefaultStoreName = "default"

// State is the inventory of state/: what is there, listed and never decoded.
type State struct {
	Operators []Operator `json:"operators"`
	// Files and Bytes count every file below state/.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Operator is state/<id>/.
type Operator struct {
	ID  int64  `json:"id"`
	Dir string `json:"dir"`
	// Name is the operator name from its metadata file ("stateStoreSave", "symmetricHashJoin",
	// "dedupe", ...); "" when there is none (Spark before 3.5 wrote none).
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// Partitions counts the partition directories.
	Partitions int `json:"partitions"`
	// Stores are the store names: "default", or a join's four stores.
	Stores []string `json:"stores"`
	// Versions is the range of state versions on disk (version = batch id + 1); nil when there
	// are no version files.
	Versions *VersionRange `json:"versions"`
	// UniqueIDs reports checkpoint format v2 file names (<version>_<uuid>.zip|.changelog).
	UniqueIDs bool `json:"uniqueIds"`
	// SSTs counts RocksDB SST files.
	SSTs  int   `json:"ssts"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Metadata is the operator metadata file; nil when there is none.
	Metadata *OperatorMetadata `json:"metadata"`
}

// VersionRange is the lowest and highest state version on disk.
type VersionRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// OperatorMetadata is state/<id>/_metadata/metadata, parsed.
type OperatorMetadata struct {
	File    string      `json:"file"`
	Version int         `json:"version"`
	Stores  []StoreInfo `json:"stores"`
	Problem *Problem    `json:"problem,omitempty"`
}

// StoreInfo is one store in operator metadata.
type StoreInfo struct {
	Name             string `json:"name"`
	Partitions       int    `json:"partitions"`
	NumColsPrefixKey int    `json:"numColsPrefixKey"`
}

type opAcc struct {
	op         Operator
	partitions map[string]bool
	stores     map[string]bool
	hdfs, rdb  bool
	metaV1     string
	metaV2     string
	metaV2ID   int64
}

// inventoryState groups the walk of state/ by operator, with one read per operator metadata
// file.
func inventoryState(ctx context.Context, store storage.Store, files []storage.Entry) (State, []Problem, error) {
	st := State{Operators: []Operator{}}
	ops := map[int64]*opAcc{}
	for _, e := range files {
		st.Files++
		st.Bytes += e.Size
		parts := strings.Split(e.Path, "/")
		if len(parts) < 3 || parts[0] != checkpoint.DirState {
			continue
		}
		id, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			continue
		}
		a := ops[id]
		if a == nil {
			a = &opAcc{op: Operator{ID: id, Dir: checkpoint.DirState + "/" + parts[1], Stores: []string{}}, partitions: map[string]bool{}, stores: map[string]bool{}}
			ops[id] = a
		}
		a.op.Files++
		a.op.Bytes += e.Size
		rest := parts[2:]
		if rest[0] == "_metadata" {
			// v1: _metadata/metadata; v2 (transformWithState): _metadata/metadata/v2/<batch>
			// or _metadata/v2/<batch>, one per batch, the newest current.
			switch {
			case len(rest) == 2 && rest[1] == "metadata":
				a.metaV1 = e.Path
			case len(rest) >= 3 && rest[len(rest)-2] == "v2":
				if n, err := strconv.ParseInt(rest[len(rest)-1], 10, 64); err == nil && (a.metaV2 == "" || n > a.metaV2ID) {
					a.metaV2, a.metaV2ID = e.Path, n
				}
			}
			continue
		}
		if _, err := strconv.Atoi(rest[0]); err != nil || len(rest) < 2 {
			continue // _stateSchema/ and other operator-level files
		}
		a.partitions[rest[0]] = true
		sub := rest[1:]
		storeName := DefaultStoreName
		switch sub[0] {
		case "_metadata", "logs":
			continue
		case "SSTs":
			a.op.SSTs++
			a.rdb = true
			continue
		}
		if len(sub) >= 2 {
			storeName = sub[0]
			sub = sub[1:]
			if sub[0] == "SSTs" {
				a.op.SSTs++
				a.rdb = true
				continue
			}
			if len(sub) != 1 {
				continue
			}
		}
		v, ext, unique, ok := parseStateFile(sub[0])
		if !ok {
			continue
		}
		a.stores[storeName] = true
		switch ext {
		case "delta", "snapshot":
			a.hdfs = true
		default:
			a.rdb = true
		}
		a.op.UniqueIDs = a.op.UniqueIDs || unique
		if a.op.Versions == nil {
			a.op.Versions = &VersionRange{Min: v, Max: v}
		} else {
			a.op.Versions.Min = min(a.op.Versions.Min, v)
			a.op.Versions.Max = max(a.op.Versions.Max, v)
		}
	}

	var problems []Problem
	ids := make([]int64, 0, len(ops))
	for id := range ops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := ops[id]
		a.op.Partitions = len(a.partitions)
		for s := range a.stores {
			a.op.Stores = append(a.op.Stores, s)
		}
		slices.Sort(a.op.Stores)
		switch {
		case a.rdb:
			a.op.Provider = ProviderRocksDB
		case a.hdfs:
			a.op.Provider = ProviderHDFS
		default:
			a.op.Provider = ProviderUnknown
		}
		metaFile := a.metaV1
		if a.metaV2 != "" {
			metaFile = a.metaV2
		}
		if metaFile != "" {
			m, name, err := readOperatorMetadata(ctx, store, metaFile)
			if err != nil {
				return st, nil, err
			}
			a.op.Metadata, a.op.Name = m, name
			if m != nil && m.Problem != nil {
				problems = append(problems, *m.Problem)
			}
		}
		st.Operators = append(st.Operators, a.op)
	}
	return st, problems, nil
}

// parseStateFile recognises <version>.delta|.snapshot|.zip|.changelog and the checkpoint v2
// form <version>_<uuid>.zip|.changelog.
func parseStateFile(name string) (version int64, ext string, unique, ok bool) {
	if strings.HasPrefix(name, ".") {
		return 0, "", false, false // .crc and .tmp: leftovers, counted elsewhere
	}
	stem, ext, found := strings.Cut(name, ".")
	if !found {
		return 0, "", false, false
	}
	switch ext {
	case "delta", "snapshot", "zip", "changelog":
	default:
		return 0, "", false, false
	}
	if v, _, cut := strings.Cut(stem, "_"); cut {
		stem, unique = v, true
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return 0, "", false, false
	}
	return n, ext, unique, true
}

// readOperatorMetadata reads one operator metadata file; a corrupt one comes back with its
// Problem set and no name.
func readOperatorMetadata(ctx context.Context, store storage.Store, file string) (*OperatorMetadata, string, error) {
	data, err := checkpoint.ReadCapped(ctx, store, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	m := &OperatorMetadata{File: file, Stores: []StoreInfo{}}
	om, err := logformat.ParseOperatorMetadata(file, data)
	if err != nil {
		if m.Problem = asProblem(err); m.Problem == nil {
			return nil, "", err
		}
		return m, "", nil
	}
	m.Version = om.Version
	for _, s := range om.Stores {
		m.Stores = append(m.Stores, StoreInfo{Name: s.StoreName, Partitions: s.NumPartitions, NumColsPrefixKey: s.NumColsPrefixKey})
	}
	return m, om.OperatorName, nil
}
