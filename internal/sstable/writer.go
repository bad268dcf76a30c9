package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Writer builds a table that every RocksDB in Spark's classpath opens (rocksdbjni 8.3 in Spark
// 3.5, 9.x in 4.x): format version 5, crc32c block checksums, data blocks with a restart point
// every 16 entries, a binary search index with delta-encoded handles, and a properties block
// naming the default column family. It is the SST writer of ckpt's RocksDB state writer
// (statefmt) and of the tests' fixtures. Add entries in RocksDB's order (user key ascending,
// then newer sequence numbers first); Finish returns the file, or, with Out set, Close ends the
// file written to Out as it was built.
type Writer struct {
	// Compression is the compression type recorded for compressed blocks; Compress, when not
	// nil, compresses a block's bytes (a block is stored uncompressed when it does not shrink).
	Compression Compression
	Compress    func(src []byte) []byte
	// BlockSize is the data block size to reach before a block is cut. Default 4096.
	BlockSize int
	// CompressIndex compresses the index block too, as RocksDB does by default
	// (enable_index_compression) and so Spark's SST files have it.
	CompressIndex bool
	// Out, when not nil, receives the table as it is built, block by block (a table of
	// gigabytes is not held): Finish is then not called, Close ends the table.
	Out io.Writer
	// IndexSpill, when not nil (with Out), takes the index entries past the first
	// IndexHeld bytes: a table of gigabytes has an index of tens of megabytes. An index
	// that spilled is written uncompressed, streamed back from IndexSpill (an index that
	// fits is written as without it, compressed if CompressIndex).
	IndexSpill io.ReadWriteSeeker
	IndexHeld  int

	out      []byte // the table so far; with Out, nothing (written already)
	written  uint64 // bytes written to Out
	err      error  // the first error of Out
	block    []byte
	restarts []uint32
	n        int // entries in the current block
	last     []byte
	spare    []byte // the buffer of the key before last, reused
	// The index block being built, an entry per data block (its last key and its handle,
	// each entry a restart point) in its final encoding: one buffer, not an allocation per
	// block (a table of 1 GB has about 300,000 blocks).
	index    []byte
	indexRes []uint32
	spilled  int // index bytes written to IndexSpill
	meta     FileMeta
	blocks   uint64
	rawKey   uint64
	rawValue uint64
}

// FileMeta is what a MANIFEST records of a table: its smallest and largest internal keys and
// the range of its sequence numbers, with its entry counts.
type FileMeta struct {
	Smallest, Largest       []byte // internal keys: user key, then the 8-byte seqno/kind trailer
	SmallestSeq, LargestSeq uint64
	Entries, Deletions      uint64
}

const writerRestartInterval = 16

// maxSeq is the largest sequence number an internal key holds (56 bits).
const maxSeq = 1<<56 - 1

// Add appends one entry. It refuses an entry out of RocksDB's order, a sequence number above
// 2^56-1 and a kind other than a value or a deletion.
func (w *Writer) Add(userKey []byte, seq uint64, kind Kind, value []byte) error {
	if seq > maxSeq {
		return fmt.Errorf("sstable: sequence number %d is above 2^56-1", seq)
	}
	if kind != KindValue && kind != KindDeletion {
		return fmt.Errorf("sstable: the writer writes values and deletions, not %v", kind)
	}
	// The key is built in the buffer the entry before the last used (w.last is the last's).
	key := binary.LittleEndian.AppendUint64(append(w.spare[:0], userKey...), seq<<8|uint64(kind))
	if w.meta.Entries > 0 {
		lastUser := w.last[:len(w.last)-8]
		lastSeq := binary.LittleEndian.Uint64(w.last[len(w.last)-8:]) >> 8
		c := bytes.Compare(lastUser, userKey)
		if c > 0 || (c == 0 && lastSeq <= seq) {
			return fmt.Errorf("sstable: entry %d (user key %x, seqno %d) is not after user key %x, seqno %d", w.meta.Entries, userKey, seq, lastUser, lastSeq)
		}
	}
	shared := 0
	if w.n%writerRestartInterval == 0 {
		w.restarts = append(w.restarts, uint32(len(w.block)))
	} else {
		for shared < len(key) && shared < len(w.last) && key[shared] == w.last[shared] {
			shared++
		}
	}
	w.block = binary.AppendUvarint(w.block, uint64(shared))
	w.block = binary.AppendUvarint(w.block, uint64(len(key)-shared))
	w.block = binary.AppendUvarint(w.block, uint64(len(value)))
	w.block = append(append(w.block, key[shared:]...), value...)
	w.last, w.spare = key, w.last
	w.n++
	if w.meta.Entries == 0 {
		w.meta.Smallest = bytes.Clone(key)
		w.meta.SmallestSeq, w.meta.LargestSeq = seq, seq
	}
	w.meta.SmallestSeq, w.meta.LargestSeq = min(w.meta.SmallestSeq, seq), max(w.meta.LargestSeq, seq)
	w.meta.Entries++
	if kind == KindDeletion {
		w.meta.Deletions++
	}
	w.rawKey += uint64(len(key))
	w.rawValue += uint64(len(value))
	size := w.BlockSize
	if size <= 0 {
		size = 4096
	}
	if len(w.block) >= size {
		w.flush()
	}
	return nil
}

