package statefmt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Kind is the kind of state file a record stream comes from; it decides which records are
// legal (a snapshot has no deletes).
type Kind int

// The record stream kinds.
const (
	// Delta is an HDFS-backed store's N.delta: puts and deletes.
	Delta Kind = iota + 1
	// Snapshot is an HDFS-backed store's N.snapshot: puts only.
	Snapshot
	// Changelog is a RocksDB store's N.changelog (format v1): puts and deletes, the RocksDB
	// encoding (a version byte before each UnsafeRow).
	Changelog
)

func (k Kind) String() string {
	switch k {
	case Delta:
		return "delta"
	case Snapshot:
		return "snapshot"
	case Changelog:
		return "changelog"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Record is one key/value pair of a state file. Key and Value are valid until the next call
// of Next.
type Record struct {
	Key   []byte
	Value []byte
	// Delete: the key was removed (its value size is -1).
	Delete bool
	// Offset is the offset of the record in the decompressed stream.
	Offset int64
}

// MaxRowSize bounds a key or value size: larger sizes are reported as corruption rather than
// allocated. Spark's rows are far smaller; the bound keeps a corrupt size from costing memory.
const MaxRowSize = 256 << 20

// ErrNoEndMarker is the cause of an error for a stream that stops before its -1 end marker:
// Spark's DataInputStream.readInt throws java.io.EOFException there.
var ErrNoEndMarker = errors.New("stream ends before the -1 end marker (Spark: java.io.EOFException)")

// RecordReader reads the length-prefixed records of a decompressed state file:
// for each record a big-endian int32 key size, the key, an int32 value size (-1: a delete) and
// the value; a key size of -1 ends the file.
type RecordReader struct {
	file string
	kind Kind
	r    io.Reader
	off  int64
	key  []byte
	val  []byte
	done bool
	n4   [4]byte
}

// NewRecordReader reads the records of file (already decompressed) from r.
func NewRecordReader(file string, kind Kind, r io.Reader) *RecordReader {
	return &RecordReader{file: file, kind: kind, r: r}
}

// Offset is the number of decompressed bytes read so far.
func (rr *RecordReader) Offset() int64 { return rr.off }

func (rr *RecordReader) readInt(what string) (int32, error) {
	n, err := io.ReadFull(rr.r, rr.n4[:])
	rr.off += int64(n)
	if err != nil {
		return 0, rr.cut(rr.off-int64(n), what, err)
	}
	return int32(binary.BigEndian.Uint32(rr.n4[:])), nil
}

func (rr *RecordReader) cut(off int64, what string, err error) error {
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{File: rr.file, Offset: off, Expected: what, Got: "end of stream", Err: ErrNoEndMarker, Problem: ProblemTruncated}
	}
	return &Error{File: rr.file, Offset: off, Expected: what, Err: err}
}

func (rr *RecordReader) readBytes(buf []byte, size int32, what string) ([]byte, error) {
	// Grow the buffer as bytes arrive, so that a corrupt size costs no more memory than the
	// stream really holds.
	buf = buf[:0]
	start := rr.off
	for len(buf) < int(size) {
		chunk := min(int(size)-len(buf), 1<<20)
		if cap(buf)-len(buf) < chunk {
			buf = slices.Grow(buf, max(chunk, min(int(size), 2*cap(buf))-len(buf)))
		}
		n, err := io.ReadFull(rr.r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+n]
		rr.off += int64(n)
		if err != nil {
			return nil, rr.cut(start, fmt.Sprintf("%s of %d bytes", what, size), err)
		}
	}
	return buf, nil
}

// peek reads a whole well-formed record that is in, or fits, br's buffer; ok false leaves br
// untouched for the copying path, which also reports every error.
func (rr *RecordReader) peek(br *bufio.Reader) (Record, bool) {
	// What is buffered usually holds the whole record: one Peek, no fill.
	h, _ := br.Peek(br.Buffered())
	need := func(n int) bool {
		if len(h) >= n {
			return true
		}
		var err error
		h, err = br.Peek(n)
		return err == nil
	}
	if !need(4) {
		return Record{}, false
	}
	ks := int(int32(binary.BigEndian.Uint32(h)))
	if ks < 0 || ks+8 > br.Size() || !need(ks+8) {
		return Record{}, false // the end marker, a bad size, or a key larger than the buffer
	}
	vs := int(int32(binary.BigEndian.Uint32(h[4+ks:])))
	n := ks + 8
	if vs != -1 || rr.kind == Snapshot {
		if vs < 0 || n+vs > br.Size() || !need(n+vs) {
			return Record{}, false
		}
		n += vs
	}
	rec := Record{Key: h[4 : 4+ks : 4+ks], Offset: rr.off}
	if vs == -1 && rr.kind != Snapshot {
		rec.Delete = true
	} else {
		rec.Value = h[8+ks : n : n]
	}
	_, _ = br.Discard(n)
	rr.off += int64(n)
	return rec, true
}

// Next returns the next record, or io.EOF after the end marker. When the reader given to
// NewRecordReader is a *bufio.Reader, a record that fits its buffer is returned without a copy
// (Key and Value point into the buffer, valid until the next call, as always).
func (rr *RecordReader) Next() (Record, error) {
	if rr.done {
		return Record{}, io.EOF
	}
	if br, ok := rr.r.(*bufio.Reader); ok {
		if rec, ok := rr.peek(br); ok {
			return rec, nil
		}
	}
	start := rr.off
	ks, err := rr.readInt("a key size or the -1 end marker")
	if err != nil {
		return Record{}, err
	}
	if ks == -1 {
		rr.done = true
		return Record{}, io.EOF
	}
	if ks < 0 || ks > MaxRowSize {
		return Record{}, &Error{File: rr.file, Offset: start, Expected: "a key size or the -1 end marker", Got: fmt.Sprint(ks), Problem: ProblemKeySize, Size: ks}
	}
	if rr.key, err = rr.readBytes(rr.key, ks, "a key"); err != nil {
		return Record{}, err
	}
	voff := rr.off
	vs, err := rr.readInt("a value size")
	if err != nil {
		return Record{}, err
	}
	if vs < 0 {
		if rr.kind == Snapshot {
			return Record{}, &Error{File: rr.file, Offset: voff, Expected: "a value size (a snapshot holds no deletes)", Got: fmt.Sprint(vs), Problem: ProblemValueSize, Size: vs}
		}
		if vs != -1 {
			return Record{}, &Error{File: rr.file, Offset: voff, Expected: "a value size or -1 (delete)", Got: fmt.Sprint(vs), Problem: ProblemValueSize, Size: vs}
		}
		return Record{Key: rr.key, Delete: true, Offset: start}, nil
	}
	if vs > MaxRowSize {
		return Record{}, &Error{File: rr.file, Offset: voff, Expected: "a value size", Got: fmt.Sprint(vs), Problem: ProblemValueSize, Size: vs}
	}
	if rr.val, err = rr.readBytes(rr.val, vs, "a value"); err != nil {
		return Record{}, err
	}
	return Record{Key: rr.key, Value: rr.val, Offset: start}, nil
}
