package statefmt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/pierrec/lz4/v4"
)

// RocksDB's file numbers in a version ckpt writes, as Spark 4.2.0's own repartition numbers
// the single SST file of a new store (its MANIFEST-000005 names 000008.sst, next file 9).
const (
	rocksManifestNumber = 5
	rocksSSTNumber      = 8
)

// RocksDBWriter writes one version of a RocksDB state store partition from its rows: one SST
// file holding every key (lz4 blocks, Spark's default spark.sql.streaming.stateStore.rocksdb.
// compression), and the checkpoint zip that names it (Spark's metadata, with RocksDB's
// CURRENT and a MANIFEST describing the file). Put the rows in ascending key order.
type RocksDBWriter struct {
	sst   sstable.Writer
	seq   uint64
	key   []byte
	value []byte
	last  []byte
}

// NewRocksDBWriter starts a version.
func NewRocksDBWriter() *RocksDBWriter {
	return &RocksDBWriter{sst: sstable.Writer{Compression: sstable.LZ4Compression, Compress: newSSTLZ4(), CompressIndex: true}}
}

// newSSTLZ4 is SSTLZ4 with one compressor and output buffer for every block (the writer
// uses a block's bytes before it compresses the next): a compressor's table, allocated and
// cleared for each 4 KiB block, was a third of a repartition's CPU time.
func newSSTLZ4() func([]byte) []byte {
	var c lz4.Compressor
	var dst []byte
	return func(src []byte) []byte {
		if n := lz4.CompressBlockBound(len(src)); cap(dst) < n {
			dst = make([]byte, n)
		}
		n, err := c.CompressBlock(src, dst[:cap(dst)])
		if err != nil || n == 0 {
			return nil
		}
		return dst[:n]
	}
}

// NewRocksDBWriterTo starts a version whose SST file is written to sst as it is built (a
// partition of gigabytes is not held in memory): Finish's version then has no SST bytes, only
// SSTSize. The bytes are those NewRocksDBWriter's Finish returns, unless the table's index
// outgrows 1 MiB and indexSpill (may be nil) takes it: the index is then written uncompressed
// (sstable.Writer.IndexSpill).
func NewRocksDBWriterTo(sst io.Writer, indexSpill io.ReadWriteSeeker) *RocksDBWriter {
	w := NewRocksDBWriter()
	w.sst.Out = sst
	if indexSpill != nil {
		w.sst.IndexSpill, w.sst.IndexHeld = indexSpill, 1<<20
	}
	return w
}

// Put adds a row: key and value are UnsafeRows; each is stored after RocksDB's encoding
// version byte (0) as Spark's RocksDBStateEncoder writes it. Keys must ascend strictly in byte
// order.
func (w *RocksDBWriter) Put(key, value []byte) error {
	if w.seq > 0 && bytes.Compare(w.last, key) >= 0 {
		return fmt.Errorf("RocksDB state writer: key %d (%x) is not after key %x: rows must come in ascending key order", w.seq+1, key, w.last)
	}
	w.last = append(w.last[:0], key...)
	w.seq++
	w.key = append(append(w.key[:0], 0), key...)
	w.value = append(append(w.value[:0], 0), value...)
	return w.sst.Add(w.key, w.seq, sstable.KindValue, w.value)
}

// RocksDBVersion is a written version: the SST file for the partition's SSTs/ directory and
// the N.zip that names it.
type RocksDBVersion struct {
	SSTName string // the file's name under SSTs/: 000008-<uuid>.sst
	SST     []byte // nil when the file was written to NewRocksDBWriterTo's writer
	SSTSize int64
	Zip     []byte
	NumKeys int64
}

// RocksDBSSTName is the name under SSTs/ of the SST file a version names by uuid.
func RocksDBSSTName(uuid string) string { return fmt.Sprintf("%06d-%s.sst", rocksSSTNumber, uuid) }

// Finish ends the version. uuid names the SST file in SSTs/ (Spark's <number>-<uuid>.sst; it
// must be new in the directory); sparkLine ("3.5", "4.0", ...) picks the metadata fields that
// release writes.
func (w *RocksDBWriter) Finish(uuid, sparkLine string) (*RocksDBVersion, error) {
	meta := w.sst.Meta()
	v := &RocksDBVersion{SSTName: RocksDBSSTName(uuid), NumKeys: int64(w.seq)}
	if w.sst.Out != nil {
		size, err := w.sst.Close()
		if err != nil {
			return nil, fmt.Errorf("RocksDB state writer: writing %s: %w", v.SSTName, err)
		}
		v.SSTSize = int64(size)
	} else {
		v.SST = w.sst.Finish()
		v.SSTSize = int64(len(v.SST))
	}
	var files []RocksDBSST
	var list []RocksDBFile
	if w.seq > 0 {
		files = append(files, RocksDBSST{Number: rocksSSTNumber, Size: uint64(v.SSTSize), Meta: meta})
		list = append(list, RocksDBFile{LocalFileName: fmt.Sprintf("%06d.sst", rocksSSTNumber), DFSSSTFileName: v.SSTName, SizeBytes: v.SSTSize})
	}
	manifest := RocksDBManifest(files, w.seq, rocksSSTNumber+1)
	var zb bytes.Buffer
	if err := WriteRocksDBZip(&zb, sparkLine, list, v.NumKeys, rocksManifestNumber, manifest); err != nil {
		return nil, err
	}
	v.Zip = zb.Bytes()
	return v, nil
}

