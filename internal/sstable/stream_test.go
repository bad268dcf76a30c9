package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

// indexHandles is every data block handle the table's index gives, in order.
func indexHandles(tb *Table) ([]Handle, error) {
	it := tb.Iter()
	if it.err != nil {
		return nil, it.err
	}
	var hs []Handle
	for {
		h, ok, err := it.nextDataHandle()
		if err != nil || !ok {
			return hs, err
		}
		hs = append(hs, h)
	}
}

// compareIndex checks that the index read a part at a time (chunk bytes) gives the handles, or
// the error, of the index read whole; it returns the latter.
func compareIndex(t *testing.T, name string, data []byte, chunk int) ([]Handle, error) {
	t.Helper()
	whole, err := Open(name, data, Options{Decompress: decompress})
	var want []Handle
	if err == nil {
		want, err = indexHandles(whole)
	}
	defer streamed(0, chunk)()
	tb, err2 := OpenReaderAt(name, bytes.NewReader(data), int64(len(data)), Options{Decompress: decompress})
	var got []Handle
	if err2 == nil {
		got, err2 = indexHandles(tb)
		h := tb.Footer.Index
		if it := tb.Iter(); it.err == nil && it.top.src == nil && Compression(data[h.Offset+h.Size]) == NoCompression {
			t.Errorf("%s: the index was not streamed", name)
		}
	}
	if fmt.Sprint(err) != fmt.Sprint(err2) || !slices.Equal(got, want) {
		t.Errorf("%s, chunks of %d: streamed %d handles (error %v), whole %d (error %v)", name, chunk, len(got), err2, len(want), err)
	}
	return want, err
}

// TestStreamedIndex: an index walked a part at a time gives the handles the whole index
// gives, on Spark's SST files (crc32c and XXH3 checksums, format versions 5 and 6), on tables
// with delta-encoded handles between restart points and on a large Writer table.
func TestStreamedIndex(t *testing.T) {
	for _, f := range fixtureSSTs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Spark's RocksDB compresses index blocks (enable_index_compression is on by default)
		// when that makes them smaller: the same index uncompressed is streamed.
		for _, d := range [][]byte{data, uncompressedIndex(t, f, data)} {
			for _, chunk := range []int{1, 7, 1 << 16} {
				if hs, err := compareIndex(t, f, d, chunk); err != nil || len(hs) == 0 {
					t.Errorf("%s: %d handles, %v", f, len(hs), err)
				}
			}
		}
	}
	blocks := [][]kv{
		{{ikey("a", 9, KindValue), "A9"}, {ikey("a", 3, KindValue), "A3"}},
		{{ikey("abc", 5, KindSingleDeletion), ""}, {ikey("b", 1, KindValue), "B1"}},
		{{ikey("c", 2, KindValue), "C"}}, {{ikey("d", 2, KindValue), "D"}}, {{ikey("e", 8, KindValue), "E"}},
	}
	for _, w := range []*builder{
		{version: 5, deltaIndex: true, indexInterval: 3},
		{version: 5, deltaIndex: true, indexInterval: 1, twoLevel: true},
		{version: 2, indexInterval: 16},
	} {
		for _, chunk := range []int{1, 3, 100} {
			bw := *w
			if hs, err := compareIndex(t, "b.sst", bw.build(blocks), chunk); err != nil || len(hs) != 5 {
				t.Errorf("%+v: %d handles, %v", w, len(hs), err)
			}
		}
	}
	data := bigTable()
	for _, chunk := range []int{13, 4096, 1 << 16} {
		if hs, err := compareIndex(t, "w.sst", data, chunk); err != nil || len(hs) < 1000 {
			t.Errorf("w.sst: %d handles, %v", len(hs), err)
		}
	}
	// At the default sizes the Writer table's index (over 256 KiB) is streamed.
	tb, err := OpenReaderAt("w.sst", bytes.NewReader(data), int64(len(data)), Options{Decompress: decompress})
	if err != nil {
		t.Fatal(err)
	}
	if it := tb.Iter(); it.top.src == nil || tb.Footer.Index.Size < streamMin {
		t.Errorf("an index of %d bytes was not streamed", tb.Footer.Index.Size)
	}
}

// bigTable is a Writer table of about 6,000 data blocks (an index of about 300 KB).
func bigTable() []byte {
	w := &Writer{BlockSize: 256}
	for i := 0; i < 60_000; i++ {
		w.Add([]byte(fmt.Sprintf("key-%020d-%08d", i, i*7)), uint64(i+1), KindValue, []byte("v"))
	}
	return w.Finish()
}

