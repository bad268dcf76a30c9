package statefmt

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// transformWithState keeps all its state variables in one RocksDB instance, each a virtual
// column family: every key starts with the family's 2-byte id (Spark's Platform.putShort: the
// machine's byte order, little-endian on every platform Spark runs on), then the key as the
// family's key encoder lays it out. Values are a version byte and an UnsafeRow, or for list
// state several values, each a little-endian int32 size and a versioned UnsafeRow, joined by
// RocksDB's string-append merge delimiter (one byte).

// ColumnFamilyIDBytes is the size of the column family id before each key.
const ColumnFamilyIDBytes = 2

// ColumnFamilyID returns the virtual column family id of an encoded key.
func ColumnFamilyID(key []byte) (uint16, bool) {
	if len(key) < ColumnFamilyIDBytes {
		return 0, false
	}
	return binary.LittleEndian.Uint16(key), true
}

// ColumnFamilyPrefix is the 2-byte prefix of the keys of column family id.
func ColumnFamilyPrefix(id uint16) []byte {
	return binary.LittleEndian.AppendUint16(nil, id)
}

// SplitKey splits an encoded key (after its column family id) by the family's key encoder
// into UnsafeRows: the whole key (no prefix), or the prefix (ordering) fields and the rest;
// rest is nil when the encoder puts every field in the first row.
func SplitKey(enc *KeyEncoder, b []byte) (first, rest []byte, err error) {
	if enc == nil || enc.Type == KeyEncoderNoPrefix {
		if len(b) < 1 {
			return nil, nil, &RowError{At: 0, Reason: "an empty key (want a version byte and an UnsafeRow)"}
		}
		return b[1:], nil, nil
	}
	if len(b) < 4 {
		return nil, nil, &RowError{At: 0, Reason: fmt.Sprintf("a %d-byte key (want a 4-byte length of its prefix first)", len(b))}
	}
	n := int(int32(binary.LittleEndian.Uint32(b)))
	if n < 1 || 4+n > len(b) {
		return nil, nil, &RowError{At: 0, Reason: fmt.Sprintf("a key prefix of %d bytes in a key of %d", n, len(b))}
	}
	first = b[5 : 4+n]
	if r := b[4+n:]; len(r) > 0 {
		rest = r[1:]
	}
	return first, rest, nil
}

// fieldWord returns the 8-byte slot of field i of an UnsafeRow of n fields.
func fieldWord(row []byte, n, i int) (uint64, int, error) {
	at := bitsetWords(n)*8 + i*8
	if i < 0 || i >= n || at+8 > len(row) {
		return 0, at, &RowError{At: at, Reason: fmt.Sprintf("field %d of a %d-field row of %d bytes", i, n, len(row))}
	}
	return binary.LittleEndian.Uint64(row[at:]), at, nil
}

// IsNullField reports whether field i of an UnsafeRow of n fields is null.
func IsNullField(row []byte, n, i int) bool {
	w := i / 64
	if w*8+8 > len(row) {
		return false
	}
	return binary.LittleEndian.Uint64(row[w*8:])&(1<<(i%64)) != 0
}

// VarField returns the bytes of a variable-length field (a nested struct, a string, a
// binary) of an UnsafeRow of n fields: its slot holds the offset and size.
func VarField(row []byte, n, i int) ([]byte, error) {
	w, at, err := fieldWord(row, n, i)
	if err != nil {
		return nil, err
	}
	off, size := int(w>>32), int(uint32(w))
	if off < 0 || off+size > len(row) {
		return nil, &RowError{At: at, Reason: fmt.Sprintf("field %d at offset %d, %d bytes, past the end of a %d-byte row", i, off, size, len(row))}
	}
	return row[off : off+size], nil
}

// LongField returns the int64 field i of an UnsafeRow of n fields.
func LongField(row []byte, n, i int) (int64, error) {
	w, _, err := fieldWord(row, n, i)
	return int64(w), err
}

// EachValue calls fn with the UnsafeRow of every value of a multi-valued (list state) value:
// each a 4-byte size, then a version byte and the row. With delimited
// (spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion 1, the only one before 4.2)
// every value is followed by the merge operator's ',' delimiter. With version 2 (4.2's
// default, 4.2.0/tws) the values of one put follow each other directly, and a ',' stands only
// between the operands RocksDB merged: since a size may start with the byte ',', the split is
// the one that reads the whole value.
func EachValue(b []byte, delimited bool, fn func(row []byte) error) error {
	if delimited {
		return eachValue(b, 1, fn)
	}
	memo := map[int]bool{}
	var whole func(at int) bool // a value starts at at, and values fill the rest
	whole = func(at int) bool {
		if v, ok := memo[at]; ok {
			return v
		}
		v := false
		if at+4 <= len(b) {
			n := int(int32(binary.LittleEndian.Uint32(b[at:])))
			end := at + 4 + n
			v = n >= 1 && end <= len(b) && (end == len(b) || whole(end) || (b[end] == ',' && whole(end+1)))
		}
		memo[at] = v
		return v
	}
	if len(b) == 0 || !whole(0) {
		return eachValue(b, 0, fn) // not one split reads it: the plain split names where it fails
	}
	for at := 0; at < len(b); {
		n := int(int32(binary.LittleEndian.Uint32(b[at:])))
		if err := fn(b[at+5 : at+4+n]); err != nil {
			return err
		}
		at += 4 + n
		if at < len(b) && !whole(at) {
			at++ // the merge delimiter
		}
	}
	return nil
}

// eachValue splits b into values each followed by delim bytes.
func eachValue(b []byte, delim int, fn func(row []byte) error) error {
	for at := 0; at < len(b); {
		if at+4 > len(b) {
			return &RowError{At: at, Reason: fmt.Sprintf("%d bytes where a value's 4-byte size was expected", len(b)-at)}
		}
		n := int(int32(binary.LittleEndian.Uint32(b[at:])))
		if n < 1 || at+4+n > len(b) {
			return &RowError{At: at, Reason: fmt.Sprintf("a value of %d bytes with %d left", n, len(b)-at-4)}
		}
		if err := fn(b[at+5 : at+4+n]); err != nil {
			return err
		}
		at += 4 + n + delim
	}
	return nil
}

// UnsafeRowString renders row as Spark's UnsafeRow.toString does: its 8-byte words as
// little-endian longs in hex (Long.toHexString), comma-separated in brackets. Spark's JSON
// writer uses it for the struct keys of a map.
func UnsafeRowString(row []byte) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := 0; i < len(row); i += 8 {
		if i > 0 {
			sb.WriteByte(',')
		}
		var w [8]byte
		copy(w[:], row[i:])
		sb.WriteString(strconv.FormatUint(binary.LittleEndian.Uint64(w[:]), 16))
	}
	sb.WriteByte(']')
	return sb.String()
}

// UnsafeRowHash is Spark's UnsafeRow.hashCode: Murmur3 x86_32 of the row's bytes, read as
// little-endian int32 words, seed 42 (Murmur3_x86_32.hashUnsafeWords). len(row) is a multiple
// of 8, as every UnsafeRow's size.
func UnsafeRowHash(row []byte) int32 {
	h := uint32(HashSeed)
	for i := 0; i+4 <= len(row); i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(row[i:])))
	}
	return int32(fmix(h, len(row)))
}
