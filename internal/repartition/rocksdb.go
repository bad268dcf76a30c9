package repartition

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path"
	"slices"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// planRocksStore is planStore for a RocksDB store, written as Spark 4.2.0's repartition writes
// one: for every new partition, version L+2 as a zip naming one new SST file under SSTs/. A
// RocksDB table holds its keys in order, so each new partition's rows are held in memory and
// sorted before they are written.
func planRocksStore(ctx context.Context, cp *checkpoint.Checkpoint, l *state.Listing, lop *state.Operator, ls *state.Store, kind keyKind, p *Plan, out *output) (*Store, error) {
	st := &Store{Name: ls.Name, Provider: ls.Provider, RowsFrom: make([]int64, p.From), RowsTo: make([]int64, p.To)}
	rows := make([][][2][]byte, p.To)
	err := eachRehashed(ctx, cp, l, lop, ls, kind, p, st, func(np int, key, value []byte) error {
		rows[np] = append(rows[np], [2][]byte{bytes.Clone(key), bytes.Clone(value)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	line, err := rocksMetadataLine(ctx, cp, ls)
	if err != nil {
		return nil, err
	}
	for np, rs := range rows {
		slices.SortFunc(rs, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
		w := statefmt.NewRocksDBWriter()
		for _, r := range rs {
			if err := w.Put(r[0], r[1]); err != nil {
				return nil, fmt.Errorf("operator %d store %s new partition %d: %w", lop.ID, ls.Name, np, err)
			}
		}
		rows[np] = nil
		v, err := w.Finish(contentUUID(lop.ID, ls.Name, np, p.Version, rs), line)
		if err != nil {
			return nil, err
		}
		dir := path.Join(lop.Dir, strconv.Itoa(np))
		if ls.Name != state.DefaultStore {
			dir = path.Join(dir, ls.Name)
		}
		for _, f := range []struct {
			name string
			data []byte
		}{{path.Join(dir, "SSTs", v.SSTName), v.SST}, {path.Join(dir, strconv.FormatInt(p.Version, 10)+".zip"), v.Zip}} {
			if err := out.whole(f.name, f.data); err != nil {
				return nil, err
			}
		}
		st.Rows += st.RowsTo[np]
	}
	p.Rows += st.Rows
	return st, nil
}

// contentUUID names a new SST file by what it holds (a UUID-shaped digest of the store, the
// partition, the version and the rows): the plan is the same on every run, and the name is
// new in the SSTs/ directory, whose other files have Spark's random UUIDs.
func contentUUID(op int64, store string, part int, version int64, rows [][2][]byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%d\x00%d\x00", op, store, part, version)
	for _, r := range rows {
		fmt.Fprintf(h, "%d:%d:", len(r[0]), len(r[1]))
		h.Write(r[0])
		h.Write(r[1])
	}
	s := h.Sum(nil)
	s[6] = s[6]&0x0f | 0x80 // not a random (version 4) UUID: a name-based one (version 8)
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// rocksMetadataLine picks the metadata fields of the release that wrote the store: Spark 4.0+
// writes column family fields (empty here), 3.5 does not; 4.x also reads 3.5's. The first zip
// of the store tells; a store with none gets 3.5's fields.
func rocksMetadataLine(ctx context.Context, cp *checkpoint.Checkpoint, ls *state.Store) (string, error) {
	for _, part := range ls.Partitions {
		for _, f := range part.Files {
			if f.Kind != state.KindZip {
				continue
			}
			data, err := cp.Store.ReadFile(ctx, f.Path)
			if err != nil {
				return "", err
			}
			m, err := statefmt.ParseRocksDBZip(f.Path, data)
			if err != nil {
				return "", err
			}
			if m.ColumnFamilyMapping != nil {
				return "4", nil
			}
			return "3.5", nil
		}
	}
	return "3.5", nil
}