// Meta describes the entries added so far (Largest is the last key added).
func (w *Writer) Meta() FileMeta {
	m := w.meta
	m.Largest = bytes.Clone(w.last)
	return m
}

func (w *Writer) flush() {
	if w.n == 0 {
		return
	}
	h := w.writeBlock(w.finishBlock(w.block, w.restarts), true)
	// The index: every entry a restart point (RocksDB's index_block_restart_interval 1), so
	// each value is a full handle without a value length.
	w.indexRes = append(w.indexRes, uint32(w.spilled+len(w.index)))
	w.index = binary.AppendUvarint(w.index, 0)
	w.index = binary.AppendUvarint(w.index, uint64(len(w.last)))
	w.index = append(append(w.index, w.last...), h...)
	w.blocks++
	if w.IndexSpill != nil && w.Out != nil && len(w.index) > max(w.IndexHeld, 4096) && w.err == nil {
		_, w.err = w.IndexSpill.Write(w.index)
		w.spilled += len(w.index)
		w.index = w.index[:0]
	}
	w.block, w.restarts, w.n = w.block[:0], w.restarts[:0], 0
}

func (w *Writer) finishBlock(b []byte, restarts []uint32) []byte {
	for _, r := range restarts {
		b = binary.LittleEndian.AppendUint32(b, r)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(len(restarts)))
}

// writeBlock appends a block and its trailer (to Out, or the table in memory) and returns its
// encoded handle.
func (w *Writer) writeBlock(b []byte, compress bool) []byte {
	typ := NoCompression
	parts := [2][]byte{nil, b}
	if compress && w.Compress != nil {
		c := w.Compress(b)
		if c != nil && len(c) < len(b)-len(b)/8 {
			if w.Compression != SnappyCompression {
				parts[0] = binary.AppendUvarint(nil, uint64(len(b)))
			}
			parts[1], typ = c, w.Compression
		}
	}
	size := len(parts[0]) + len(parts[1])
	h := binary.AppendUvarint(binary.AppendUvarint(nil, w.offset()), uint64(size))
	c := crc32.Update(crc32.Checksum(parts[0], crc32c), crc32c, parts[1])
	c = crc32.Update(c, crc32c, []byte{byte(typ)})
	trailer := binary.LittleEndian.AppendUint32([]byte{byte(typ)}, maskCRC(c))
	for _, p := range [][]byte{parts[0], parts[1], trailer} {
		w.emit(p)
	}
	return h
}