// TestStreamedIndexDamage: a damaged index read a part at a time fails as the whole index
// does, with an *Error naming the file, the entry's or block's offset and what was expected.
func TestStreamedIndexDamage(t *testing.T) {
	good := bigTable()
	tb, err := Open("w.sst", good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ih := tb.Footer.Index
	idx := good[ih.Offset : ih.Offset+ih.Size]
	// reseal recomputes the index block's crc32c, so that the damage is past the checksum.
	reseal := func(b []byte) []byte {
		blk := b[ih.Offset : ih.Offset+ih.Size]
		c := crc32.Update(crc32.Checksum(blk, crc32c), crc32c, []byte{0})
		binary.LittleEndian.PutUint32(b[ih.Offset+ih.Size+1:], maskCRC(c))
		return b
	}
	nrst := int(binary.LittleEndian.Uint32(idx[len(idx)-4:]))
	entries := len(idx) - 4 - 4*nrst
	// The 3000th entry: every index entry is a restart point.
	e := int(binary.LittleEndian.Uint32(idx[entries+4*3000:]))
	at := func(off int) string { return fmt.Sprintf("offset %d (index block)", int(ih.Offset)+off) }
	cases := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"flipped byte", func(b []byte) []byte { b[int(ih.Offset)+len(idx)/2] ^= 4; return b },
			fmt.Sprintf("offset %d (index block): expected the block checksum", ih.Offset)},
		{"key length past the block", func(b []byte) []byte {
			copy(b[int(ih.Offset)+e+1:], []byte{0xff, 0xff, 0x7f}) // 2 MiB of key
			return reseal(b)
		}, at(e) + ": expected a key within the block, got 2097151 bytes at"},
		{"shared bytes at a restart point", func(b []byte) []byte { b[int(ih.Offset)+e] = 3; return reseal(b) },
			at(e) + ": expected a shared key prefix within the previous key"},
		{"restart count", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[int(ih.Offset)+len(idx)-4:], uint32(len(idx)))
			return reseal(b)
		}, "expected 1 or more restart points within the block"},
		{"truncated handle", func(b []byte) []byte {
			// The last entry's handle varint made endless: it runs into the restart array.
			last := int(binary.LittleEndian.Uint32(idx[entries+4*(nrst-1):]))
			for i := int(ih.Offset) + last + 2 + int(idx[last+1]); i < int(ih.Offset)+entries; i++ {
				b[i] |= 0x80
			}
			return reseal(b)
		}, ": expected "},
	}
	for _, c := range cases {
		b := c.edit(bytes.Clone(good))
		for _, chunk := range []int{1, 64, 1 << 16} {
			_, err := compareIndex(t, "x.sst", b, chunk)
			var se *Error
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "x.sst: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: got %v, want an *Error with %q", c.name, err, c.want)
			}
		}
	}
}

