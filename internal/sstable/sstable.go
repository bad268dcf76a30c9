// Package sstable reads RocksDB's block-based table format (the SST files of Spark's RocksDB
// state store): the footer, the metaindex and properties blocks, the index (single level or
// partitioned, with delta-encoded handles) and the data blocks, each block checked against its
// trailer's checksum. It yields internal keys (user key, sequence number, kind) in file order.
// Writer builds the tables of ckpt's RocksDB state writer (package statefmt), in a layout every
// RocksDB of Spark's classpath reads.
//
// Like logformat it does no I/O and imports only the standard library: a table is read from
// and written to bytes, and compressed blocks go through the Decompressor (and the compressor)
// the caller gives (statefmt has the codecs). Every error is an *Error naming the file, the offset and block, and what was
// expected.
package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Magic numbers at the end of a block-based table.
const (
	// Magic is RocksDB's block-based table magic (footers with a format version).
	Magic uint64 = 0x88e241b785f4cff7
	// LegacyMagic is LevelDB's magic, used by RocksDB's format_version 0 footer.
	LegacyMagic uint64 = 0xdb4775248b80fb57
)

// Footer sizes: LevelDB's legacy footer (two handles padded to 40 bytes, then the magic), the
// versioned footer (a checksum type byte first, the format version before the magic).
const (
	LegacyFooterLen = 48
	FooterLen       = 53
	trailerLen      = 5 // a block's compression type byte and checksum
	maxHandleLen    = 20
)

// extendedMagic starts the part after the checksum type of a format_version 6+ footer.
var extendedMagic = [4]byte{0x3e, 0x00, 0x7a, 0x00}

// ChecksumType is the footer's checksum type of every block trailer.
type ChecksumType byte

// Checksum types.
const (
	ChecksumNone     ChecksumType = 0
	ChecksumCRC32C   ChecksumType = 1
	ChecksumXXHash   ChecksumType = 2
	ChecksumXXHash64 ChecksumType = 3
	ChecksumXXH3     ChecksumType = 4
)

func (c ChecksumType) String() string {
	switch c {
	case ChecksumNone:
		return "none"
	case ChecksumCRC32C:
		return "crc32c"
	case ChecksumXXHash:
		return "xxhash"
	case ChecksumXXHash64:
		return "xxhash64"
	case ChecksumXXH3:
		return "xxh3"
	}
	return "checksum type " + strconv.Itoa(int(c))
}

// Compression is a block trailer's compression type.
type Compression byte

// Compression types.
const (
	NoCompression     Compression = 0
	SnappyCompression Compression = 1
	ZlibCompression   Compression = 2
	BZip2Compression  Compression = 3
	LZ4Compression    Compression = 4
	LZ4HCCompression  Compression = 5
	XpressCompression Compression = 6
	ZSTDCompression   Compression = 7
)

func (c Compression) String() string {
	switch c {
	case NoCompression:
		return "none"
	case SnappyCompression:
		return "snappy"
	case ZlibCompression:
		return "zlib"
	case BZip2Compression:
		return "bzip2"
	case LZ4Compression:
		return "lz4"
	case LZ4HCCompression:
		return "lz4hc"
	case XpressCompression:
		return "xpress"
	case ZSTDCompression:
		return "zstd"
	}
	return "compression type " + strconv.Itoa(int(c))
}

// Decompressor decompresses one block's payload src of compression c into dst (whose length is
// the uncompressed size when the format records it, else 0: then the codec knows). It returns
// the uncompressed bytes (dst, or a new slice).
type Decompressor func(c Compression, dst, src []byte) ([]byte, error)

// Handle locates a block: its offset and its size without the 5-byte trailer.
type Handle struct {
	Offset uint64 `json:"offset"`
	Size   uint64 `json:"size"`
}

// Footer is the fixed-size end of a table.
type Footer struct {
	// FormatVersion is BlockBasedTableOptions.format_version (0 for a legacy footer).
	FormatVersion uint32 `json:"formatVersion"`
	// Checksum is the block checksum type (crc32c for a legacy footer).
	Checksum ChecksumType `json:"checksum"`
	// MetaIndex and Index locate the metaindex and the (top-level) index block. From format
	// version 6 the footer holds only the metaindex size and the index handle is in the
	// metaindex ("rocksdb.index"); Open fills Index from there.
	MetaIndex Handle `json:"metaIndex"`
	Index     Handle `json:"index"`
	// BaseContextChecksum (format version 6+) mixes each block's offset into its checksum.
	BaseContextChecksum uint32 `json:"baseContextChecksum,omitempty"`
	// Len is the footer's length in bytes.
	Len int `json:"len"`
}

// Error is the error of every reader in this package.
type Error struct {
	// File is the name the caller gave.
	File string
	// Offset is the byte offset of the problem in the file; -1 when it is the whole file.
	Offset int64
	// Block names the block ("footer", "index block", "data block 3", ...), or "".
	Block string
	// Expected says what was expected, in words; Got what was found.
	Expected, Got string
	// Err is an underlying error (a codec's), or nil.
	Err error
}

