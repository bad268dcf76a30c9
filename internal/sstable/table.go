package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
)

// Options tune Open.
type Options struct {
	// Decompress decompresses compressed blocks. Default nil: a compressed block is an error
	// naming its compression.
	Decompress Decompressor
	// Merges lets merge operands through as KindMerge entries (transformWithState's list
	// state); default: a merge operand is an ErrUnsupported error.
	Merges bool
}

// Properties are the table properties ckpt uses (the "rocksdb.properties" meta block).
type Properties struct {
	NumEntries        uint64 `json:"numEntries"`
	NumDeletions      uint64 `json:"numDeletions"`
	NumMergeOperands  uint64 `json:"numMergeOperands"`
	NumRangeDeletions uint64 `json:"numRangeDeletions"`
	NumDataBlocks     uint64 `json:"numDataBlocks"`
	Comparator        string `json:"comparator"`
	MergeOperator     string `json:"mergeOperator"`
	Compression       string `json:"compression"`
	ColumnFamily      string `json:"columnFamily"`
	// IndexType is BlockBasedTableOptions.index_type: 0 binary search, 1 hash search,
	// 2 two-level (partitioned), 3 binary search with the first key.
	IndexType uint32 `json:"indexType"`
	// IndexValueIsDeltaEncoded: index entries after a restart point hold only a size delta.
	IndexValueIsDeltaEncoded bool `json:"indexValueIsDeltaEncoded"`
	// found is whether the table had a properties block.
	found bool
}

// Index types.
const (
	IndexBinarySearch          = 0
	IndexHashSearch            = 1
	IndexTwoLevel              = 2
	IndexBinarySearchWithFirst = 3
)

// Table is one SST file: held in memory (Open) or read a block at a time (OpenReaderAt).
// A Table is not safe for concurrent use.
type Table struct {
	// File is the name errors give.
	File       string
	Footer     Footer
	Properties Properties
	// MetaBlocks are the metaindex's entries: meta block name → handle.
	MetaBlocks map[string]Handle
	data       []byte
	// r and size stand for data when the table is read a block at a time; scratch holds the
	// last compressed block read from r.
	r       io.ReaderAt
	size    int64
	scratch []byte
	opts    Options
}

// Open parses the footer, the metaindex and the properties of the table in data. The table
// keeps data (its blocks are read from it as the iterator goes).
func Open(file string, data []byte, opts Options) (*Table, error) {
	return open(&Table{File: file, data: data, size: int64(len(data)), opts: opts, MetaBlocks: map[string]Handle{}})
}

// OpenReaderAt is Open for a table of size bytes read from r a block at a time, as the
// iterator goes: memory holds one data block and the index, not the file (an SST file of a
// large state partition is 64 MiB or more, and a version is many of them). An index of 256
// KiB or more is read a part at a time when uncompressed, and kept as its block handles
// (about 3 bytes a block) when compressed.
func OpenReaderAt(file string, r io.ReaderAt, size int64, opts Options) (*Table, error) {
	return open(&Table{File: file, r: r, size: size, opts: opts, MetaBlocks: map[string]Handle{}})
}

// readAt returns n bytes at off: a slice of data, or read from r into buf (or a new slice
// when buf is nil).
func (t *Table) readAt(off int64, n int, buf *[]byte) ([]byte, error) {
	if t.r == nil || n == 0 {
		return t.data[off : off+int64(n)], nil
	}
	var b []byte
	if buf != nil && cap(*buf) >= n {
		b = (*buf)[:n]
	} else {
		b = make([]byte, n)
		if buf != nil {
			*buf = b
		}
	}
	if _, err := t.r.ReadAt(b, off); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, &Error{File: t.File, Offset: off, Block: "file", Expected: fmt.Sprintf("%d bytes at offset %d", n, off), Err: err}
	}
	return b, nil
}

