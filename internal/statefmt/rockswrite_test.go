package statefmt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/sstable"
)

// readLog reads RocksDB's log format back: the records, their fragments joined, every
// fragment's masked crc32c checked, no fragment crossing a 32 KiB block.
func readLog(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	var cur []byte
	for off := 0; off < len(b); {
		left := logBlockSize - off%logBlockSize
		if left < logHeaderLen {
			if !bytes.Equal(b[off:off+left], make([]byte, left)) {
				t.Fatalf("offset %d: a block's tail is not zeros", off)
			}
			off += left
			continue
		}
		n := int(binary.LittleEndian.Uint16(b[off+4:]))
		typ := b[off+6]
		if logHeaderLen+n > left {
			t.Fatalf("offset %d: a fragment of %d bytes crosses a block", off, n)
		}
		data := b[off+7 : off+7+n]
		c := crc32.Update(crc32.Checksum([]byte{typ}, castagnoli), castagnoli, data)
		if got := binary.LittleEndian.Uint32(b[off:]); got != (c>>15|c<<17)+0xa282ead8 {
			t.Fatalf("offset %d: checksum %x", off, got)
		}
		switch typ {
		case logFullType:
			out = append(out, bytes.Clone(data))
		case logFirstType:
			cur = bytes.Clone(data)
		case logMiddleType:
			cur = append(cur, data...)
		case logLastType:
			out = append(out, append(cur, data...))
		default:
			t.Fatalf("offset %d: record type %d", off, typ)
		}
		off += logHeaderLen + n
	}
	return out
}

// TestRocksDBManifestSpansBlocks: a MANIFEST of 3,000 tables (one edit of about 150 KiB) is
// one record in fragments over several 32 KiB blocks, which read back as the edit.
func TestRocksDBManifestSpansBlocks(t *testing.T) {
	var files []RocksDBSST
	for i := range 3000 {
		k := []byte(fmt.Sprintf("key-%06d-%s", i, strings.Repeat("x", 10)))
		ik := binary.LittleEndian.AppendUint64(k, uint64(i+1)<<8|1)
		files = append(files, RocksDBSST{Number: uint64(10 + i), Size: 1000, Meta: sstable.FileMeta{Smallest: ik, Largest: ik, SmallestSeq: uint64(i + 1), LargestSeq: uint64(i + 1)}})
	}
	m := RocksDBManifest(files, 3000, 4000)
	recs := readLog(t, m)
	if len(recs) != 1 || len(m) < 4*logBlockSize {
		t.Fatalf("%d records in %d bytes", len(recs), len(m))
	}
	if !bytes.Contains(recs[0], []byte("leveldb.BytewiseComparator")) || !bytes.Contains(recs[0], []byte("key-002999-")) {
		t.Errorf("the edit read back lacks the comparator or the last table")
	}
}

// TestRocksDBWriterRefusesOrder: rows out of key order, or a key twice, are refused.
func TestRocksDBWriterRefusesOrder(t *testing.T) {
	w := NewRocksDBWriter()
	if err := w.Put([]byte("b"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := w.Put([]byte(k), nil); err == nil {
			t.Errorf("key %q after \"b\" accepted", k)
		}
	}
}

// TestRocksDBWriterZip: the zip's metadata names the SST file with its size and the number of
// keys, in the fields of the release line (3.5: no column family fields), and CURRENT names
// the MANIFEST the zip holds.
func TestRocksDBWriterZip(t *testing.T) {
	for line, extra := range map[string]bool{"3.5": false, "4.1": true} {
		w := NewRocksDBWriter()
		for i := range 3 {
			if err := w.Put([]byte{byte(i)}, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		v, err := w.Finish("u-u-i-d", line)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := ParseRocksDBZip("5.zip", v.Zip)
		if err != nil {
			t.Fatal(err)
		}
		want := RocksDBFile{LocalFileName: "000008.sst", DFSSSTFileName: "000008-u-u-i-d.sst", SizeBytes: int64(len(v.SST))}
		if v.SSTName != want.DFSSSTFileName || len(cp.SSTFiles) != 1 || cp.SSTFiles[0] != want || cp.NumKeys != 3 || v.NumKeys != 3 {
			t.Errorf("%s: %+v", line, cp)
		}
		if got := strings.Join(cp.Entries, ","); got != "MANIFEST-000005,CURRENT" {
			t.Errorf("%s: entries %s", line, got)
		}
		zr, err := zip.NewReader(bytes.NewReader(v.Zip), int64(len(v.Zip)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			switch f.Name {
			case "metadata":
				if strings.Contains(string(b), `"columnFamilyMapping":{}`) != extra || !strings.HasPrefix(string(b), "v1\n{\"sstFiles\":[") {
					t.Errorf("%s: metadata %s", line, b)
				}
			case "CURRENT":
				if string(b) != "MANIFEST-000005\n" {
					t.Errorf("%s: CURRENT %q", line, b)
				}
			default:
				if recs := readLog(t, b); len(recs) != 1 {
					t.Errorf("%s: %d records in the MANIFEST", line, len(recs))
				}
			}
		}
	}
}

// TestRocksDBWriterTo: a version whose SST file streams to a writer has the bytes, size and
// zip of the same version held in memory.
func TestRocksDBWriterTo(t *testing.T) {
	var sst bytes.Buffer
	whole, streamed := NewRocksDBWriter(), NewRocksDBWriterTo(&sst, nil)
	for i := range 5000 {
		k := fmt.Appendf(nil, "key-%08d", i)
		v := bytes.Repeat([]byte{byte(i)}, i%40)
		for _, w := range []*RocksDBWriter{whole, streamed} {
			if err := w.Put(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, err := whole.Finish("u-u-i-d", "4.1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := streamed.Finish("u-u-i-d", "4.1")
	if err != nil {
		t.Fatal(err)
	}
	if b.SST != nil || b.SSTSize != a.SSTSize || a.SSTSize != int64(len(a.SST)) || !bytes.Equal(sst.Bytes(), a.SST) || !bytes.Equal(a.Zip, b.Zip) || a.SSTName != b.SSTName {
		t.Errorf("streamed: %d bytes (size %d), in memory %d; zips equal %v", sst.Len(), b.SSTSize, len(a.SST), bytes.Equal(a.Zip, b.Zip))
	}
}