// uncompressedIndex is a format version 5 table with its index block stored again,
// uncompressed, after its last block, and the footer pointing to it (data itself for other
// versions: format version 6 keeps the index handle in the metaindex).
func uncompressedIndex(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	tb, err := Open(name, data, Options{Decompress: decompress})
	if err != nil {
		t.Fatal(err)
	}
	f := tb.Footer
	if f.FormatVersion != 5 || f.Len != FooterLen {
		return data
	}
	idx, err := tb.block(f.Index, "index block", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(data[:len(data)-FooterLen])
	h := Handle{Offset: uint64(len(out)), Size: uint64(len(idx))}
	out = append(append(out, idx...), byte(NoCompression))
	switch f.Checksum {
	case ChecksumCRC32C:
		out = binary.LittleEndian.AppendUint32(out, maskCRC(crc32.Update(crc32.Checksum(idx, crc32c), crc32c, []byte{0})))
	case ChecksumXXH3:
		out = binary.LittleEndian.AppendUint32(out, uint32(xxh3(idx)))
	default:
		t.Fatalf("%s: checksum %s", name, f.Checksum)
	}
	hs := append(binary.AppendUvarint(binary.AppendUvarint(nil, f.MetaIndex.Offset), f.MetaIndex.Size), handleValue(h)...)
	out = append(append(out, byte(f.Checksum)), hs...)
	out = append(out, make([]byte, 40-len(hs))...)
	out = binary.LittleEndian.AppendUint32(out, 5)
	return binary.LittleEndian.AppendUint64(out, Magic)
}

// TestCompressedIndexScratch: of a large compressed index (Spark's SST files) only the block
// handles are held, and the buffer its compressed bytes were read into is not kept for the
// data blocks. (readAll compares the handles with the index's on every fixture.)
func TestCompressedIndexScratch(t *testing.T) {
	w := &Writer{BlockSize: 256, Compression: LZ4Compression, Compress: lz4Block, CompressIndex: true}
	for i := 0; i < 60_000; i++ {
		w.Add([]byte(fmt.Sprintf("key-%020d-%08d", i, i*7)), uint64(i+1), KindValue, []byte("v"))
	}
	data := w.Finish()
	tb, err := OpenReaderAt("c.sst", bytes.NewReader(data), int64(len(data)), Options{Decompress: decompress})
	if err != nil {
		t.Fatal(err)
	}
	h := tb.Footer.Index
	if Compression(data[h.Offset+h.Size]) != LZ4Compression || h.Size <= uint64(indexChunk) {
		t.Fatalf("the index is %d bytes, %s", h.Size, Compression(data[h.Offset+h.Size]))
	}
	it := tb.Iter()
	if it.top.src != nil || it.err != nil {
		t.Fatalf("a compressed index streamed, or %v", it.err)
	}
	// Its handles are kept, not its entries: about 3 bytes each.
	if it.handles == nil || it.top.data != nil || len(it.handles.b) > 4*int(tb.Properties.NumDataBlocks) {
		t.Errorf("the index's %d handles are not held compactly", tb.Properties.NumDataBlocks)
	}
	if c := cap(tb.scratch); c > indexChunk {
		t.Errorf("a %d-byte scratch buffer kept after the index", c)
	}
	n := 0
	for it.Next() {
		n++
	}
	if n != 60_000 || it.Err() != nil || cap(tb.scratch) > 4096 {
		t.Errorf("%d entries, %v, scratch %d bytes", n, it.Err(), cap(tb.scratch))
	}
}

// rangeReads is a ReaderAt that records the longest read overlapping [lo, hi).
type rangeReads struct {
	r       io.ReaderAt
	lo, hi  int64
	longest int
}

func (r *rangeReads) ReadAt(p []byte, off int64) (int, error) {
	if off < r.hi && off+int64(len(p)) > r.lo {
		r.longest = max(r.longest, len(p))
	}
	return r.r.ReadAt(p, off)
}

// indexReads opens data as OpenReaderAt does, walks its entries, and returns them with the
// longest read of its index block.
func indexReads(t *testing.T, name string, data []byte) ([]entry, int, error) {
	t.Helper()
	tb, err := Open(name, data, Options{Decompress: decompress})
	if err != nil {
		t.Fatal(err)
	}
	h := tb.Footer.Index
	rr := &rangeReads{r: bytes.NewReader(data), lo: int64(h.Offset), hi: int64(h.Offset + h.Size)}
	_, es, err := readTable(OpenReaderAt(name, rr, int64(len(data)), Options{Decompress: decompress}))
	return es, rr.longest, err
}

// TestCompressedIndexStreamed: a compressed index (lz4 or snappy, as Spark's RocksDB stores
// them) is decoded as a stream, a chunk at a time, never read whole: Spark's SST files and
// Writer tables with large lz4 and snappy indexes read the entries the whole read reads.
func TestCompressedIndexStreamed(t *testing.T) {
	type table struct {
		name string
		data []byte
	}
	var tables []table
	for _, typ := range []Compression{LZ4Compression, SnappyCompression} {
		w := &Writer{BlockSize: 256, Compression: typ, Compress: lz4Block, CompressIndex: true}
		if typ == SnappyCompression {
			w.Compress = snappyFragments
		}
		for i := 0; i < 60_000; i++ {
			w.Add([]byte(fmt.Sprintf("key-%020d-%08d", i, i*7)), uint64(i+1), KindValue, []byte("v"))
		}
		tables = append(tables, table{typ.String() + ".sst", w.Finish()})
	}
	for _, f := range fixtureSSTs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, table{f, data})
	}
	streamedTypes := map[Compression]int{}
	for _, c := range tables {
		tb, want, err := readTable(Open(c.name, c.data, Options{Decompress: decompress}))
		if err != nil {
			t.Fatal(err)
		}
		h := tb.Footer.Index
		typ := Compression(c.data[h.Offset+h.Size])
		for _, chunk := range []int{1, 13, 4096} {
			restore := streamed(0, chunk)
			got, longest, err := indexReads(t, c.name, c.data)
			restore()
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("%s, chunks of %d: %d entries (%v), want %d", c.name, chunk, len(got), err, len(want))
			}
			switch {
			case typ == NoCompression || typ == ZSTDCompression:
				// Uncompressed ones are read at offsets (TestStreamedIndex); zstd ones whole.
			case longest > max(chunk, trailerLen):
				t.Errorf("%s (%s index of %d bytes), chunks of %d: a read of %d bytes", c.name, typ, h.Size, chunk, longest)
			default:
				streamedTypes[typ]++
			}
		}
	}
	if streamedTypes[LZ4Compression] == 0 || streamedTypes[SnappyCompression] == 0 {
		t.Errorf("streamed indexes: %v; want lz4 and snappy ones", streamedTypes)
	}
	// At the default sizes, the large ones: no read of the index over 64 KiB.
	for _, c := range tables[:2] {
		if _, longest, err := indexReads(t, c.name, c.data); err != nil || longest > indexChunk {
			t.Errorf("%s: a read of %d bytes of the index, %v", c.name, longest, err)
		}
	}
}

