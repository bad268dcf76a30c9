package sstable

import (
	"encoding/binary"
	"strconv"
)

// Kind is an internal key's value type.
type Kind byte

// The kinds of entries a data block holds that ckpt reads; others are an error.
const (
	KindDeletion       Kind = 0x0
	KindValue          Kind = 0x1
	KindMerge          Kind = 0x2
	KindSingleDeletion Kind = 0x7
)

func (k Kind) String() string {
	switch k {
	case KindDeletion:
		return "deletion"
	case KindValue:
		return "value"
	case KindMerge:
		return "merge"
	case KindSingleDeletion:
		return "single deletion"
	}
	return "value type 0x" + strconv.FormatUint(uint64(k), 16)
}

// Iter walks a table's entries in file order: user keys ascending, and for one user key the
// newest sequence number first. UserKey and Value are valid until the next call of Next.
type Iter struct {
	t       *Table
	top     blockIter   // the (top-level) index
	handles *handleList // the top-level index's handles, when it was compressed
	part    blockIter   // the current index partition (two-level index)
	data    blockIter
	inData  bool
	inPart  bool
	blocks  int // data blocks read
	entries uint64
	buf     []byte // decompressed data blocks
	pbuf    []byte // decompressed index partitions
	err     error
	done    bool

	// UserKey is the current entry's user key (the internal key without its 8-byte trailer).
	UserKey []byte
	// Value is the current entry's value.
	Value []byte
	// Seq is its sequence number, Kind its value type.
	Seq  uint64
	Kind Kind
}

// Iter starts a walk over the table's entries.
func (t *Table) Iter() *Iter {
	it := &Iter{t: t}
	p := t.Properties
	if p.NumRangeDeletions > 0 {
		it.err = errf(t.File, -1, "properties block", "no range deletions (ckpt does not read RocksDB's range tombstones)", "%d", p.NumRangeDeletions)
		it.err.(*Error).Err = ErrUnsupported
		return it
	}
	// A two-level index's top level points to index partitions, whose values are as the
	// index's; the top level has no first keys.
	first := p.IndexType == IndexBinarySearchWithFirst
	// A large index is walked a part at a time, never held whole: a single-level index is
	// about 1% of the file, 37 MB decompressed for a file of 1.2 GB.
	src, err := t.streamBlock(t.Footer.Index, "index block")
	if err != nil {
		it.err = err
		return it
	}
	if src != nil {
		if err := it.top.resetStreamed(src, "index block", p.IndexValueIsDeltaEncoded, first); err != nil {
			it.err = err
			return it
		}
		// A compressed index (Spark's) is decoded as a stream by two unpackers of a few
		// hundred KiB; a version's files are all open at once for the merge, so it is walked
		// once, here, into its handles (about 3 bytes a block) and the unpackers let go.
		if src.typ != NoCompression {
			it.compactTop()
		}
		return it
	}
	b, err := t.block(t.Footer.Index, "index block", nil)
	if err != nil {
		it.err = err
		return it
	}
	// A compressed index was read into the scratch buffer, which data blocks reuse: it need
	// not stay as large as the index for the table's life.
	if cap(t.scratch) > indexChunk {
		t.scratch = nil
	}
	if err := it.top.reset(t.File, b, int64(t.Footer.Index.Offset), "index block", p.IndexValueIsDeltaEncoded, first); err != nil {
		it.err = err
		return it
	}
	// A large compressed index not decoded as a stream (zstd) is kept as handles too.
	if t.r != nil && uint64(len(b)) >= streamMin {
		it.compactTop()
	}
	return it
}

// handleList is an index's block handles, each as a varint of its offset less the end of
// the block before (0 for consecutive blocks) and a varint of its size, then the error
// that ended the index, if any.
type handleList struct {
	b   []byte
	pos int
	end uint64
	err error
}

func (l *handleList) next() (Handle, bool, error) {
	if l.pos >= len(l.b) {
		return Handle{}, false, l.err
	}
	d, n := binary.Varint(l.b[l.pos:])
	size, m := binary.Uvarint(l.b[l.pos+n:])
	l.pos += n + m
	h := Handle{Offset: l.end + uint64(d), Size: size}
	l.end = h.Offset + h.Size + trailerLen
	return h, true, nil
}

// compactTop walks the top-level index into a handleList, which then stands for it.
func (it *Iter) compactTop() {
	l := &handleList{}
	var end uint64
	for {
		h, ok, err := it.topHandle()
		if err != nil || !ok {
			l.err = err
			break
		}
		l.b = binary.AppendVarint(l.b, int64(h.Offset-end))
		l.b = binary.AppendUvarint(l.b, h.Size)
		end = h.Offset + h.Size + trailerLen
	}
	l.b = append([]byte(nil), l.b...)
	it.top, it.handles = blockIter{}, l
}

