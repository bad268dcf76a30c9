package state

import (
	"context"
	"os"
	"runtime/debug"
)

// minSortShare is the least buffer a Sorter gives one partition, however many there are: a
// smaller one would spill runs of a few rows.
const minSortShare = 64 << 10

// SortOptions bound a Sorter's memory.
type SortOptions struct {
	// Budget is the bytes of rows held over every partition before they spill to sorted runs
	// (each partition holds an equal share, at least 64 KiB or the budget); <= 0: DefaultMemoryBudget.
	Budget int64
	// TempDir is where the temporary directory of the runs is made; "": os.TempDir().
	TempDir string
	// FanIn is how many runs are merged at once; < 2: the spilled read's (512).
	FanIn int
}

// Sorter sorts the rows of several partitions by key bytes within a memory budget, with the
// spilled read's machinery (spill.go): each partition's rows are held up to its share of the
// budget, then sorted into a run in a temporary directory; once every row is in, each
// partition's runs (and the rows still held) are merged as they are walked. A partition's walk
// can be repeated. A key added more than once to a partition comes out once (the last added):
// Added and the rows walked tell the caller.
type Sorter struct {
	ctx   context.Context
	dir   *spillDir
	parts []*spiller
	added []int64
}

// NewSorter makes a Sorter of parts partitions; its temporary directory is made at once and
// removed by Close.
func NewSorter(ctx context.Context, parts int, o SortOptions) (*Sorter, error) {
	if o.Budget <= 0 {
		o.Budget = DefaultMemoryBudget
	}
	if o.FanIn < 2 {
		o.FanIn = defaultFanIn
	}
	dir, err := newSpillDir(o.TempDir)
	if err != nil {
		return nil, err
	}
	share := rebuildOptions{Budget: max(o.Budget/int64(max(parts, 1)), min(minSortShare, o.Budget)), TempDir: o.TempDir, FanIn: o.FanIn}
	s := &Sorter{ctx: ctx, dir: dir, added: make([]int64, parts)}
	for range parts {
		s.parts = append(s.parts, newSpiller(ctx, dir, "sort", share, false))
	}
	return s, nil
}

// Add adds a row to partition part (its bytes are copied).
func (s *Sorter) Add(part int, key, value []byte) error {
	s.added[part]++
	return s.parts[part].add(key, value, false)
}

// Added is how many rows were added to part.
func (s *Sorter) Added(part int) int64 { return s.added[part] }

// Finish ends the adding: a partition that spilled writes what it holds as its last run; one
// that did not keeps its rows in memory, sorted. Every buffer of a spilled partition is let go
// before any merge is opened.
func (s *Sorter) Finish() error {
	spilled := false
	for _, p := range s.parts {
		sp, err := p.endBuffer()
		if err != nil {
			return err
		}
		spilled = spilled || sp
	}
	if spilled {
		debug.FreeOSMemory()
	}
	for _, p := range s.parts {
		if err := p.reduce(); err != nil {
			return err
		}
	}
	return nil
}

// Each walks the rows of part in ascending key order (after Finish). key and value hold until
// fn returns.
func (s *Sorter) Each(part int, fn func(key, value []byte) error) error {
	m, err := s.parts[part].merge()
	if err != nil {
		return err
	}
	defer m.close()
	for m.next() {
		if err := fn(m.key, m.value); err != nil {
			return err
		}
	}
	return m.err
}

// Release lets part's rows go once they are no longer walked: its runs are deleted, the rows
// held in memory dropped.
func (s *Sorter) Release(part int) {
	p := s.parts[part]
	for _, r := range p.runs {
		_ = os.Remove(r)
	}
	p.runs, p.buf, p.recs, p.spare = nil, nil, nil, nil
}

// Runs is how many sorted runs were written to disk (0: every row was held in memory).
func (s *Sorter) Runs() int { return s.dir.runs }

// Close removes the temporary directory.
func (s *Sorter) Close() error { return s.dir.remove() }