// snappyFragments compresses as Google's snappy library (RocksDB's) does: 64 KiB fragments
// each compressed on its own, so that no copy reaches into an earlier one.
func snappyFragments(src []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(src)))
	for len(src) > 0 {
		n := min(len(src), 64<<10)
		enc := snappy.Encode(nil, src[:n])
		_, k := binary.Uvarint(enc)
		out = append(out, enc[k:]...)
		src = src[n:]
	}
	return out
}

// TestSnappyFarCopy: a snappy index whose copies reach back past 64 KiB (klauspost's encoder
// makes them; Google's, RocksDB's, does not) is read whole: the same entries.
func TestSnappyFarCopy(t *testing.T) {
	w := &Writer{BlockSize: 256, Compression: SnappyCompression, CompressIndex: true,
		Compress: func(b []byte) []byte { return snappy.Encode(nil, b) }}
	for i := 0; i < 60_000; i++ {
		w.Add([]byte(fmt.Sprintf("key-%020d-%08d", i, i*7)), uint64(i+1), KindValue, []byte("v"))
	}
	data := w.Finish()
	_, want, err := readTable(Open("s.sst", data, Options{Decompress: decompress}))
	if err != nil {
		t.Fatal(err)
	}
	got, longest, err := indexReads(t, "s.sst", data)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("%d entries (%v), want %d", len(got), err, len(want))
	}
	tb, _ := Open("s.sst", data, Options{})
	if h := tb.Footer.Index; longest != int(h.Size)+trailerLen {
		t.Errorf("the index (%d bytes) read in reads of at most %d bytes, not whole", h.Size, longest)
	}
}

// FuzzUnpack: the streamed decoder decodes any lz4 or snappy block as the whole-block codec
// does, or fails; it fails on a block the codec decodes only when a snappy copy reaches past
// its window. (Whenever it fails, the block is read whole: streamBlock.)
func FuzzUnpack(f *testing.F) {
	text := []byte(strings.Repeat("key-00000000000000000042-00000294 ", 300))
	f.Add(false, append(binary.AppendUvarint(nil, uint64(len(text))), lz4Block(text)...))
	f.Add(true, snappyFragments(text))
	f.Add(true, snappy.Encode(nil, text))
	f.Fuzz(func(t *testing.T, isSnappy bool, block []byte) {
		typ := LZ4Compression
		src := block
		var want []byte
		var werr error
		if isSnappy {
			typ = SnappyCompression
			want, werr = wholeSnappy(src)
		} else if v, n := binary.Uvarint(block); n > 0 && n <= 5 && v <= max(1<<20, 256*uint64(len(block))) {
			// As block does: the decoded bytes must be as many as the prefix says.
			if want, werr = wholeLZ4(make([]byte, v), block[n:]); werr == nil && uint64(len(want)) != v {
				werr = errUnpack
			}
		} else {
			werr = errUnpack
		}
		tb := &Table{File: "f.sst", r: bytes.NewReader(block), size: int64(len(block)), Footer: Footer{FormatVersion: 5}}
		defer streamed(0, 7)()
		var got []byte
		u, err := tb.newUnpacker(Handle{Size: uint64(len(block))}, typ, nil)
		if err == nil {
			got = make([]byte, u.size)
			if err = u.read(got, u.size); err == nil {
				err = u.finish()
			}
			if err == nil && !u.exhausted() {
				err = errUnpack
			}
		}
		switch {
		case err == nil && (werr != nil || !bytes.Equal(got, want)):
			t.Fatalf("streamed %d bytes, whole %d (%v)", len(got), len(want), werr)
		case err != nil && werr == nil && !errors.Is(err, errUnpackWindow) && len(want) > 0:
			// (An empty block is not streamed.)
			t.Fatalf("streamed: %v; whole: %d bytes", err, len(want))
		}
	})
}

// wholeSnappy and wholeLZ4 decode a block whole with the codecs' own libraries: the reference
// the streamed decoder is fuzzed against (statefmt, which does the same, imports sstable).
func wholeSnappy(src []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > 64*len(src)+64 {
		return nil, errUnpack
	}
	return snappy.Decode(make([]byte, n), src)
}

func wholeLZ4(dst, src []byte) ([]byte, error) {
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, err
	}
	return dst[:n], nil
}