func open(t *Table) (*Table, error) {
	file := t.File
	tail, err := t.readAt(max(0, t.size-FooterLen), int(min(t.size, FooterLen)), nil)
	if err != nil {
		return nil, err
	}
	f, err := ParseFooter(file, tail, t.size)
	if err != nil {
		return nil, err
	}
	t.Footer = f
	meta, err := t.block(f.MetaIndex, "metaindex block", nil)
	if err != nil {
		return nil, err
	}
	it, err := newBlockIter(file, meta, int64(f.MetaIndex.Offset), "metaindex block", false, false)
	if err != nil {
		return nil, err
	}
	for it.next() {
		h, _, ok := decodeHandle(it.value)
		if !ok {
			return nil, errf(file, it.entryOffset(), "metaindex block", "a block handle for meta block "+strconv.Quote(string(it.key)), "bad varints")
		}
		t.MetaBlocks[string(it.key)] = h
	}
	if it.err != nil {
		return nil, it.err
	}
	if f.FormatVersion >= 6 {
		h, ok := t.MetaBlocks["rocksdb.index"]
		if !ok {
			return nil, errf(file, int64(f.MetaIndex.Offset), "metaindex block", `a "rocksdb.index" entry (format version 6+ keeps the index handle there)`, "none")
		}
		t.Footer.Index = h
	}
	ph, ok := t.MetaBlocks["rocksdb.properties"]
	if !ok {
		ph, ok = t.MetaBlocks["rocksdb.stats"]
	}
	if ok {
		if err := t.readProperties(ph); err != nil {
			return nil, err
		}
	}
	if t.Properties.Comparator != "" && t.Properties.Comparator != "leveldb.BytewiseComparator" {
		return nil, errf(file, -1, "properties block", "keys ordered by leveldb.BytewiseComparator (Spark's)", "%s", t.Properties.Comparator)
	}
	if t.Properties.IndexType == IndexHashSearch {
		// The hash index is an extra meta block beside a binary search index: reading in order
		// needs only the latter.
		t.Properties.IndexType = IndexBinarySearch
	}
	if t.Properties.IndexType > IndexBinarySearchWithFirst {
		return nil, errf(file, -1, "properties block", "an index type 0-3", "%d", t.Properties.IndexType)
	}
	return t, nil
}

