package repartition

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"os"
	"path"
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// planRocksStore is planStore for a RocksDB store, written as Spark 4.2.0's repartition writes
// one: for every new partition, version L+2 as a zip naming one new SST file under SSTs/. A
// RocksDB table holds its keys in order, so each new partition's rows are sorted first, within
// a memory budget (state.Sorter: sorted runs spilled to local temporary files and merged), then
// walked once: streamed to the stage as the SST file, which is named by what it holds once written.
func planRocksStore(ctx context.Context, cp *checkpoint.Checkpoint, l *state.Listing, lop *state.Operator, ls *state.Store, kind keyKind, p *Plan, out *output) (*Store, error) {
	st := &Store{Name: ls.Name, Provider: ls.Provider, RowsFrom: make([]int64, p.From), RowsTo: make([]int64, p.To)}
	budget := out.o.SortBudget
	if budget <= 0 {
		budget = DefaultSortBudget
	}
	sorter, err := state.NewSorter(ctx, p.To, state.SortOptions{Budget: budget, TempDir: out.o.TempDir, FanIn: out.o.sortFanIn})
	if err != nil {
		return nil, err
	}
	defer sorter.Close()
	err = eachRehashed(ctx, cp, l, lop, ls, kind, p, st, func(np int, key, value []byte) error {
		return sorter.Add(np, key, value)
	})
	if err != nil {
		return nil, err
	}
	line, err := rocksMetadataLine(ctx, cp, ls)
	if err != nil {
		return nil, err
	}
	if err := sorter.Finish(); err != nil {
		return nil, err
	}
	p.sortRuns += sorter.Runs()
	for np := range p.To {
		where := fmt.Sprintf("operator %d store %s new partition %d", lop.ID, ls.Name, np)
		dir := path.Join(lop.Dir, strconv.Itoa(np))
		if ls.Name != state.DefaultStore {
			dir = path.Join(dir, ls.Name)
		}
		// The SST file is named by its rows, known once written: it is staged under a
		// provisional name and renamed before it is committed, so its rows are walked once.
		f, err := out.createRaw(path.Join(dir, "SSTs", provisionalSST))
		if err != nil {
			return nil, err
		}
		name := newContentUUID(lop.ID, ls.Name, np, p.Version)
		v, err := writeSST(sorter, np, f, name, line, out.o.TempDir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if name.n != sorter.Added(np) {
			// A key is in one partition of a store: the same key twice is damaged state, not
			// something to choose a row of.
			return nil, fmt.Errorf("%s: %d of its %d rows have a key another row has: the state is damaged (each key is in one partition of a store)", where, sorter.Added(np)-name.n, sorter.Added(np))
		}
		if err := out.rename(f, path.Join(dir, "SSTs", v.SSTName)); err != nil {
			return nil, err
		}
		if err := out.finish(f); err != nil {
			return nil, err
		}
		sorter.Release(np)
		if err := out.whole(path.Join(dir, strconv.FormatInt(p.Version, 10)+".zip"), v.Zip); err != nil {
			return nil, err
		}
		st.Rows += st.RowsTo[np]
	}
	p.Rows += st.Rows
	return st, nil
}

// provisionalSST is the name a new SST file is staged under until its rows name it: never a
// name Spark or ckpt gives one (RocksDBSSTName's are <number>-<uuid>.sst).
const provisionalSST = "000008-unnamed.sst"

// writeSST streams new partition np's rows, in key order, to f as one SST file, its index
// past 1 MiB spilled to a temporary file in tempDir (a partition of gigabytes has an index of
// tens of megabytes), naming it by name as it goes, and returns the version.
func writeSST(sorter *state.Sorter, np int, f *newFile, name *contentUUID, line, tempDir string) (*statefmt.RocksDBVersion, error) {
	spill, err := os.CreateTemp(tempDir, "ckpt-sst-index-")
	if err != nil {
		return nil, fmt.Errorf("the SST file's index: %w", err)
	}
	defer func() {
		spill.Close()
		os.Remove(spill.Name())
	}()
	defer name.finish()
	w := statefmt.NewRocksDBWriterTo(f.buf, spill)
	err = sorter.Each(np, func(key, value []byte) error {
		name.add(key, value)
		return w.Put(key, value)
	})
	if err != nil {
		return nil, err
	}
	return w.Finish(name.uuid(), line)
}

// contentUUID names a new SST file by what it holds (a UUID-shaped digest of the store, the
// partition, the version and the rows in key order): the plan is the same on every run, and
// the name is new in the SSTs/ directory, whose other files have Spark's random UUIDs. n
// counts the rows added.
//
// The digest runs on its own goroutine, so that it overlaps the SST writer on another core:
// add copies each row's bytes into a slab, and a full slab goes to the hasher while the other
// slab fills (two slabs in all, hashSlab bytes each; the digest of the concatenated slabs is
// the digest of the rows written one by one).
type contentUUID struct {
	h        hash.Hash
	n        int64
	slabSize int
	slab     []byte
	full     chan []byte   // slabs to hash, in order; nil until the first slab fills
	free     chan []byte   // slabs hashed, to fill again
	done     chan struct{} // closed when the hasher has hashed every slab sent
	finished bool
}

// hashSlab is the size of each of the two slabs: big enough that a hand-over costs nothing
// next to hashing it, small next to the memory budget.
const hashSlab = 256 << 10

func newContentUUID(op int64, store string, part int, version int64) *contentUUID {
	return newContentUUIDSlab(op, store, part, version, hashSlab)
}

// newContentUUIDSlab is newContentUUID with slabs of slabSize bytes (tests use tiny ones).
func newContentUUIDSlab(op int64, store string, part int, version int64, slabSize int) *contentUUID {
	c := &contentUUID{h: sha256.New(), slabSize: slabSize, slab: make([]byte, 0, slabSize)}
	fmt.Fprintf(c.h, "%d\x00%s\x00%d\x00%d\x00", op, store, part, version)
	return c
}

// add adds the next row in key order.
func (c *contentUUID) add(key, value []byte) {
	c.slab = strconv.AppendInt(c.slab, int64(len(key)), 10)
	c.slab = append(c.slab, ':')
	c.slab = strconv.AppendInt(c.slab, int64(len(value)), 10)
	c.slab = append(c.slab, ':')
	c.slab = append(c.slab, key...)
	c.slab = append(c.slab, value...)
	c.n++
	if len(c.slab) >= c.slabSize {
		c.handOver()
	}
}

// handOver sends the full slab to the hasher (started on the first) and takes the other one.
func (c *contentUUID) handOver() {
	if c.full == nil {
		c.full = make(chan []byte, 1)
		c.free = make(chan []byte, 2)
		c.done = make(chan struct{})
		c.free <- make([]byte, 0, c.slabSize)
		go func() {
			defer close(c.done)
			for s := range c.full {
				c.h.Write(s)
				c.free <- s[:0]
			}
		}()
	}
	c.full <- c.slab
	c.slab = (<-c.free)[:0]
}

// finish hashes what is left and stops the hasher; it may be called again (writeSST calls it
// on every way out, so that no hasher outlives a failed write).
func (c *contentUUID) finish() {
	if c.finished {
		return
	}
	c.finished = true
	if c.full == nil {
		c.h.Write(c.slab)
		return
	}
	if len(c.slab) > 0 {
		c.full <- c.slab
	}
	close(c.full)
	<-c.done
}

// uuid is the name of the rows added; no row may be added after it.
func (c *contentUUID) uuid() string {
	c.finish()
	s := c.h.Sum(nil)
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
