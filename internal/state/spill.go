package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"

	"github.com/klauspost/compress/s2"
)

// DefaultMemoryBudget is how many bytes of the deltas or changelogs after a version's base a
// read holds in memory before it spills them to sorted runs on disk: with the runtime, the
// 64 KiB output block and the decompression buffers, `ckpt state read` stays within 64 MB of
// RSS (docs/benchmarks.md, "State reads bounded").
const DefaultMemoryBudget = 8 << 20

const (
	// mapEntryBytes is what a held record costs beyond its key and value bytes: the map
	// entry, the string and slice headers, allocation rounding (measured: about 80).
	mapEntryBytes = 80
	// spillRecBytes is a record's index entry in the spill buffer.
	spillRecBytes = 24
	// defaultFanIn is how many runs are merged at once: 512 readers of a block of 16 KiB
	// (about 9 MiB, taken when the spill buffer has been let go). A 1 GB delta at the default
	// budget is about 330 runs: merged in one pass, none of them merged first (that rewrote
	// a fifth of the records, 12% of the CPU time).
	defaultFanIn   = 512
	runBlock       = 16 << 10
	runWriteBuffer = 64 << 10
	// ctxEvery is how many records pass between checks of the context.
	ctxEvery = 1 << 14
)

// rebuildOptions bound a rebuild's memory.
type rebuildOptions struct {
	// Budget is the bytes of records held before spilling; <= 0: DefaultMemoryBudget.
	Budget int64
	// TempDir is where the temporary directory of the runs is made; "": os.TempDir().
	TempDir string
	// FanIn is how many runs are merged at once; < 2: defaultFanIn.
	FanIn int
}

// rebuildStats say how a rebuild went (tests and benchmarks read them).
type rebuildStats struct {
	// Runs is the number of sorted runs written (0: everything fitted in memory).
	Runs int
	// Dir is the temporary directory the runs were in (removed when rebuild returns).
	Dir string
}

// baseSource streams a version's base rows (a snapshot's, or a zip's SST files') to fn, in
// the same order each time it is called.
type baseSource func(fn func(key, value []byte) error) error

// stepSource streams the records of the deltas or changelogs after the base, oldest first.
type stepSource func(fn func(key, value []byte, del bool) error) error

// rebuild emits the rows of a version: first the base rows whose key no step record names, in
// the base's order, then the keys whose latest step record is a put, sorted by key bytes (a
// key a step removed is gone). The order is the same whether the records fit in the budget
// (a map) or not (sorted runs in a temporary directory, merged): it depends on neither memory
// nor a hash seed. base may be nil (no base: version 0 and the deltas after it). The
// temporary directory is removed before rebuild returns, whatever the outcome.
func rebuild(ctx context.Context, o rebuildOptions, base baseSource, steps stepSource, emit func(key, value []byte) error) (stats rebuildStats, err error) {
	if o.Budget <= 0 {
		o.Budget = DefaultMemoryBudget
	}
	if o.FanIn < 2 {
		o.FanIn = defaultFanIn
	}
	pending := map[string][]byte{}
	var used int64
	var tmp *spillDir
	var deltas *spiller
	defer func() {
		if tmp != nil {
			stats.Runs, stats.Dir = tmp.runs, tmp.dir
			if cerr := tmp.remove(); err == nil {
				err = cerr
			}
		}
	}()
	n := 0
	err = steps(func(key, value []byte, del bool) error {
		if n++; n%ctxEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if deltas != nil {
			return deltas.add(key, value, del)
		}
		if old, ok := pending[string(key)]; ok {
			used += int64(len(value) - len(old))
		} else {
			used += int64(len(key)+len(value)) + mapEntryBytes
		}
		if del {
			pending[string(key)] = nil
		} else {
			pending[string(key)] = slices.Clone(value)
		}
		if used <= o.Budget {
			return nil
		}
		// Over the budget: the map becomes the first run, and every later record goes
		// through the spill buffer.
		var err error
		if tmp, err = newSpillDir(o.TempDir); err != nil {
			return err
		}
		deltas = newSpiller(ctx, tmp, "delta", o, base != nil)
		err = deltas.dumpMap(pending)
		// The map's memory is given back before the spill buffer takes as much: without
		// this collection the two would be live together (twice the budget, measured).
		pending = nil
		debug.FreeOSMemory()
		return err
	})
	if err != nil {
		return stats, err
	}
	if deltas == nil {
		return stats, emitHeld(ctx, pending, base, emit)
	}
	if err := deltas.finish(); err != nil {
		return stats, err
	}
	if base != nil {
		skip, err := touchedBase(ctx, o, tmp, deltas, base)
		if err != nil {
			return stats, err
		}
		var i int
		err = base(func(key, value []byte) error {
			i++
			if i%ctxEvery == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if skip.has(i - 1) {
				return nil
			}
			return emit(key, value)
		})
		if err != nil {
			return stats, err
		}
	}
	m, err := deltas.merge()
	if err != nil {
		return stats, err
	}
	defer m.close()
	for m.next() {
		if !m.del {
			if err := emit(m.key, m.value); err != nil {
				return stats, err
			}
		}
	}
	return stats, m.err
}