func (t *Table) readProperties(h Handle) error {
	b, err := t.block(h, "properties block", nil)
	if err != nil {
		return err
	}
	it, err := newBlockIter(t.File, b, int64(h.Offset), "properties block", false, false)
	if err != nil {
		return err
	}
	p := &t.Properties
	p.found = true
	for it.next() {
		num := func(dst *uint64) error {
			v, n := binary.Uvarint(it.value)
			if n <= 0 {
				return errf(t.File, it.entryOffset(), "properties block", "a varint for property "+string(it.key), "%x", it.value)
			}
			*dst = v
			return nil
		}
		var err error
		var flag uint64
		switch string(it.key) {
		case "rocksdb.num.entries":
			err = num(&p.NumEntries)
		case "rocksdb.deleted.keys":
			err = num(&p.NumDeletions)
		case "rocksdb.merge.operands":
			err = num(&p.NumMergeOperands)
		case "rocksdb.num.range-deletions":
			err = num(&p.NumRangeDeletions)
		case "rocksdb.num.data.blocks":
			err = num(&p.NumDataBlocks)
		case "rocksdb.comparator":
			p.Comparator = string(it.value)
		case "rocksdb.merge.operator":
			p.MergeOperator = string(it.value)
		case "rocksdb.compression":
			p.Compression = string(it.value)
		case "rocksdb.column.family.name":
			p.ColumnFamily = string(it.value)
		case "rocksdb.block.based.table.index.type":
			if len(it.value) != 4 {
				return errf(t.File, it.entryOffset(), "properties block", "a 4-byte index type", "%d bytes", len(it.value))
			}
			p.IndexType = binary.LittleEndian.Uint32(it.value)
		case "rocksdb.index.value.is.delta.encoded":
			err = num(&flag)
			p.IndexValueIsDeltaEncoded = flag != 0
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// checkHandle is an error unless h is a block (and its trailer) within the file.
func (t *Table) checkHandle(h Handle, name string) error {
	end := uint64(t.size - int64(t.Footer.Len))
	if h.Offset > end || h.Size > end-h.Offset || end-h.Offset-h.Size < trailerLen {
		return errf(t.File, int64(h.Offset), name, "a block within the file", "size %d at offset %d of a %d-byte file", h.Size, h.Offset, t.size)
	}
	return nil
}

// indexChunk is how many bytes of an index block a streamed walk reads at a time, and
// streamMin the smallest index streamed, or kept as handles when compressed (tests make both
// small).
var (
	indexChunk = 64 << 10
	streamMin  = uint64(256 << 10)
)

// streamBlock returns the block at h as a source read a part at a time, its checksum checked
// first (read once, hashed as it is read): an uncompressed block is read at offsets, an lz4 or
// snappy one decoded as a stream (unpacker). It returns nil when the table is in memory, the
// block is small, or it is not read so: then it is read whole, and a compressed block that the
// checking pass found damaged is read whole too, so that its error is the whole read's.
func (t *Table) streamBlock(h Handle, name string) (*blockSource, error) {
	// A compressed block is streamed when it decodes to streamMin bytes or more: lz4 and
	// snappy shrink an index 3 to 8 times.
	if t.r == nil || h.Size < streamMin/8 {
		return nil, nil
	}
	if err := t.checkHandle(h, name); err != nil {
		return nil, err
	}
	var tb []byte
	trailer, err := t.readAt(int64(h.Offset+h.Size), trailerLen, &tb)
	if err != nil {
		return nil, err
	}
	typ := Compression(trailer[0])
	src := &blockSource{t: t, h: h, name: name, off: int64(h.Offset), size: int(h.Size), chunk: indexChunk, typ: typ}
	var crc uint32
	var xs *xxh3Stream
	hash := func(b []byte) {
		if xs != nil {
			xs.Write(b)
		} else {
			crc = crc32.Update(crc, crc32c, b)
		}
	}
	if t.Footer.Checksum == ChecksumXXH3 {
		xs = newXXH3Stream(int(h.Size))
	}
	if t.Footer.Checksum != ChecksumXXH3 && t.Footer.Checksum != ChecksumCRC32C {
		hash = nil
	}
	if typ == NoCompression && h.Size < streamMin {
		return nil, nil
	}
	if typ != NoCompression {
		if t.opts.Decompress == nil || !t.unpackable(typ) || hash == nil {
			return nil, nil
		}
		// The checking pass decodes the whole block too (what is decoded is dropped but its
		// last 4 bytes, the restart count): the walk then meets no damage a whole read would
		// have reported first.
		u, err := t.newUnpacker(h, typ, hash)
		if err == nil && uint64(u.size) < streamMin {
			return nil, nil
		}
		if err == nil {
			src.size = u.size
			err = u.read(nil, u.size-4)
		}
		if err == nil {
			_, err = u.at(u.size-4, 4, &src.rbuf)
		}
		if err == nil {
			copy(src.count[:], src.rbuf)
			err = u.finish()
		}
		if err == nil && !u.exhausted() {
			err = errUnpack
		}
		if err == nil {
			err = t.checkSum(h, name, t.sum(crc, xs, trailer), trailer)
		}
		if err != nil {
			return nil, nil
		}
		return src, nil
	}
	for off := 0; off < src.size && hash != nil; {
		n := min(src.chunk, src.size-off)
		b, err := t.readAt(src.off+int64(off), n, &src.buf)
		if err != nil {
			return nil, err
		}
		hash(b)
		off += n
	}
	if hash != nil {
		if err := t.checkSum(h, name, t.sum(crc, xs, trailer), trailer); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// sum is a block's checksum from its hash state (crc32c, or XXH3 when xs is not nil) and the
// trailer's compression type.
func (t *Table) sum(crc uint32, xs *xxh3Stream, trailer []byte) uint32 {
	if xs != nil {
		return uint32(xs.Sum()) ^ uint32(trailer[0])*0x6b9083d9
	}
	return maskCRC(crc32.Update(crc, crc32c, trailer[:1]))
}

// blockSource is a block read a part at a time: from its table's ReaderAt at offsets when it
// is uncompressed, else decoded forward by two unpackers, one for its entries and one for its
// restart points.
type blockSource struct {
	t         *Table
	h         Handle
	name      string
	off       int64 // the block's file offset
	size      int   // its length, without the trailer (decoded, when compressed)
	chunk     int
	buf, rbuf []byte // the window of entries, of restart points
	typ       Compression
	ents, rst *unpacker
	count     [4]byte // a compressed block's last 4 bytes, its restart count
}

// read returns n bytes at block offset pos into *buf: of the entries, or of the restart
// points (restarts). Each of the two is read forward.
func (s *blockSource) read(pos, n int, buf *[]byte, restarts bool) ([]byte, error) {
	if s.typ == NoCompression {
		return s.t.readAt(s.off+int64(pos), n, buf)
	}
	u := &s.ents
	if restarts {
		u = &s.rst
	}
	var err error
	if *u == nil {
		*u, err = s.t.newUnpacker(s.h, s.typ, nil)
	}
	var b []byte
	if err == nil {
		b, err = (*u).at(pos, n, buf)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{File: s.t.File, Offset: s.off, Block: s.name, Expected: "a valid " + s.typ.String() + " block", Err: err}
	}
	return b, nil
}

// block returns the uncompressed contents of the block at h, checking its trailer; *buf (when
// buf is not nil) holds a decompressed block, reused when large enough.
func (t *Table) block(h Handle, name string, buf *[]byte) ([]byte, error) {
	if err := t.checkHandle(h, name); err != nil {
		return nil, err
	}
	// An uncompressed block read from r is returned as read: it gets its own slice, so that
	// a later read does not overwrite it (the index block lives as long as the iterator).
	var scratch *[]byte
	if t.r != nil {
		b, err := t.readAt(int64(h.Offset+h.Size), trailerLen, &t.scratch)
		if err != nil {
			return nil, err
		}
		if Compression(b[0]) != NoCompression {
			scratch = &t.scratch
		}
	}
	whole, err := t.readAt(int64(h.Offset), int(h.Size)+trailerLen, scratch)
	if err != nil {
		return nil, err
	}
	raw, trailer := whole[:h.Size:h.Size], whole[h.Size:]
	typ := Compression(trailer[0])
	if err := t.verify(h, name, raw, trailer); err != nil {
		return nil, err
	}
	if typ == NoCompression {
		return raw, nil
	}
	if t.opts.Decompress == nil {
		return nil, &Error{File: t.File, Offset: int64(h.Offset), Block: name, Expected: "an uncompressed block (no decompressor given)", Got: typ.String(), Err: ErrUnsupported}
	}
	src, size := raw, 0
	if t.Footer.FormatVersion >= 2 && typ != SnappyCompression && typ != XpressCompression {
		// compress_format_version 2: the uncompressed size, a varint32, before the payload.
		v, n := binary.Uvarint(raw)
		// A bound on the expansion keeps a damaged size from allocating gigabytes: real
		// blocks are kilobytes, and no codec here expands a block more than 256 times beyond 1 MiB.
		if n <= 0 || n > 5 || v > max(1<<20, 256*uint64(len(raw))) {
			return nil, errf(t.File, int64(h.Offset), name, "the varint32 uncompressed size of a "+typ.String()+" block", "%x", raw[:min(len(raw), 5)])
		}
		src, size = raw[n:], int(v)
	} else if t.Footer.FormatVersion < 2 && typ != SnappyCompression {
		return nil, errf(t.File, int64(h.Offset), name, "snappy or format version 2+ compression framing", "%s in format version %d", typ, t.Footer.FormatVersion)
	}
	var dst []byte
	if buf != nil {
		dst = *buf
	}
	if cap(dst) < size {
		dst = make([]byte, size)
	}
	out, err := t.opts.Decompress(typ, dst[:size], src)
	if err != nil {
		return nil, &Error{File: t.File, Offset: int64(h.Offset), Block: name, Expected: "a valid " + typ.String() + " block", Err: err}
	}
	if size > 0 && len(out) != size {
		return nil, errf(t.File, int64(h.Offset), name, fmt.Sprintf("%d bytes after %s decompression", size, typ), "%d", len(out))
	}
	if buf != nil {
		*buf = out
	}
	return out, nil
}

// verify checks a block's checksum: crc32c (RocksDB JNI 8, Spark 3.5) or XXH3 (JNI 9, Spark
// 4); the older xxHash32 and xxHash64 settings are not checked.
func (t *Table) verify(h Handle, name string, raw, trailer []byte) error {
	var got uint32
	switch t.Footer.Checksum {
	case ChecksumCRC32C:
		got = maskCRC(crc32.Update(crc32.Checksum(raw, crc32c), crc32c, trailer[:1]))
	case ChecksumXXH3:
		// The hash of the block, then the compression type byte mixed in by a multiply.
		got = uint32(xxh3(raw)) ^ uint32(trailer[0])*0x6b9083d9
	default:
		return nil
	}
	return t.checkSum(h, name, got, trailer)
}

// checkSum compares a block's checksum, got (before the footer's base context), with its
// trailer's.
func (t *Table) checkSum(h Handle, name string, got uint32, trailer []byte) error {
	if b := t.Footer.BaseContextChecksum; b != 0 {
		got += b ^ (uint32(h.Offset) + uint32(h.Offset>>32))
	}
	if want := binary.LittleEndian.Uint32(trailer[1:]); got != want {
		return errf(t.File, int64(h.Offset), name, fmt.Sprintf("the block checksum 0x%08x (stored at offset %d)", want, h.Offset+h.Size+1), "0x%08x (the block is corrupt)", got)
	}
	return nil
}

// block is the entries and restart array of one block.
type blockIter struct {
	file, name string
	base       int64  // file offset of the block (of its uncompressed bytes, when compressed: the block's)
	data       []byte // the entries
	restarts   []byte // uint32 offsets
	pos        int    // offset of the next entry
	cur        int    // offset of the current entry
	nextRst    int    // index of the next restart point
	key, value []byte
	// deltaHandles: an index block whose values are block handles, delta-encoded after
	// restart points and without a value length (format version 4+).
	deltaHandles bool
	firstKey     bool // index values carry the block's first key (index type 3)
	handle       Handle
	err          error
	// A block read a part at a time: data is a window of the entries starting at block
	// offset winOff, restarts a window starting at restart point rstBase.
	src     *blockSource
	winOff  int
	rstBase int
	nRst    int // restart points in the block
	entries int // length of the block's entries
}

func newBlockIter(file string, b []byte, base int64, name string, deltaHandles, firstKey bool) (*blockIter, error) {
	it := &blockIter{}
	if err := it.reset(file, b, base, name, deltaHandles, firstKey); err != nil {
		return nil, err
	}
	return it, nil
}

func (it *blockIter) reset(file string, b []byte, base int64, name string, deltaHandles, firstKey bool) error {
	*it = blockIter{file: file, name: name, base: base, key: it.key[:0], deltaHandles: deltaHandles, firstKey: firstKey}
	if len(b) < 4 {
		return errf(file, base, name, "a block of at least 4 bytes (its restart count)", "%d bytes", len(b))
	}
	n := len(b) - 4
	packed := binary.LittleEndian.Uint32(b[n:])
	num := uint64(packed)
	if packed>>31 == 1 && len(b) <= 1<<16 {
		// A data block hash index (kDataBlockBinaryAndHash): buckets and their count sit
		// between the restart array and the packed count.
		num = uint64(packed & 0x7fffffff)
		if n < 2 {
			return errf(file, base, name, "a data block hash index", "%d bytes", len(b))
		}
		buckets := int(binary.LittleEndian.Uint16(b[n-2:]))
		if buckets+2 > n {
			return errf(file, base, name, "a data block hash index within the block", "%d buckets in %d bytes", buckets, len(b))
		}
		n -= 2 + buckets
	}
	if num == 0 || num*4 > uint64(n) {
		return errf(file, base, name, "1 or more restart points within the block", "%d restarts in %d bytes", num, len(b))
	}
	n -= int(num) * 4
	it.data, it.restarts = b[:n], b[n:n+int(num)*4]
	it.nRst, it.entries = int(num), n
	return nil
}

// resetStreamed is reset for a block read a part at a time from src; its checksum has been
// checked (streamBlock).
func (it *blockIter) resetStreamed(src *blockSource, name string, deltaHandles, firstKey bool) error {
	t := src.t
	*it = blockIter{file: t.File, name: name, base: src.off, key: it.key[:0], deltaHandles: deltaHandles, firstKey: firstKey, src: src}
	if src.size < 4 {
		return errf(t.File, src.off, name, "a block of at least 4 bytes (its restart count)", "%d bytes", src.size)
	}
	b := src.count[:]
	if src.typ == NoCompression {
		var err error
		if b, err = t.readAt(src.off+int64(src.size-4), 4, &src.rbuf); err != nil {
			return err
		}
	}
	num := uint64(binary.LittleEndian.Uint32(b))
	n := src.size - 4
	// Only data blocks have a hash index (and streamed blocks are larger than it allows).
	if num == 0 || num*4 > uint64(n) {
		return errf(t.File, src.off, name, "1 or more restart points within the block", "%d restarts in %d bytes", num, src.size)
	}
	it.nRst = int(num)
	it.entries = n - int(num)*4
	return nil
}

// fill makes a streamed block's windows hold the next entry and the next restart point.
func (it *blockIter) fill() bool {
	s := it.src
	if it.err != nil {
		return false
	}
	if it.nextRst < it.nRst && it.nextRst >= it.rstBase+len(it.restarts)/4 {
		n := min(max(s.chunk/4, 1), it.nRst-it.nextRst)
		b, err := s.read(it.entries+4*it.nextRst, 4*n, &s.rbuf, true)
		if err != nil {
			it.err = err
			return false
		}
		it.restarts, it.rstBase = b, it.nextRst
	}
	for {
		end := it.winOff + len(it.data)
		if it.pos >= len(it.data) && end >= it.entries {
			return true
		}
		if e := it.entryEnd(); e >= 0 && e <= len(it.data) {
			return true
		}
		if end >= it.entries {
			return true // the entry runs past the block's entries: next says so
		}
		keep := len(it.data) - it.pos
		want := min(keep+max(s.chunk, keep), it.entries-(it.winOff+it.pos))
		if cap(s.buf) < want {
			nb := make([]byte, want)
			copy(nb, it.data[it.pos:])
			s.buf = nb
		} else {
			copy(s.buf[:want], it.data[it.pos:])
		}
		var dst []byte = s.buf[keep:want]
		if _, err := s.read(end, len(dst), &dst, false); err != nil {
			it.err = err
			return false
		}
		it.winOff += it.pos
		it.data, it.pos = s.buf[:want], 0
	}
}

// isRestart is whether the entry at window offset p is the next restart point.
func (it *blockIter) isRestart(p int) bool {
	return it.nextRst < it.nRst && int(binary.LittleEndian.Uint32(it.restarts[(it.nextRst-it.rstBase)*4:])) == it.winOff+p
}

// entryEnd is the window offset where the entry at it.pos ends: -1 when the window ends
// first, it.pos itself when the entry is damaged (next reports it).
func (it *blockIter) entryEnd() int {
	d, p := it.data, it.pos
	uv := func() (uint64, int) {
		if p > len(d) {
			return 0, -1
		}
		v, n := binary.Uvarint(d[p:])
		switch {
		case n == 0:
			return 0, -1
		case n < 0:
			return 0, it.pos
		}
		p += n
		return v, 0
	}
	var l [3]uint64
	nv := 3
	if it.deltaHandles {
		nv = 2
	}
	for i := 0; i < nv; i++ {
		v, r := uv()
		if r != 0 {
			return r
		}
		l[i] = v
	}
	rest := uint64(it.entries - (it.winOff + p))
	if l[1] > rest || l[2] > rest-l[1] {
		return it.pos
	}
	p += int(l[1] + l[2])
	if !it.deltaHandles {
		return p
	}
	k := 1
	if it.winOff+it.pos == 0 || it.isRestart(it.pos) {
		k = 2
	}
	for i := 0; i < k; i++ {
		if _, r := uv(); r != 0 {
			return r
		}
	}
	if it.firstKey {
		v, r := uv()
		if r != 0 {
			return r
		}
		if v > uint64(it.entries-(it.winOff+p)) {
			return it.pos
		}
		p += int(v)
	}
	return p
}

func (it *blockIter) entryOffset() int64 { return it.base + int64(it.winOff+it.cur) }

func (it *blockIter) fail(expected, gotFormat string, args ...any) bool {
	it.err = errf(it.file, it.entryOffset(), it.name, expected, gotFormat, args...)
	it.data = nil
	return false
}

// next moves to the next entry; false at the end or on an error (it.err).
func (it *blockIter) next() bool {
	if it.src != nil && !it.fill() {
		return false
	}
	if it.pos >= len(it.data) {
		return false
	}
	p := it.pos
	it.cur = p
	restart := false
	if it.isRestart(p) {
		restart = true
		it.nextRst++
	}
	d := it.data
	var shared, unshared, vlen uint64
	if p+3 <= len(d) && d[p]|d[p+1]|d[p+2] < 0x80 && !it.deltaHandles {
		// The common case: three one-byte varints.
		shared, unshared, vlen = uint64(d[p]), uint64(d[p+1]), uint64(d[p+2])
		p += 3
	} else {
		var n int
		if shared, n = binary.Uvarint(d[p:]); n <= 0 {
			return it.fail("an entry's shared key length", "a bad varint")
		}
		p += n
		if unshared, n = binary.Uvarint(d[p:]); n <= 0 {
			return it.fail("an entry's key length", "a bad varint")
		}
		p += n
		if !it.deltaHandles {
			if vlen, n = binary.Uvarint(d[p:]); n <= 0 {
				return it.fail("an entry's value length", "a bad varint")
			}
			p += n
		}
	}
	if shared > uint64(len(it.key)) || (restart && shared != 0) {
		return it.fail("a shared key prefix within the previous key", "%d shared bytes of a %d-byte key", shared, len(it.key))
	}
	if unshared > uint64(len(d)-p) {
		return it.fail("a key within the block", "%d bytes at %d of %d", unshared, it.winOff+p, it.entries)
	}
	it.key = append(it.key[:shared], d[p:p+int(unshared)]...)
	p += int(unshared)
	if !it.deltaHandles {
		if vlen > uint64(len(d)-p) {
			return it.fail("a value within the block", "%d bytes at %d of %d", vlen, it.winOff+p, it.entries)
		}
		it.value = d[p : p+int(vlen)]
		it.pos = p + int(vlen)
		return true
	}
	start := p
	if restart || it.winOff+it.pos == 0 {
		h, n, ok := decodeHandle(d[p:])
		if !ok {
			return it.fail("a block handle", "bad varints")
		}
		it.handle = h
		p += n
	} else {
		z, n := binary.Uvarint(d[p:])
		if n <= 0 {
			return it.fail("a block size delta", "a bad varint")
		}
		delta := int64(z>>1) ^ -int64(z&1)
		prev := it.handle
		size := int64(prev.Size) + delta
		if size < 0 {
			return it.fail("a block size delta", "size %d", size)
		}
		it.handle = Handle{Offset: prev.Offset + prev.Size + trailerLen, Size: uint64(size)}
		p += n
	}
	if it.firstKey {
		l, n := binary.Uvarint(d[p:])
		if n <= 0 || l > uint64(len(d)-p-n) {
			return it.fail("a block's first key", "a bad length")
		}
		p += n + int(l)
	}
	it.value = d[start:p]
	it.pos = p
	return true
}

// indexHandle decodes the current index entry's block handle.
func (it *blockIter) indexHandle() (Handle, bool) {
	if it.deltaHandles {
		return it.handle, true
	}
	h, _, ok := decodeHandle(it.value)
	return h, ok
}