// writeSpilledIndex writes the index block, uncompressed, from IndexSpill and what is held,
// and returns its handle.
func (w *Writer) writeSpilledIndex() []byte {
	tail := w.finishBlock(w.index, w.indexRes)
	w.index, w.indexRes = nil, nil
	size := w.spilled + len(tail)
	h := binary.AppendUvarint(binary.AppendUvarint(nil, w.offset()), uint64(size))
	c := crc32.Checksum(nil, crc32c)
	if w.err == nil {
		_, w.err = w.IndexSpill.Seek(0, io.SeekStart)
	}
	buf := make([]byte, 64<<10)
	for left := w.spilled; left > 0 && w.err == nil; {
		n, err := io.ReadFull(w.IndexSpill, buf[:min(left, len(buf))])
		if err != nil {
			w.err = fmt.Errorf("sstable: reading the spilled index: %w", err)
			break
		}
		c = crc32.Update(c, crc32c, buf[:n])
		w.emit(buf[:n])
		left -= n
	}
	c = crc32.Update(c, crc32c, tail)
	c = crc32.Update(c, crc32c, []byte{byte(NoCompression)})
	w.emit(tail)
	w.emit(binary.LittleEndian.AppendUint32([]byte{byte(NoCompression)}, maskCRC(c)))
	return h
}

// offset is the size of the table so far.
func (w *Writer) offset() uint64 { return w.written + uint64(len(w.out)) }

// emit adds b to the table: written to Out (b is not kept), or appended in memory.
func (w *Writer) emit(b []byte) {
	if w.Out == nil {
		w.out = append(w.out, b...)
		return
	}
	if w.err == nil {
		_, w.err = w.Out.Write(b)
	}
	w.written += uint64(len(b))
}

// simpleBlock encodes key-value pairs with a restart point at every entry.
func (w *Writer) simpleBlock(kvs [][2][]byte) []byte {
	var b []byte
	var rs []uint32
	for _, kv := range kvs {
		rs = append(rs, uint32(len(b)))
		b = binary.AppendUvarint(b, 0)
		b = binary.AppendUvarint(b, uint64(len(kv[0])))
		b = binary.AppendUvarint(b, uint64(len(kv[1])))
		b = append(append(b, kv[0]...), kv[1]...)
	}
	return w.finishBlock(b, rs)
}

// Finish writes the index, properties, metaindex and footer and returns the table (a Writer
// without Out).
func (w *Writer) Finish() []byte {
	w.finish()
	return w.out
}

// Close writes the index, properties, metaindex and footer to Out and returns the table's
// size, or the first error Out returned.
func (w *Writer) Close() (uint64, error) {
	w.finish()
	return w.written, w.err
}

func (w *Writer) finish() {
	w.flush()
	dataSize := w.offset()
	var index []byte
	if w.spilled > 0 {
		index = w.writeSpilledIndex()
	} else {
		ib := w.finishBlock(w.index, w.indexRes)
		w.index, w.indexRes = nil, nil
		index = w.writeBlock(ib, w.CompressIndex)
	}
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	// Properties in the byte order of their names, as a block requires.
	props := w.writeBlock(w.simpleBlock([][2][]byte{
		{[]byte("rocksdb.block.based.table.index.type"), binary.LittleEndian.AppendUint32(nil, IndexBinarySearch)},
		{[]byte("rocksdb.column.family.id"), uv(0)},
		{[]byte("rocksdb.column.family.name"), []byte("default")},
		{[]byte("rocksdb.comparator"), []byte("leveldb.BytewiseComparator")},
		{[]byte("rocksdb.compression"), []byte(w.Compression.String())},
		{[]byte("rocksdb.data.size"), uv(dataSize)},
		{[]byte("rocksdb.deleted.keys"), uv(w.meta.Deletions)},
		{[]byte("rocksdb.index.value.is.delta.encoded"), uv(1)},
		{[]byte("rocksdb.merge.operands"), uv(0)},
		{[]byte("rocksdb.num.data.blocks"), uv(w.blocks)},
		{[]byte("rocksdb.num.entries"), uv(w.meta.Entries)},
		{[]byte("rocksdb.raw.key.size"), uv(w.rawKey)},
		{[]byte("rocksdb.raw.value.size"), uv(w.rawValue)},
	}), false)
	meta := w.writeBlock(w.simpleBlock([][2][]byte{{[]byte("rocksdb.properties"), props}}), false)
	f := []byte{byte(ChecksumCRC32C)}
	hs := append(append([]byte(nil), meta...), index...)
	f = append(f, hs...)
	f = append(f, make([]byte, 2*maxHandleLen-len(hs))...)
	f = binary.LittleEndian.AppendUint32(f, 5)
	f = binary.LittleEndian.AppendUint64(f, Magic)
	w.emit(f)
}