// SSTLZ4 compresses an SST block as RocksDB's LZ4 compression does (one raw lz4 block; the
// sstable writer frames it), or returns nil when it cannot.
func SSTLZ4(src []byte) []byte {
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	var c lz4.Compressor
	n, err := c.CompressBlock(src, dst)
	if err != nil || n == 0 {
		return nil
	}
	return dst[:n]
}

// RocksDBSST is one table of a MANIFEST: its file number and size and what the writer saw.
type RocksDBSST struct {
	Number uint64
	Size   uint64
	Meta   sstable.FileMeta
}

// VersionEdit tags of RocksDB's MANIFEST (db/version_edit.h).
const (
	editComparator     = 1
	editLogNumber      = 2
	editNextFileNumber = 3
	editLastSequence   = 4
	editPrevLogNumber  = 9
	editNewFile4       = 103
	newFileTerminate   = 1
)

// RocksDBManifest is a MANIFEST (RocksDB's log format) of one version edit holding the
// default column family's tables, all at level 0 (each may overlap the others), the bytewise
// comparator, no write-ahead log, and lastSeq and nextFile as the database's last sequence
// number and next file number (above every table's and the MANIFEST's own).
func RocksDBManifest(files []RocksDBSST, lastSeq, nextFile uint64) []byte {
	var e []byte
	str := func(b []byte) { e = binary.AppendUvarint(e, uint64(len(b))); e = append(e, b...) }
	e = binary.AppendUvarint(e, editComparator)
	str([]byte("leveldb.BytewiseComparator"))
	e = binary.AppendUvarint(e, editLogNumber)
	e = binary.AppendUvarint(e, 0)
	e = binary.AppendUvarint(e, editPrevLogNumber)
	e = binary.AppendUvarint(e, 0)
	e = binary.AppendUvarint(e, editNextFileNumber)
	e = binary.AppendUvarint(e, nextFile)
	e = binary.AppendUvarint(e, editLastSequence)
	e = binary.AppendUvarint(e, lastSeq)
	for _, f := range files {
		e = binary.AppendUvarint(e, editNewFile4)
		e = binary.AppendUvarint(e, 0) // level
		e = binary.AppendUvarint(e, f.Number)
		e = binary.AppendUvarint(e, f.Size)
		str(f.Meta.Smallest)
		str(f.Meta.Largest)
		e = binary.AppendUvarint(e, f.Meta.SmallestSeq)
		e = binary.AppendUvarint(e, f.Meta.LargestSeq)
		e = binary.AppendUvarint(e, newFileTerminate)
	}
	return appendLogRecord(nil, e)
}

// RocksDB's log format: 32 KiB blocks of records, each a masked crc32c of its type and data,
// a 2-byte length and a type (full, first, middle, last); a block's tail shorter than a
// header is zeros.
const (
	logBlockSize  = 32 << 10
	logHeaderLen  = 7
	logFullType   = 1
	logFirstType  = 2
	logMiddleType = 3
	logLastType   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendLogRecord(out, data []byte) []byte {
	first := true
	for {
		left := logBlockSize - len(out)%logBlockSize
		if left < logHeaderLen {
			out = append(out, make([]byte, left)...)
			left = logBlockSize
		}
		n := min(len(data), left-logHeaderLen)
		end := n == len(data)
		typ := byte(logMiddleType)
		switch {
		case first && end:
			typ = logFullType
		case first:
			typ = logFirstType
		case end:
			typ = logLastType
		}
		c := crc32.Update(crc32.Checksum([]byte{typ}, castagnoli), castagnoli, data[:n])
		out = binary.LittleEndian.AppendUint32(out, (c>>15|c<<17)+0xa282ead8)
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
		out = append(out, typ)
		out = append(out, data[:n]...)
		data, first = data[n:], false
		if end {
			return out
		}
	}
}

// WriteRocksDBZip writes a RocksDB checkpoint zip as Spark's RocksDBFileManager does: the
// metadata entry ("v1" and the JSON naming the SST files; Spark 4.0+ adds its column family
// fields, empty for a store without them), CURRENT naming MANIFEST-<manifestNumber>, and that
// MANIFEST. RocksDB's OPTIONS file and empty write-ahead log, which Spark also zips, are left
// out: Spark loads the version without them (TestSparkLiveRocksDBWriter).
func WriteRocksDBZip(w io.Writer, sparkLine string, files []RocksDBFile, numKeys int64, manifestNumber uint64, manifest []byte) error {
	if files == nil {
		files = []RocksDBFile{}
	}
	var meta any = struct {
		SSTFiles []RocksDBFile `json:"sstFiles"`
		NumKeys  int64         `json:"numKeys"`
	}{files, numKeys}
	if sparkLine != "3.5" {
		meta = struct {
			SSTFiles            []RocksDBFile  `json:"sstFiles"`
			NumKeys             int64          `json:"numKeys"`
			NumInternalKeys     int64          `json:"numInternalKeys"`
			ColumnFamilyMapping map[string]int `json:"columnFamilyMapping"`
			ColumnFamilyTypeMap map[string]int `json:"columnFamilyTypeMap"`
			MaxColumnFamilyID   int            `json:"maxColumnFamilyId"`
		}{files, numKeys, 0, map[string]int{}, map[string]int{}, 0}
	}
	j, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("MANIFEST-%06d", manifestNumber)
	zw := zip.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{name, manifest},
		{"CURRENT", []byte(name + "\n")},
		{"metadata", append([]byte("v1\n"), j...)},
	} {
		f, err := zw.Create(e.name)
		if err != nil {
			return err
		}
		if _, err := f.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}
