package statefmt

import (
	"errors"
	"fmt"
	"io"
)

// RecordType is the type byte of a v2/v4 changelog record (Spark's RecordType).
type RecordType byte

// The record types.
const (
	RecordEOF    RecordType = 0x00
	RecordPut    RecordType = 0x01
	RecordDelete RecordType = 0x10
	// RecordMerge appends a value to a key's values (RocksDB's merge: list state).
	RecordMerge RecordType = 0x11
)

func (t RecordType) String() string {
	switch t {
	case RecordEOF:
		return "eof"
	case RecordPut:
		return "put"
	case RecordDelete:
		return "delete"
	case RecordMerge:
		return "merge"
	}
	return fmt.Sprintf("record type 0x%02x", byte(t))
}

// TypedRecord is one record of a v2/v4 changelog; Key and Value are valid until the next
// call of Next. Value is nil for a delete.
type TypedRecord struct {
	Type   RecordType
	Key    []byte
	Value  []byte
	Offset int64
}

// TypedRecordReader reads the records of a v2/v4 changelog after its header: for each a type
// byte (put 0x01, delete 0x10, merge 0x11), a big-endian int32 key size and the key, an int32
// value size (-1 for a delete) and the value; a 0x00 type byte ends the file.
type TypedRecordReader struct {
	rr   RecordReader
	done bool
	b1   [1]byte
}

// NewTypedRecordReader reads the records of file (decompressed, its header read) from r;
// offset is where r is in the decompressed stream.
func NewTypedRecordReader(file string, r io.Reader, offset int64) *TypedRecordReader {
	return &TypedRecordReader{rr: RecordReader{file: file, kind: Changelog, r: r, off: offset}}
}

// ErrNoEndRecord is the cause of an error for a typed stream that stops before its end
// record (Spark: java.io.EOFException).
var ErrNoEndRecord = errors.New("stream ends before the 0x00 end record (Spark: java.io.EOFException)")

// Next returns the next record, or io.EOF after the end record.
func (t *TypedRecordReader) Next() (TypedRecord, error) {
	rec, err := t.next()
	var se *Error
	if err != nil && errors.As(err, &se) && se.Err == ErrNoEndMarker {
		se.Err = ErrNoEndRecord
	}
	return rec, err
}

func (t *TypedRecordReader) next() (TypedRecord, error) {
	rr := &t.rr
	if t.done {
		return TypedRecord{}, io.EOF
	}
	start := rr.off
	n, err := io.ReadFull(rr.r, t.b1[:])
	rr.off += int64(n)
	if err != nil {
		return TypedRecord{}, rr.cut(start, "a record type byte or the 0x00 end record", err)
	}
	typ := RecordType(t.b1[0])
	switch typ {
	case RecordEOF:
		t.done = true
		return TypedRecord{}, io.EOF
	case RecordPut, RecordDelete, RecordMerge:
	default:
		return TypedRecord{}, &Error{File: rr.file, Offset: start, Expected: "a record type (0x00 end, 0x01 put, 0x10 delete, 0x11 merge)", Got: fmt.Sprintf("0x%02x", byte(typ))}
	}
	koff := rr.off
	ks, err := rr.readInt("a key size")
	if err != nil {
		return TypedRecord{}, err
	}
	if ks < 0 || ks > MaxRowSize {
		return TypedRecord{}, &Error{File: rr.file, Offset: koff, Expected: "a key size", Got: fmt.Sprint(ks), Problem: ProblemKeySize, Size: ks}
	}
	if rr.key, err = rr.readBytes(rr.key, ks, "a key"); err != nil {
		return TypedRecord{}, err
	}
	voff := rr.off
	vs, err := rr.readInt("a value size")
	if err != nil {
		return TypedRecord{}, err
	}
	if typ == RecordDelete {
		if vs != -1 {
			return TypedRecord{}, &Error{File: rr.file, Offset: voff, Expected: "the value size -1 of a delete record", Got: fmt.Sprint(vs), Problem: ProblemValueSize, Size: vs}
		}
		return TypedRecord{Type: typ, Key: rr.key, Offset: start}, nil
	}
	if vs < 0 || vs > MaxRowSize {
		return TypedRecord{}, &Error{File: rr.file, Offset: voff, Expected: "a value size", Got: fmt.Sprint(vs), Problem: ProblemValueSize, Size: vs}
	}
	if rr.val, err = rr.readBytes(rr.val, vs, "a value"); err != nil {
		return TypedRecord{}, err
	}
	return TypedRecord{Type: typ, Key: rr.key, Value: rr.val, Offset: start}, nil
}