// topHandle is the next handle of the top-level index.
func (it *Iter) topHandle() (Handle, bool, error) {
	if it.handles != nil {
		return it.handles.next()
	}
	if !it.top.next() {
		return Handle{}, false, it.top.err
	}
	h, ok := it.top.indexHandle()
	if !ok {
		what := "a data block handle"
		if it.t.Properties.IndexType == IndexTwoLevel {
			what = "an index partition handle"
		}
		return h, false, errf(it.t.File, it.top.entryOffset(), "index block", what, "bad varints")
	}
	return h, true, nil
}

// Err is the error that stopped Next, or nil at the end of the table.
func (it *Iter) Err() error { return it.err }

// Next moves to the next entry; false at the end or on an error (Err).
func (it *Iter) Next() bool {
	if it.err != nil || it.done {
		return false
	}
	for {
		if it.inData && it.data.next() {
			k := it.data.key
			if len(k) < 8 {
				it.err = it.numbered(errf(it.t.File, it.data.entryOffset(), it.data.name, "an internal key (a user key and an 8-byte sequence and type)", "%d bytes", len(k)))
				return false
			}
			tr := binary.LittleEndian.Uint64(k[len(k)-8:])
			it.UserKey, it.Value, it.Seq, it.Kind = k[:len(k)-8], it.data.value, tr>>8, Kind(tr&0xff)
			switch it.Kind {
			case KindValue, KindDeletion, KindSingleDeletion:
			case KindMerge:
				if it.t.opts.Merges {
					break
				}
				e := errf(it.t.File, it.data.entryOffset(), it.data.name, "a value or a deletion (ckpt does not apply RocksDB merge operands: transformWithState list state)", "a merge operand")
				e.Err = ErrUnsupported
				it.err = it.numbered(e)
				return false
			default:
				it.err = it.numbered(errf(it.t.File, it.data.entryOffset(), it.data.name, "a value or a deletion", "%s", it.Kind))
				return false
			}
			it.entries++
			return true
		}
		if it.data.err != nil {
			it.err = it.numbered(it.data.err)
			return false
		}
		h, ok, err := it.nextDataHandle()
		if err != nil {
			it.err = err
			return false
		}
		if !ok {
			it.done = true
			p := it.t.Properties
			if p.found && it.entries != p.NumEntries {
				it.err = errf(it.t.File, -1, "data blocks", "rocksdb.num.entries="+strconv.FormatUint(p.NumEntries, 10)+" entries", "%d (entries are missing)", it.entries)
				return false
			}
			return false
		}
		// The block's number goes into its errors only (no string built per block).
		it.blocks++
		b, err := it.t.block(h, "data block", &it.buf)
		if err != nil {
			it.err = it.numbered(err)
			return false
		}
		if err := it.data.reset(it.t.File, b, int64(h.Offset), "data block", false, false); err != nil {
			it.err = it.numbered(err)
			return false
		}
		it.inData = true
	}
}

// numbered names the current data block by its number in err.
func (it *Iter) numbered(err error) error {
	if e, ok := err.(*Error); ok && e.Block == "data block" {
		e.Block = "data block " + strconv.Itoa(it.blocks-1)
	}
	return err
}

// nextDataHandle is the next data block's handle from the index.
func (it *Iter) nextDataHandle() (Handle, bool, error) {
	p := it.t.Properties
	if p.IndexType != IndexTwoLevel {
		return it.topHandle()
	}
	for {
		if it.inPart && it.part.next() {
			h, ok := it.part.indexHandle()
			if !ok {
				return h, false, errf(it.t.File, it.part.entryOffset(), it.part.name, "a data block handle", "bad varints")
			}
			return h, true, nil
		}
		if it.part.err != nil {
			return Handle{}, false, it.part.err
		}
		h, ok, err := it.topHandle()
		if err != nil || !ok {
			return h, false, err
		}
		b, err := it.t.block(h, "index partition", &it.pbuf)
		if err != nil {
			return h, false, err
		}
		if err := it.part.reset(it.t.File, b, int64(h.Offset), "index partition", p.IndexValueIsDeltaEncoded, false); err != nil {
			return h, false, err
		}
		it.inPart = true
	}
}

// Table is the table the iterator walks.
func (it *Iter) Table() *Table { return it.t }