// emitHeld is rebuild when the step records fit in memory: pending holds each key's latest
// value (nil: removed).
func emitHeld(ctx context.Context, pending map[string][]byte, base baseSource, emit func(key, value []byte) error) error {
	if base != nil {
		// Most base rows are not in pending: a small filter answers for them without the map.
		filter := newKeyFilter(len(pending))
		for k := range pending {
			filter.add(k)
		}
		i := 0
		err := base(func(key, value []byte) error {
			if i++; i%ctxEvery == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if filter.mayHave(key) {
				if _, ok := pending[string(key)]; ok {
					return nil
				}
			}
			return emit(key, value)
		})
		if err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(pending))
	for k, v := range pending {
		if v != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := emit([]byte(k), pending[k]); err != nil {
			return err
		}
	}
	return nil
}

// touchedBase returns the positions (in the base's order) of the base rows whose key a step
// record names: the base keys the filter of the step keys lets pass are sorted with their
// positions (spilling as the step records did) and merged with the step runs.
func touchedBase(ctx context.Context, o rebuildOptions, tmp *spillDir, deltas *spiller, base baseSource) (*bitset, error) {
	// The two merges below are open together: the base keys' (records of a key and 8 bytes,
	// few runs) takes a quarter of the fan-in, so that both hold at most 640 files and
	// cursors, not twice 512.
	ko := o
	ko.FanIn = max(2, o.FanIn/4)
	keys := newSpiller(ctx, tmp, "base", ko, false)
	var pos [8]byte
	i := 0
	err := base(func(key, _ []byte) error {
		if i++; i%ctxEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !deltas.filter.mayHave(key) {
			return nil
		}
		binary.BigEndian.PutUint64(pos[:], uint64(i-1))
		return keys.add(key, pos[:], false)
	})
	if err != nil {
		return nil, err
	}
	if err := keys.finish(); err != nil {
		return nil, err
	}
	skip := &bitset{}
	a, err := deltas.merge()
	if err != nil {
		return nil, err
	}
	defer a.close()
	b, err := keys.merge()
	if err != nil {
		return nil, err
	}
	defer b.close()
	okA, okB := a.next(), b.next()
	for okA && okB {
		switch c := bytes.Compare(a.key, b.key); {
		case c < 0:
			okA = a.next()
		case c > 0:
			okB = b.next()
		default:
			skip.set(int(binary.BigEndian.Uint64(b.value)))
			okA, okB = a.next(), b.next()
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	return skip, b.err
}

// bitset is a growing set of non-negative ints: one bit per base row.
type bitset struct{ words []uint64 }

func (s *bitset) set(i int) {
	for i/64 >= len(s.words) {
		s.words = append(s.words, 0)
	}
	s.words[i/64] |= 1 << (i % 64)
}

func (s *bitset) has(i int) bool {
	return i/64 < len(s.words) && s.words[i/64]&(1<<(i%64)) != 0
}

// spillDir is the temporary directory of one rebuild's runs.
type spillDir struct {
	dir  string
	runs int // runs written, merges included
	open []*os.File
}

func newSpillDir(parent string) (*spillDir, error) {
	dir, err := os.MkdirTemp(parent, "ckpt-state-read-")
	if err != nil {
		return nil, fmt.Errorf("spilling state records to disk: %w", err)
	}
	return &spillDir{dir: dir}, nil
}

func (d *spillDir) remove() error {
	for _, f := range d.open {
		f.Close()
	}
	d.open = nil
	return os.RemoveAll(d.dir)
}

// spiller collects records in a buffer and, when the buffer is over the budget, writes it
// sorted (key bytes, then arrival: the latest record of each key is kept) as a run. A run's
// place orders it: every record of a run is later than every record of the runs before it,
// so in a merge the newest run's record of a key wins. finish merges runs until FanIn remain,
// so a merge never opens more than FanIn files.
type spiller struct {
	ctx    context.Context
	dir    *spillDir
	name   string
	limit  int64
	fanIn  int
	buf    []byte
	recs   []spillRec
	spare  []spillRec // the radix sort's other half
	runs   []string   // run files, oldest first
	filter *keyFilter // the keys of every record; nil unless a base is to be filtered
	sorted bool       // finish sorted the buffer, which stays in memory as the newest run
}

// spillRec is a record in the buffer: key buf[off:off+klen], value after it (vlen -1: removed).
type spillRec struct {
	abbr       uint64 // orders records as their keys, or ties (abbreviate)
	off        int
	klen, vlen int32
}

func newSpiller(ctx context.Context, dir *spillDir, name string, o rebuildOptions, filter bool) *spiller {
	s := &spiller{ctx: ctx, dir: dir, name: name, limit: o.Budget, fanIn: o.FanIn}
	if filter {
		// The filter is the one memory that grows with the records past the budget: it is
		// sized to an eighth of the budget (false positives only cost the base keys they let
		// through a sort).
		s.filter = newKeyFilterBytes(o.Budget / 8)
	}
	return s
}

func (s *spiller) key(r spillRec) []byte { return s.buf[r.off : r.off+int(r.klen)] }

func (s *spiller) value(r spillRec) []byte {
	if r.vlen < 0 {
		return nil
	}
	start := r.off + int(r.klen)
	return s.buf[start : start+int(r.vlen)]
}

func (s *spiller) add(key, value []byte, del bool) error {
	if len(s.recs) > 0 && int64(len(s.buf)+len(key)+len(value))+int64(len(s.recs)+1)*spillRecBytes > s.limit {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if s.buf == nil {
		s.buf = make([]byte, 0, s.limit)
	}
	r := spillRec{off: len(s.buf), klen: int32(len(key)), vlen: -1}
	s.buf = append(s.buf, key...)
	if !del {
		r.vlen = int32(len(value))
		s.buf = append(s.buf, value...)
	}
	s.recs = append(s.recs, r)
	if s.filter != nil {
		s.filter.addBytes(key)
	}
	return nil
}

// sortBuffer sorts the buffer's records by key, keeping only each key's latest: a radix sort
// of their abbreviations (stable: records of equal abbreviations stay in arrival order), then
// the rare runs of equal abbreviations by key bytes. pdqsort with abbreviations first was
// 15% of a spilled read's CPU; this is 4% (the radix passes a tenth of pdqsort's time).
func (s *spiller) sortBuffer() {
	s.abbreviate()
	s.recs, s.spare = radixSort(s.recs, s.spare)
	recs := s.recs
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].abbr == recs[i].abbr {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(recs[i:j], func(a, b spillRec) int { return bytes.Compare(s.key(a), s.key(b)) })
		}
		i = j
	}
	out := s.recs[:0]
	for i, r := range s.recs {
		if i+1 < len(s.recs) && r.abbr == s.recs[i+1].abbr && bytes.Equal(s.key(r), s.key(s.recs[i+1])) {
			continue // a later record of the key follows
		}
		out = append(out, r)
	}
	s.recs = out
}

// radixSort sorts a by abbr, stably, with spare (grown to a's length) as the other buffer; it
// returns the sorted records and the other buffer. A byte every record shares is skipped.
func radixSort(a, spare []spillRec) (sorted, other []spillRec) {
	if len(a) < 2 {
		return a, spare
	}
	if cap(spare) < len(a) {
		spare = make([]spillRec, len(a))
	}
	src, dst := a, spare[:len(a)]
	var counts [8][256]int
	for _, r := range src {
		for b := range 8 {
			counts[b][byte(r.abbr>>(8*b))]++
		}
	}
	for b := range 8 {
		count := &counts[b]
		shift := 8 * b
		if count[byte(src[0].abbr>>shift)] == len(src) {
			continue
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, r := range src {
			k := byte(r.abbr >> shift)
			dst[count[k]] = r
			count[k]++
		}
		src, dst = dst, src
	}
	return src, dst
}

// abbreviate sets each record's abbr so that comparing abbrs orders keys as their bytes do,
// or ties: the bytes at the first 8 positions where the buffer's keys differ (within the
// shortest key). Positions where every key holds the same byte (the UnsafeRow header, a
// constant prefix) decide nothing, so skipping them keeps the order; sorting then compares
// key bytes only for keys that agree on those 8 positions. State keys share most of their
// bytes (null bits, offsets and sizes, prefixes): comparing them whole was a third of a
// spilled read's CPU.
func (s *spiller) abbreviate() {
	if len(s.recs) == 0 {
		return
	}
	first := s.key(s.recs[0])
	n := len(first)
	for _, r := range s.recs {
		n = min(n, int(r.klen))
	}
	diff := make([]byte, n)
	for _, r := range s.recs {
		k := s.key(r)
		j := 0
		for ; j+8 <= n; j += 8 {
			d := binary.LittleEndian.Uint64(diff[j:]) | (binary.LittleEndian.Uint64(k[j:]) ^ binary.LittleEndian.Uint64(first[j:]))
			binary.LittleEndian.PutUint64(diff[j:], d)
		}
		for ; j < n; j++ {
			diff[j] |= k[j] ^ first[j]
		}
	}
	pos := make([]int, 0, 8)
	for j := 0; j < n && len(pos) < 8; j++ {
		if diff[j] != 0 {
			pos = append(pos, j)
		}
	}
	for i := range s.recs {
		k := s.key(s.recs[i])
		var a uint64
		for _, j := range pos {
			a = a<<8 | uint64(k[j])
		}
		s.recs[i].abbr = a << (8 * (8 - len(pos)))
	}
}

// flush writes the buffer as the next run and empties it.
func (s *spiller) flush() error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	s.sortBuffer()
	err := s.writeRun(func(w *runWriter) error {
		for _, r := range s.recs {
			if err := w.write(s.key(r), s.value(r), r.vlen < 0); err != nil {
				return err
			}
		}
		return nil
	})
	s.buf, s.recs = s.buf[:0], s.recs[:0]
	return err
}

// dumpMap writes the records held in a map (latest value per key, nil: removed) as a run.
func (s *spiller) dumpMap(m map[string][]byte) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
		if s.filter != nil {
			s.filter.add(k)
		}
	}
	slices.Sort(keys)
	return s.writeRun(func(w *runWriter) error {
		for _, k := range keys {
			v := m[k]
			if err := w.write([]byte(k), v, v == nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeRun writes the next run with fill.
func (s *spiller) writeRun(fill func(*runWriter) error) error {
	path, err := s.newRun(fill)
	if err == nil {
		s.runs = append(s.runs, path)
	}
	return err
}

// mergeRange merges runs[i:j] into one run, in their place: they are consecutive, so the
// order of the runs stays the order of their records. Removes are kept: they hide older
// runs' puts and base rows.
func (s *spiller) mergeRange(i, j int) error {
	group := slices.Clone(s.runs[i:j])
	m, err := s.mergeRuns(group, false)
	if err != nil {
		return err
	}
	defer m.close()
	path, err := s.newRun(func(w *runWriter) error {
		for m.next() {
			if err := w.write(m.key, m.value, m.del); err != nil {
				return err
			}
		}
		return m.err
	})
	m.close()
	for _, p := range group {
		os.Remove(p)
	}
	if err != nil {
		return err
	}
	s.runs = slices.Replace(s.runs, i, j, path)
	return nil
}

// newRun writes a new run file with fill and returns its path.
func (s *spiller) newRun(fill func(*runWriter) error) (string, error) {
	path := filepath.Join(s.dir.dir, fmt.Sprintf("%s-%06d.run", s.name, s.dir.runs))
	s.dir.runs++
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("spilling state records to disk: %w", err)
	}
	w := &runWriter{w: bufio.NewWriterSize(f, runWriteBuffer)}
	err = fill(w)
	if err == nil {
		err = w.end()
	}
	if err == nil {
		err = w.w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("spilling state records to disk: %w", err)
	}
	return path, nil
}

// finish ends the adding: the buffer is written as a run if there are runs already (and the
// newest runs merged until at most FanIn remain), else sorted and kept in memory.
func (s *spiller) finish() error {
	spilled, err := s.endBuffer()
	if err != nil || !spilled {
		return err
	}
	// All on disk: the buffer is given back before the merges' cursors (about as much) are
	// taken; without the collection the two were live together at times (peak RSS 52-58 MB
	// on the 1.07 GB delta, 47.6-48.2 MB with it).
	debug.FreeOSMemory()
	return s.reduce()
}

// endBuffer sorts the buffer and keeps it as the newest run in memory when nothing was
// spilled (false), or writes it as the last run and lets it go (true).
func (s *spiller) endBuffer() (bool, error) {
	if len(s.runs) == 0 {
		s.sortBuffer()
		s.sorted = true
		return false, nil
	}
	if len(s.recs) > 0 {
		if err := s.flush(); err != nil {
			return true, err
		}
	}
	s.buf, s.recs, s.spare = nil, nil, nil
	return true, nil
}

// reduce merges runs until FanIn remain: passes each merging consecutive groups of at most
// FanIn runs, no more of them than it takes (330 runs and a fan-in of 256 merge 75 of them
// once, not all of them).
func (s *spiller) reduce() error {
	for len(s.runs) > s.fanIn {
		excess := len(s.runs) - s.fanIn
		for i := 0; i < len(s.runs) && excess > 0; i++ {
			g := min(s.fanIn, excess+1, len(s.runs)-i)
			if err := s.mergeRange(i, i+g); err != nil {
				return err
			}
			excess -= g - 1
		}
	}
	return nil
}

// runWriter writes a run's records: uvarint key length, key, uvarint value length + 1 (0: a
// remove), value; the bytes cut into blocks of runBlock, each compressed with s2 and written
// after its compressed length (4 bytes, little-endian); a length of 0 ends the run. Sorted
// state records shrink to about a third: the bytes written and read back were most of a
// spilled read's CPU time (the kernel's, once the page cache is full: about 2.5 ns a byte).
type runWriter struct {
	w   *bufio.Writer
	raw []byte // bytes not compressed yet
	enc []byte
}

func (w *runWriter) write(key, value []byte, del bool) error {
	w.raw = binary.AppendUvarint(w.raw, uint64(len(key)))
	w.raw = append(w.raw, key...)
	if del {
		w.raw = append(w.raw, 0)
	} else {
		w.raw = binary.AppendUvarint(w.raw, uint64(len(value))+1)
		w.raw = append(w.raw, value...)
	}
	if len(w.raw) < runBlock {
		return nil
	}
	n := 0
	for ; len(w.raw)-n >= runBlock; n += runBlock {
		if err := w.block(w.raw[n : n+runBlock]); err != nil {
			return err
		}
	}
	w.raw = w.raw[:copy(w.raw, w.raw[n:])]
	return nil
}

// block writes one compressed block.
func (w *runWriter) block(b []byte) error {
	if cap(w.enc) < 4+s2.MaxEncodedLen(len(b)) {
		w.enc = make([]byte, 4+s2.MaxEncodedLen(runBlock))
	}
	enc := s2.Encode(w.enc[4:cap(w.enc)], b)
	binary.LittleEndian.PutUint32(w.enc, uint32(len(enc)))
	_, err := w.w.Write(w.enc[:4+len(enc)])
	return err
}

// end writes the last block and the end mark.
func (w *runWriter) end() error {
	if len(w.raw) > 0 {
		if err := w.block(w.raw); err != nil {
			return err
		}
		w.raw = w.raw[:0]
	}
	_, err := w.w.Write([]byte{0, 0, 0, 0})
	return err
}

// cursor walks one run (a file, or the sorted buffer) in key order. A file's records are
// parsed in place from its decoded blocks: key and value hold until the next call of next.
type cursor struct {
	rank       int // higher: newer
	f          io.Reader
	path       string
	s          *spiller // the buffer, when f is nil
	i          int
	key, value []byte
	del        bool
	done       bool    // the run has ended (in a merge)
	buf        []byte  // decoded bytes; buf[pos:] not parsed yet
	pos        int     //
	frame      int     // the next block's compressed length; 0: the run has ended
	scratch    *[]byte // compressed blocks, shared by a merge's cursors
}

// open reads the length of the run's first block.
func (c *cursor) open() error {
	var h [4]byte
	if _, err := io.ReadFull(c.f, h[:]); err != nil {
		return c.corrupt(err)
	}
	c.frame = int(binary.LittleEndian.Uint32(h[:]))
	return nil
}

// more decodes the run's next block after the bytes not parsed yet; false at the run's end.
func (c *cursor) more() (bool, error) {
	if c.frame == 0 {
		return false, nil
	}
	if c.frame > 4+s2.MaxEncodedLen(runBlock) {
		return false, c.corrupt(fmt.Errorf("a block of %d bytes", c.frame))
	}
	// The block and the length of the one after it, in one read.
	sc := slices.Grow((*c.scratch)[:0], c.frame+4)[:c.frame+4]
	*c.scratch = sc
	if _, err := io.ReadFull(c.f, sc); err != nil {
		return false, c.corrupt(err)
	}
	n, err := s2.DecodedLen(sc[:c.frame])
	if err != nil || n > runBlock {
		return false, c.corrupt(fmt.Errorf("a block decoding to %d bytes: %v", n, err))
	}
	rest := len(c.buf) - c.pos
	if cap(c.buf) < rest+n {
		nb := make([]byte, rest+n, max(rest+n, runBlock+1<<10))
		copy(nb, c.buf[c.pos:])
		c.buf = nb
	} else {
		copy(c.buf, c.buf[c.pos:])
		c.buf = c.buf[:rest+n]
	}
	c.pos = 0
	if _, err := s2.Decode(c.buf[rest:], sc[:c.frame]); err != nil {
		return false, c.corrupt(err)
	}
	c.frame = int(binary.LittleEndian.Uint32(sc[c.frame:]))
	return true, nil
}

func (c *cursor) next() (bool, error) {
	if c.f == nil {
		if c.i >= len(c.s.recs) {
			return false, nil
		}
		rec := c.s.recs[c.i]
		c.i++
		c.key, c.value, c.del = c.s.key(rec), c.s.value(rec), rec.vlen < 0
		return true, nil
	}
	for {
		if n := c.parse(c.buf[c.pos:]); n > 0 {
			c.pos += n
			return true, nil
		} else if n < 0 {
			return false, c.corrupt(errors.New("a bad length"))
		}
		ok, err := c.more()
		if err != nil {
			return false, err
		}
		if !ok {
			if c.pos < len(c.buf) {
				return false, c.corrupt(io.ErrUnexpectedEOF)
			}
			return false, nil
		}
	}
}

// parse reads the record at the start of b into key, value and del and returns its length:
// 0 when b holds only part of it, -1 when it is damaged.
func (c *cursor) parse(b []byte) int {
	kl, n := binary.Uvarint(b)
	if n < 0 {
		return -1
	}
	if n == 0 || kl >= uint64(len(b)-n) {
		return 0
	}
	p := n + int(kl)
	vl, m := binary.Uvarint(b[p:])
	if m <= 0 {
		return m
	}
	if vl == 0 {
		c.key, c.value, c.del = b[n:p], nil, true
		return p + m
	}
	p += m
	if vl-1 > uint64(len(b)-p) {
		return 0
	}
	c.key, c.value, c.del = b[n:n+int(kl)], b[p:p+int(vl-1)], false
	return p + int(vl-1)
}

func (c *cursor) corrupt(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading the spilled run %s: %w", c.path, err)
}

// merger yields each key of its runs once, in key order, with its newest record. Its cursors
// play a tournament (a loser tree): advancing the winner replays one match per level, half
// the comparisons of a binary heap's sift-down (the heap was 15% of a spilled read's CPU).
type merger struct {
	ctx        context.Context
	cs         []*cursor // cursors with a record when the merge began
	tree       []int     // tree[0]: the winning cursor; tree[i>0]: the loser of match i
	live       int       // cursors not at their end
	files      []*os.File
	scratch    []byte // a compressed block read
	key, value []byte
	del        bool
	started    bool
	n          int
	err        error
}

// merge opens the spiller's runs (and its sorted buffer) for a merge.
func (s *spiller) merge() (*merger, error) { return s.mergeRuns(s.runs, true) }

// mergeRuns opens runs (oldest first), and the sorted buffer if withBuffer, for a merge.
func (s *spiller) mergeRuns(runs []string, withBuffer bool) (*merger, error) {
	m := &merger{ctx: s.ctx}
	var cs []*cursor
	for i, p := range runs {
		f, err := os.Open(p)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("reading spilled state records: %w", err)
		}
		m.files = append(m.files, f)
		s.dir.open = append(s.dir.open, f)
		c := &cursor{rank: i, f: f, path: p, scratch: &m.scratch}
		if err := c.open(); err != nil {
			m.close()
			return nil, err
		}
		cs = append(cs, c)
	}
	if withBuffer && s.sorted && len(s.recs) > 0 {
		cs = append(cs, &cursor{rank: len(runs), s: s})
	}
	for _, c := range cs {
		ok, err := c.next()
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			m.cs = append(m.cs, c)
		}
	}
	m.live = len(m.cs)
	if m.live > 0 {
		m.tree = make([]int, len(m.cs))
		m.tree[0] = m.play(1)
	}
	return m, nil
}

// play fills the matches below node i (leaves: len(cs)+cursor) and returns their winner.
func (m *merger) play(i int) int {
	if i >= len(m.cs) {
		return i - len(m.cs)
	}
	a, b := m.play(2*i), m.play(2*i+1)
	if m.beats(b, a) {
		a, b = b, a
	}
	m.tree[i] = b
	return a
}

// beats says whether cursor a comes before cursor b: a smaller key, or the same key from a
// newer run; a cursor at its end comes after all.
func (m *merger) beats(a, b int) bool {
	ca, cb := m.cs[a], m.cs[b]
	if ca.done || cb.done {
		return !ca.done
	}
	if c := bytes.Compare(ca.key, cb.key); c != 0 {
		return c < 0
	}
	return ca.rank > cb.rank
}

// advance moves the winning cursor to its next record and replays its matches.
func (m *merger) advance() error {
	w := m.tree[0]
	c := m.cs[w]
	ok, err := c.next()
	if err != nil {
		return err
	}
	if !ok {
		c.done = true
		m.live--
	}
	for i := (w + len(m.cs)) / 2; i > 0; i /= 2 {
		if m.beats(m.tree[i], w) {
			m.tree[i], w = w, m.tree[i]
		}
	}
	m.tree[0] = w
	return nil
}

// next moves to the next key; key, value and del hold its newest record until the next call.
func (m *merger) next() bool {
	if m.err != nil {
		return false
	}
	if m.started {
		// Past the key given last: its winner and the older records of it.
		for m.live > 0 && bytes.Equal(m.cs[m.tree[0]].key, m.key) {
			if m.err = m.advance(); m.err != nil {
				return false
			}
		}
	}
	m.started = true
	if m.n++; m.n%ctxEvery == 0 {
		if m.err = m.ctx.Err(); m.err != nil {
			return false
		}
	}
	if m.live == 0 {
		return false
	}
	top := m.cs[m.tree[0]]
	m.key = append(m.key[:0], top.key...)
	m.value, m.del = top.value, top.del
	return true
}

func (m *merger) close() {
	for _, f := range m.files {
		f.Close()
	}
	m.files = nil
}