func (e *Error) Error() string {
	s := e.File
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	if e.Block != "" {
		s += " (" + e.Block + ")"
	}
	s += ": expected " + e.Expected
	if e.Got != "" {
		s += ", got " + e.Got
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ErrUnsupported is wrapped by the errors of a well-formed table that holds what ckpt does not
// read (merge operands, range deletions, a compression without a decompressor): the file is
// not corrupt.
var ErrUnsupported = errors.New("not read by ckpt")

func errf(file string, off int64, block, expected, gotFormat string, args ...any) *Error {
	return &Error{File: file, Offset: off, Block: block, Expected: expected, Got: fmt.Sprintf(gotFormat, args...)}
}

// ParseFooter reads the footer from tail, the last bytes of a file of size bytes (at least
// FooterLen of them, or the whole file when it is shorter). It is cheap: doctor checks SST
// files with it without reading them whole.
func ParseFooter(file string, tail []byte, size int64) (Footer, error) {
	var f Footer
	if int64(len(tail)) > size {
		return f, errf(file, -1, "footer", "the tail of a file", "%d bytes of a %d-byte file", len(tail), size)
	}
	if len(tail) < LegacyFooterLen {
		return f, errf(file, size-int64(len(tail)), "footer", "a table of at least 48 bytes (a block-based table footer)", "%d bytes", size)
	}
	base := size - int64(len(tail)) // file offset of tail[0]
	magicAt := len(tail) - 8
	magic := binary.LittleEndian.Uint64(tail[magicAt:])
	switch magic {
	case LegacyMagic:
		start := len(tail) - LegacyFooterLen
		f.Checksum, f.Len = ChecksumCRC32C, LegacyFooterLen
		b := tail[start:magicAt]
		var n int
		var ok bool
		if f.MetaIndex, n, ok = decodeHandle(b); !ok {
			return f, errf(file, base+int64(start), "footer", "the metaindex block handle", "bad varints")
		}
		if f.Index, _, ok = decodeHandle(b[n:]); !ok {
			return f, errf(file, base+int64(start+n), "footer", "the index block handle", "bad varints")
		}
	case Magic:
		if len(tail) < FooterLen {
			return f, errf(file, base, "footer", "a table of at least 53 bytes (a versioned footer)", "%d bytes", size)
		}
		start := len(tail) - FooterLen
		f.Len = FooterLen
		f.FormatVersion = binary.LittleEndian.Uint32(tail[magicAt-4:])
		f.Checksum = ChecksumType(tail[start])
		if f.Checksum > ChecksumXXH3 {
			return f, errf(file, base+int64(start), "footer", "a checksum type 0-4", "%d", f.Checksum)
		}
		if f.FormatVersion > 7 {
			return f, errf(file, base+int64(magicAt-4), "footer", "a block-based table format version 0-7", "%d", f.FormatVersion)
		}
		b := tail[start+1 : magicAt-4]
		if f.FormatVersion >= 6 {
			if [4]byte(b[:4]) != extendedMagic {
				return f, errf(file, base+int64(start+1), "footer", "the format version 6 footer mark 3e007a00", "%x", b[:4])
			}
			// b[4:8] is the footer's own checksum (not verified: ckpt reads, it does not repair).
			f.BaseContextChecksum = binary.LittleEndian.Uint32(b[8:])
			metaSize := uint64(binary.LittleEndian.Uint32(b[12:]))
			footerAt := uint64(size) - FooterLen
			if metaSize+trailerLen > footerAt {
				return f, errf(file, base+int64(start+13), "footer", "a metaindex size within the file", "%d", metaSize)
			}
			f.MetaIndex = Handle{Offset: footerAt - trailerLen - metaSize, Size: metaSize}
			break
		}
		var n int
		var ok bool
		if f.MetaIndex, n, ok = decodeHandle(b); !ok {
			return f, errf(file, base+int64(start+1), "footer", "the metaindex block handle", "bad varints")
		}
		if f.Index, _, ok = decodeHandle(b[n:]); !ok {
			return f, errf(file, base+int64(start+1+n), "footer", "the index block handle", "bad varints")
		}
	default:
		return f, errf(file, base+int64(magicAt), "footer", "the block-based table magic 0x88e241b785f4cff7", "0x%016x", magic)
	}
	limit := uint64(size) - uint64(f.Len)
	for _, h := range []struct {
		name string
		h    Handle
	}{{"metaindex", f.MetaIndex}, {"index", f.Index}} {
		if h.name == "index" && f.FormatVersion >= 6 {
			continue
		}
		if h.h.Offset > limit || h.h.Size+trailerLen > limit-h.h.Offset {
			return f, errf(file, size-int64(f.Len), "footer", "a "+h.name+" block handle within the file", "offset %d size %d in a %d-byte file", h.h.Offset, h.h.Size, size)
		}
	}
	return f, nil
}

// decodeHandle reads a block handle (two varint64s); n is its length.
func decodeHandle(b []byte) (Handle, int, bool) {
	off, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return Handle{}, 0, false
	}
	sz, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		return Handle{}, 0, false
	}
	return Handle{Offset: off, Size: sz}, n1 + n2, true
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// maskCRC is LevelDB's crc32c mask: a stored CRC of data that embeds CRCs stays unlike them.
func maskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }
