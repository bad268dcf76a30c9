package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// decompress decodes the raw blocks of Spark's SST files with the codec libraries statefmt
// uses (statefmt imports this package for its writer, so the test cannot import statefmt).
func decompress(c Compression, dst, src []byte) ([]byte, error) {
	switch c {
	case LZ4Compression, LZ4HCCompression:
		n, err := lz4.UncompressBlock(src, dst)
		return dst[:n], err
	case SnappyCompression:
		return snappy.Decode(nil, src)
	case ZSTDCompression:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(src, dst[:0])
	}
	return nil, fmt.Errorf("compression %v", c)
}

// fixtureSSTs are SST files real Spark (RocksDB JNI 8.x and 9.x) wrote (testdata/spark-state).
func fixtureSSTs(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/spark-state/*/*rocksdb*/checkpoint/state/*/*/SSTs/*.sst")
	if err != nil || len(files) < 10 {
		t.Fatalf("no SST fixtures: %v", err)
	}
	return files
}

type entry struct {
	key   string
	seq   uint64
	kind  Kind
	value string
}

// readAll reads the table in data with Open, and checks that OpenReaderAt (a block at a time)
// reads the same entries and fails with the same error.
func readAll(t *testing.T, name string, data []byte) (*Table, []entry, error) {
	t.Helper()
	tb, out, err := readTable(Open(name, data, Options{Decompress: decompress}))
	_, out2, err2 := readTable(OpenReaderAt(name, bytes.NewReader(data), int64(len(data)), Options{Decompress: decompress}))
	if fmt.Sprint(err) != fmt.Sprint(err2) || !slices.Equal(out, out2) {
		t.Errorf("%s: OpenReaderAt read %d entries (error %v), Open %d (error %v)", name, len(out2), err2, len(out), err)
	}
	// Again with every index of any size streamed 5 bytes at a time (uncompressed) or kept
	// as a list of handles (compressed).
	defer streamed(0, 5)()
	_, out3, err3 := readTable(OpenReaderAt(name, bytes.NewReader(data), int64(len(data)), Options{Decompress: decompress}))
	if fmt.Sprint(err) != fmt.Sprint(err3) || !slices.Equal(out, out3) {
		t.Errorf("%s: the index streamed or as handles read %d entries (error %v), Open %d (error %v)", name, len(out3), err3, len(out), err)
	}
	return tb, out, err
}

// streamed makes OpenReaderAt's tables stream index blocks of min bytes or more, chunk bytes at
// a time, until the returned func is called.
func streamed(min uint64, chunk int) func() {
	m, c := streamMin, indexChunk
	streamMin, indexChunk = min, chunk
	return func() { streamMin, indexChunk = m, c }
}

func readTable(tb *Table, err error) (*Table, []entry, error) {
	if err != nil {
		return nil, nil, err
	}
	var out []entry
	it := tb.Iter()
	for it.Next() {
		out = append(out, entry{string(it.UserKey), it.Seq, it.Kind, string(it.Value)})
	}
	return tb, out, it.Err()
}

// TestFixtureSSTs reads every SST file Spark wrote: the footer is format version 5 (Spark's
// default; 6 in the -fv6- case) with crc32c (RocksDB JNI 8, Spark 3.5, snappy blocks) or XXH3
// (JNI 9, Spark 4, lz4 or zstd blocks), every block's checksum holds, the entries are as many as
// the properties say and in RocksDB's order (user key ascending, newest first), and each key and
// value is Spark's encoding (a version byte 0, then an UnsafeRow of 8-byte words).
func TestFixtureSSTs(t *testing.T) {
	for _, f := range fixtureSSTs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tb, es, err := readAll(t, f, data)
		if err != nil {
			t.Fatalf("%v", err)
		}
		v6 := strings.Contains(f, "-fv6-")
		if (tb.Footer.FormatVersion == 6) != v6 || (!v6 && tb.Footer.FormatVersion != 5) || (tb.Footer.Checksum != ChecksumCRC32C && tb.Footer.Checksum != ChecksumXXH3) {
			t.Errorf("%s: footer %+v", f, tb.Footer)
		}
		if v6 && (tb.Footer.BaseContextChecksum == 0 || tb.Properties.Compression != "ZSTD") {
			t.Errorf("%s: format 6 footer %+v, compression %s: want context checksums and zstd", f, tb.Footer, tb.Properties.Compression)
		}
		if uint64(len(es)) != tb.Properties.NumEntries || len(es) == 0 {
			t.Errorf("%s: %d entries, properties say %d", f, len(es), tb.Properties.NumEntries)
		}
		for i, e := range es {
			if i > 0 && (es[i-1].key > e.key || (es[i-1].key == e.key && es[i-1].seq <= e.seq)) {
				t.Errorf("%s: entry %d out of order", f, i)
			}
			if e.key[0] != 0 || (len(e.key)-1)%8 != 0 || (e.kind == KindValue && (e.value[0] != 0 || (len(e.value)-1)%8 != 0)) {
				t.Errorf("%s: entry %d is not a Spark-encoded UnsafeRow: %x", f, i, e.key)
			}
		}
	}
}

// TestCorruptFixture: a flipped byte in a data block, a wrong magic, a truncated file each
// give an *Error naming the file, the offset and the block.
func TestCorruptFixture(t *testing.T) {
	files := fixtureSSTs(t)
	// The first is Spark 3.5's (crc32c), the last Spark 4.1's (XXH3).
	for _, f := range []string{files[0], files[len(files)-1]} {
		corrupt(t, f)
	}
}

func corrupt(t *testing.T, f string) {
	good, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := readAll(t, f, good)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"data block byte", func(b []byte) []byte { b[3] ^= 0x40; return b }, "offset 0 (data block 0): expected the block checksum"},
		{"magic", func(b []byte) []byte { b[len(b)-1] = 0; return b }, "(footer): expected the block-based table magic 0x88e241b785f4cff7"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }, "expected the block-based table magic"},
		{"tiny", func(b []byte) []byte { return b[:20] }, "expected a table of at least 48 bytes"},
		{"index checksum", func(b []byte) []byte { b[tb.Footer.Index.Offset+1] ^= 1; return b }, "(index block): expected the block checksum"},
		{"format version", func(b []byte) []byte { b[len(b)-12] = 9; return b }, "expected a block-based table format version 0-7, got 9"},
	}
	for _, c := range cases {
		b := c.edit(bytes.Clone(good))
		_, _, err := readAll(t, "x.sst", b)
		var se *Error
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "x.sst: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an *Error with %q", c.name, err, c.want)
		}
	}
}

// builder writes small uncompressed tables, to cover what Spark's settings do not produce:
// index restart intervals with delta-encoded handles, two-level indexes, the legacy footer,
// hash-indexed data blocks and the entry kinds.
type builder struct {
	buf           bytes.Buffer
	legacy        bool
	version       uint32
	deltaIndex    bool
	twoLevel      bool
	hashIndex     bool
	indexInterval int
}

type kv struct{ k, v string }

// block encodes entries with a restart point every interval entries.
func encodeBlock(entries []kv, interval int, deltaHandles []Handle, hash bool) []byte {
	var b, rst []byte
	prev := ""
	for i, e := range entries {
		shared := 0
		if i%interval == 0 {
			rst = binary.LittleEndian.AppendUint32(rst, uint32(len(b)))
		} else {
			for shared < len(prev) && shared < len(e.k) && prev[shared] == e.k[shared] {
				shared++
			}
		}
		b = binary.AppendUvarint(b, uint64(shared))
		b = binary.AppendUvarint(b, uint64(len(e.k)-shared))
		if deltaHandles == nil {
			b = binary.AppendUvarint(b, uint64(len(e.v)))
			b = append(b, e.k[shared:]...)
			b = append(b, e.v...)
		} else {
			b = append(b, e.k[shared:]...)
			h := deltaHandles[i]
			if i%interval == 0 {
				b = binary.AppendUvarint(b, h.Offset)
				b = binary.AppendUvarint(b, h.Size)
			} else {
				d := int64(h.Size) - int64(deltaHandles[i-1].Size)
				b = binary.AppendUvarint(b, uint64(d<<1)^uint64(d>>63))
			}
		}
		prev = e.k
	}
	b = append(b, rst...)
	n := uint32(len(rst) / 4)
	if hash {
		b = append(b, 7, 7, 7) // three buckets
		b = binary.LittleEndian.AppendUint16(b, 3)
		n |= 1 << 31
	}
	return binary.LittleEndian.AppendUint32(b, n)
}

func (w *builder) write(block []byte) Handle {
	h := Handle{Offset: uint64(w.buf.Len()), Size: uint64(len(block))}
	w.buf.Write(block)
	c := crc32.Update(crc32.Checksum(block, crc32c), crc32c, []byte{0})
	w.buf.WriteByte(0)
	w.buf.Write(binary.LittleEndian.AppendUint32(nil, maskCRC(c)))
	return h
}

func ikey(k string, seq uint64, kind Kind) string {
	return k + string(binary.LittleEndian.AppendUint64(nil, seq<<8|uint64(kind)))
}

func handleValue(h Handle) string {
	return string(binary.AppendUvarint(binary.AppendUvarint(nil, h.Offset), h.Size))
}

// build writes one data block per element of blocks.
func (w *builder) build(blocks [][]kv) []byte {
	var idx []kv
	var hs []Handle
	n := 0
	for _, es := range blocks {
		h := w.write(encodeBlock(es, 2, nil, w.hashIndex))
		idx = append(idx, kv{es[len(es)-1].k, handleValue(h)})
		hs = append(hs, h)
		n += len(es)
	}
	indexBlock := func(idx []kv, hs []Handle) []byte {
		if w.deltaIndex {
			return encodeBlock(idx, w.indexInterval, hs, false)
		}
		return encodeBlock(idx, w.indexInterval, nil, false)
	}
	var index Handle
	if w.twoLevel {
		var top []kv
		var ths []Handle
		for i := 0; i < len(idx); i += 2 {
			j := min(i+2, len(idx))
			h := w.write(indexBlock(idx[i:j], hs[i:j]))
			top = append(top, kv{idx[j-1].k, handleValue(h)})
			ths = append(ths, h)
		}
		index = w.write(indexBlock(top, ths))
	} else {
		index = w.write(indexBlock(idx, hs))
	}
	props := []kv{{"rocksdb.comparator", "leveldb.BytewiseComparator"}, {"rocksdb.num.entries", string(binary.AppendUvarint(nil, uint64(n)))}}
	if w.twoLevel {
		props = append([]kv{{"rocksdb.block.based.table.index.type", string(binary.LittleEndian.AppendUint32(nil, IndexTwoLevel))}}, props...)
	}
	if w.deltaIndex {
		props = append(props, kv{"rocksdb.index.value.is.delta.encoded", "\x01"})
	}
	ph := w.write(encodeBlock(props, 1, nil, false))
	meta := w.write(encodeBlock([]kv{{"rocksdb.properties", handleValue(ph)}}, 1, nil, false))
	var foot []byte
	if !w.legacy {
		foot = append(foot, byte(ChecksumCRC32C))
	}
	hb := append(binary.AppendUvarint(binary.AppendUvarint(nil, meta.Offset), meta.Size), handleValue(index)...)
	foot = append(foot, hb...)
	foot = append(foot, make([]byte, 40-len(hb))...)
	if w.legacy {
		foot = binary.LittleEndian.AppendUint64(foot, LegacyMagic)
	} else {
		foot = binary.LittleEndian.AppendUint32(foot, w.version)
		foot = binary.LittleEndian.AppendUint64(foot, Magic)
	}
	w.buf.Write(foot)
	return w.buf.Bytes()
}

func TestBuiltTables(t *testing.T) {
	blocks := [][]kv{
		{{ikey("a", 9, KindValue), "A9"}, {ikey("a", 3, KindValue), "A3"}, {ikey("ab", 4, KindDeletion), ""}},
		{{ikey("abc", 5, KindSingleDeletion), ""}, {ikey("b", 1, KindValue), "B1"}},
		{{ikey("c", 2, KindValue), "a longer value of the key c"}},
		{{ikey("d", 2, KindValue), "D"}, {ikey("e", 8, KindValue), "E"}, {ikey("f", 7, KindValue), "F"}},
	}
	want := "a/9/value/A9 a/3/value/A3 ab/4/deletion/ abc/5/single deletion/ b/1/value/B1 c/2/value/a longer value of the key c d/2/value/D e/8/value/E f/7/value/F"
	for _, w := range []*builder{
		{version: 5, deltaIndex: true, indexInterval: 3},
		{version: 5, deltaIndex: true, indexInterval: 1, twoLevel: true},
		{version: 4, deltaIndex: true, indexInterval: 2, twoLevel: true, hashIndex: true},
		{version: 2, indexInterval: 16},
		{legacy: true, indexInterval: 1},
	} {
		data := w.build(blocks)
		_, es, err := readAll(t, "t.sst", data)
		if err != nil {
			t.Fatalf("%+v: %v", w, err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.key+"/"+strconv.FormatUint(e.seq, 10)+"/"+e.kind.String()+"/"+e.value)
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%+v:\n got %s\nwant %s", w, g, want)
		}
	}
	// A merge operand (transformWithState's list state) is refused by name.
	w := &builder{version: 5, indexInterval: 1}
	_, _, err := readAll(t, "m.sst", w.build([][]kv{{{ikey("a", 1, KindMerge), "x"}}}))
	if err == nil || !strings.Contains(err.Error(), "merge operand") {
		t.Errorf("merge: %v", err)
	}
}

// FuzzSSTable: any bytes give a table or an *Error, never a panic or a runaway allocation;
// the seeds are Spark's own SST files.
func FuzzSSTable(f *testing.F) {
	// One file per fixture: snappy and crc32c (Spark 3.5), lz4 and XXH3 (Spark 4), format 6.
	files, _ := filepath.Glob("../../testdata/spark-state/*/*rocksdb*/checkpoint/state/0/0/SSTs/*.sst")
	seen := map[string]bool{}
	for _, p := range files {
		dir := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(p)))))
		if seen[dir] {
			continue
		}
		seen[dir] = true
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// A table with an uncompressed index of delta-encoded handles, which OpenReaderAt streams.
	f.Add((&builder{version: 5, deltaIndex: true, indexInterval: 3}).build([][]kv{
		{{ikey("a", 9, KindValue), "A9"}, {ikey("a", 3, KindValue), "A3"}},
		{{ikey("b", 1, KindValue), "B1"}}, {{ikey("c", 2, KindValue), "C"}}, {{ikey("d", 2, KindValue), "D"}},
	}))
	f.Fuzz(func(t *testing.T, data []byte) {
		count := func(tb *Table, err error) (int, error) {
			n := 0
			if err == nil {
				it := tb.Iter()
				for it.Next() {
					n++
				}
				err = it.Err()
			}
			var se *Error
			if err != nil && !errors.As(err, &se) {
				t.Fatalf("not an *Error: %v", err)
			}
			return n, err
		}
		n, err := count(Open("f.sst", data, Options{Decompress: decompress}))
		// The index streamed 3 bytes at a time reads the same entries, or fails the same way.
		defer streamed(0, 3)()
		n2, err2 := count(OpenReaderAt("f.sst", bytes.NewReader(data), int64(len(data)), Options{Decompress: decompress}))
		if n != n2 || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("whole index: %d entries, %v; streamed: %d, %v", n, err, n2, err2)
		}
	})
}

// lz4Block compresses as RocksDB's LZ4 blocks are (a raw lz4 block).
func lz4Block(src []byte) []byte {
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	n, err := lz4.CompressBlock(src, dst, nil)
	if err != nil || n == 0 {
		return nil
	}
	return dst[:n]
}

// TestWriter: what Writer builds (many lz4 blocks, the index compressed or not) reads back
// entry for entry, its index read whole, streamed or kept as handles (readAll).
func TestWriter(t *testing.T) {
	for _, ci := range []bool{false, true} {
		testWriter(t, &Writer{Compression: LZ4Compression, Compress: lz4Block, BlockSize: 512, CompressIndex: ci})
	}
}

func testWriter(t *testing.T, w *Writer) {
	var want []string
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("key-%06d", i)
		v := strings.Repeat(fmt.Sprint(i%7), 20+i%50)
		kind := KindValue
		if i%10 == 3 {
			kind, v = KindDeletion, ""
		}
		if err := w.Add([]byte(k), uint64(10_000-i), kind, []byte(v)); err != nil {
			t.Fatal(err)
		}
		want = append(want, k+"/"+kind.String()+"/"+v)
	}
	tb, es, err := readAll(t, "w.sst", w.Finish())
	if err != nil {
		t.Fatal(err)
	}
	if tb.Properties.NumDataBlocks < 50 {
		t.Errorf("%d data blocks", tb.Properties.NumDataBlocks)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.key+"/"+e.kind.String()+"/"+e.value)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read %d entries, wrote %d", len(got), len(want))
	}
}

// TestWriterRewritesSparkSSTs: every SST file Spark wrote, its entries added to a Writer as
// they are (user key, seqno, kind, value), reads back as the same entries in the same order,
// and the writer's FileMeta names the first and last internal keys and the seqno range.
func TestWriterRewritesSparkSSTs(t *testing.T) {
	for _, f := range fixtureSSTs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, want, err := readAll(t, f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		w := &Writer{Compression: LZ4Compression, Compress: lz4Block, CompressIndex: true}
		lo, hi := ^uint64(0), uint64(0)
		for _, e := range want {
			if err := w.Add([]byte(e.key), e.seq, e.kind, []byte(e.value)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			lo, hi = min(lo, e.seq), max(hi, e.seq)
		}
		m := w.Meta()
		_, got, err := readAll(t, "w.sst", w.Finish())
		if err != nil {
			t.Fatalf("%s rewritten: %v", f, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s rewritten: %d entries read back, %d written", f, len(got), len(want))
		}
		first, last := want[0], want[len(want)-1]
		ik := func(k string, seq uint64, kind Kind) []byte {
			return binary.LittleEndian.AppendUint64([]byte(k), seq<<8|uint64(kind))
		}
		if !bytes.Equal(m.Smallest, ik(first.key, first.seq, first.kind)) || !bytes.Equal(m.Largest, ik(last.key, last.seq, last.kind)) ||
			m.SmallestSeq != lo || m.LargestSeq != hi || m.Entries != uint64(len(want)) {
			t.Errorf("%s: meta %+v", f, m)
		}
	}
}

// TestWriterRefuses: entries out of RocksDB's order (a smaller user key, the same user key with
// a sequence number that is not smaller), a seqno above 56 bits and a merge operand.
func TestWriterRefuses(t *testing.T) {
	for name, add := range map[string]func(w *Writer) error{
		"smaller key":     func(w *Writer) error { return w.Add([]byte("a"), 1, KindValue, nil) },
		"same seqno":      func(w *Writer) error { return w.Add([]byte("b"), 5, KindValue, nil) },
		"newer same key":  func(w *Writer) error { return w.Add([]byte("b"), 6, KindDeletion, nil) },
		"seqno too large": func(w *Writer) error { return w.Add([]byte("c"), 1<<56, KindValue, nil) },
		"merge":           func(w *Writer) error { return w.Add([]byte("c"), 1, KindMerge, nil) },
	} {
		w := &Writer{}
		if err := w.Add([]byte("b"), 5, KindValue, []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := add(w); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if err := w.Add([]byte("b"), 4, KindDeletion, nil); err != nil {
			t.Errorf("%s: then an older entry of the same key: %v", name, err)
		}
	}
}

// FuzzWriter: any entries in RocksDB's order (keys and values cut from the input, block size
// and compression from its first bytes) read back as written.
func FuzzWriter(f *testing.F) {
	f.Add([]byte("\x10\x01key-a,value-a;key-b,;key-c,vvvvvvvvvvvvvvvvvvvvvvvvv"))
	f.Add(bytes.Repeat([]byte("k,v;"), 300))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		w := &Writer{BlockSize: 16 + int(in[0]), CompressIndex: in[1]&2 != 0}
		if in[1]&1 != 0 {
			w.Compression, w.Compress = LZ4Compression, lz4Block
		}
		var keys []string
		vals := map[string]string{}
		for _, kv := range bytes.Split(in[2:], []byte(";")) {
			k, v, _ := bytes.Cut(kv, []byte(","))
			if _, dup := vals[string(k)]; !dup {
				keys = append(keys, string(k))
				vals[string(k)] = string(v)
			}
		}
		slices.Sort(keys)
		var want []entry
		for i, k := range keys {
			kind := KindValue
			if len(vals[k])%5 == 4 {
				kind = KindDeletion
			}
			e := entry{key: k, seq: uint64(len(keys) - i), kind: kind, value: vals[k]}
			if err := w.Add([]byte(e.key), e.seq, e.kind, []byte(e.value)); err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
		}
		_, got, err := readAll(t, "fuzz.sst", w.Finish())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("read %d entries back, wrote %d", len(got), len(want))
		}
	})
}

// TestWriterStreamed: a Writer with Out writes, block by block, the bytes Finish returns for
// the same entries (Spark's SST files rewritten, and a table of many blocks with a compressed
// index), and Close reports the size, or Out's first error.
func TestWriterStreamed(t *testing.T) {
	for _, f := range fixtureSSTs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, es, err := readAll(t, f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		whole := &Writer{Compression: LZ4Compression, Compress: lz4Block, CompressIndex: true, BlockSize: 256}
		var out bytes.Buffer
		streamed := &Writer{Compression: LZ4Compression, Compress: lz4Block, CompressIndex: true, BlockSize: 256, Out: &out}
		for _, e := range es {
			for _, w := range []*Writer{whole, streamed} {
				if err := w.Add([]byte(e.key), e.seq, e.kind, []byte(e.value)); err != nil {
					t.Fatal(err)
				}
			}
		}
		want := whole.Finish()
		n, err := streamed.Close()
		if err != nil || n != uint64(len(want)) || !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: streamed %d bytes (%v), equal %v; in memory %d", f, n, err, bytes.Equal(out.Bytes(), want), len(want))
		}
	}
	w := &Writer{Out: failingWriter{}}
	if err := w.Add([]byte("k"), 1, KindValue, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close after a failed write: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestWriterSpilledIndex: a streamed table whose index spilled past IndexHeld (written
// uncompressed from the spill) reads back entry for entry, its index read whole, streamed or
// kept as handles; the same entries without the spill give the compressed index as before.
func TestWriterSpilledIndex(t *testing.T) {
	spill, err := os.CreateTemp(t.TempDir(), "index")
	if err != nil {
		t.Fatal(err)
	}
	defer spill.Close()
	var out bytes.Buffer
	w := &Writer{Compression: LZ4Compression, Compress: lz4Block, BlockSize: 512, CompressIndex: true, Out: &out, IndexSpill: spill, IndexHeld: 4096}
	var want []string
	for i := 0; i < 20000; i++ {
		k := fmt.Sprintf("key-%08d", i)
		v := strings.Repeat(fmt.Sprint(i%7), 20+i%50)
		if err := w.Add([]byte(k), uint64(100_000-i), KindValue, []byte(v)); err != nil {
			t.Fatal(err)
		}
		want = append(want, k+"/"+KindValue.String()+"/"+v)
	}
	n, err := w.Close()
	if err != nil || n != uint64(out.Len()) {
		t.Fatalf("close: %d bytes, %v; wrote %d", n, err, out.Len())
	}
	if fi, _ := spill.Stat(); fi.Size() < 40_000 {
		t.Fatalf("the index spilled %d bytes", fi.Size())
	}
	tb, es, err := readAll(t, "spilled.sst", out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.key+"/"+e.kind.String()+"/"+e.value)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || tb.Properties.NumDataBlocks < 1000 {
		t.Errorf("read %d entries of %d, %d blocks", len(got), len(want), tb.Properties.NumDataBlocks)
	}
}
