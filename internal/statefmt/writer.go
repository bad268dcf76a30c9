package statefmt

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// LZ4Writer writes lz4-java's LZ4BlockOutputStream framing, Spark's default state codec: blocks
// of at most BlockSize bytes, each compressed unless that does not shrink it, then the empty
// raw block that ends the stream. Readers of Spark's files read it back; the compressed bytes
// differ from lz4-java's (another compressor), the framing does not. The state writer uses it
// through Compress and FileWriter; tests and benchmarks use it directly.
type LZ4Writer struct {
	w     io.Writer
	size  int
	level byte
	*lz4Bufs
	err error
}

// lz4Bufs are an LZ4Writer's block buffers and compressor, about 80 KiB: a state commit writes
// a small file per partition, and allocating (and zeroing) them for each cost more CPU than
// compressing. Those of the default block size are reused once a writer is closed.
type lz4Bufs struct {
	buf []byte
	out []byte
	c   lz4.Compressor
}

var lz4Pool sync.Pool // *lz4Bufs of DefaultLZ4BlockSize

// DefaultLZ4BlockSize is Spark's spark.io.compression.lz4.blockSize (32 KiB).
const DefaultLZ4BlockSize = 32 << 10

// NewLZ4Writer writes to w in blocks of blockSize bytes (0: DefaultLZ4BlockSize).
func NewLZ4Writer(w io.Writer, blockSize int) *LZ4Writer {
	if blockSize <= 0 {
		blockSize = DefaultLZ4BlockSize
	}
	// lz4-java puts log2(blockSize)-10 in the token's low nibble.
	level := 0
	for s := blockSize - 1; s > 0; s >>= 1 {
		level++
	}
	level = max(0, level-10)
	z := &LZ4Writer{w: w, size: blockSize, level: byte(level)}
	if blockSize == DefaultLZ4BlockSize {
		if b, ok := lz4Pool.Get().(*lz4Bufs); ok {
			z.lz4Bufs = b
			return z
		}
	}
	z.lz4Bufs = &lz4Bufs{buf: make([]byte, 0, blockSize), out: make([]byte, lz4HeaderLen+lz4.CompressBlockBound(blockSize))}
	return z
}

// Write buffers p and writes every full block.
func (z *LZ4Writer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && z.err == nil {
		c := min(len(p), z.size-len(z.buf))
		z.buf = append(z.buf, p[:c]...)
		p, n = p[c:], n+c
		if len(z.buf) == z.size {
			z.flush()
		}
	}
	return n, z.err
}

func (z *LZ4Writer) flush() {
	if z.err != nil || len(z.buf) == 0 {
		return
	}
	h := z.out[:lz4HeaderLen]
	copy(h, lz4BlockMagic)
	m, err := z.c.CompressBlock(z.buf, z.out[lz4HeaderLen:])
	method := byte(lz4MethodLZ4)
	if err != nil || m == 0 || m >= len(z.buf) {
		method, m = lz4MethodRaw, len(z.buf)
		copy(z.out[lz4HeaderLen:], z.buf)
	}
	h[8] = method | z.level
	binary.LittleEndian.PutUint32(h[9:], uint32(m))
	binary.LittleEndian.PutUint32(h[13:], uint32(len(z.buf)))
	binary.LittleEndian.PutUint32(h[17:], xxh32(z.buf, lz4Seed)&lz4ChecksumMk)
	_, z.err = z.w.Write(z.out[:lz4HeaderLen+m])
	z.buf = z.buf[:0]
}

// Close writes the last block and the end mark; it does not close the underlying writer.
func (z *LZ4Writer) Close() error {
	z.flush()
	if z.err != nil {
		return z.err
	}
	var end [lz4HeaderLen]byte
	copy(end[:], lz4BlockMagic)
	end[8] = lz4MethodRaw | z.level
	_, z.err = z.w.Write(end[:])
	if z.err == nil {
		z.err = errors.New("statefmt: LZ4Writer closed")
		// Write and flush do nothing once err is set: the buffers can go to the next writer.
		if z.size == DefaultLZ4BlockSize {
			z.buf = z.buf[:0]
			lz4Pool.Put(z.lz4Bufs)
		}
		z.lz4Bufs = nil
		return nil
	}
	return z.err
}

// RecordWriter writes the records of a delta or snapshot file (before compression): a
// big-endian int32 key size and the key, an int32 value size (-1 for a delete) and the value,
// and the -1 end marker on Close.
type RecordWriter struct {
	w   io.Writer
	n4  [4]byte
	err error
}

// NewRecordWriter writes records to w.
func NewRecordWriter(w io.Writer) *RecordWriter { return &RecordWriter{w: w} }

func (rw *RecordWriter) int32(v int32) {
	if rw.err == nil {
		binary.BigEndian.PutUint32(rw.n4[:], uint32(v))
		_, rw.err = rw.w.Write(rw.n4[:])
	}
}

func (rw *RecordWriter) bytes(b []byte) {
	if rw.err == nil {
		_, rw.err = rw.w.Write(b)
	}
}

// Put writes a key and its value.
func (rw *RecordWriter) Put(key, value []byte) error {
	rw.int32(int32(len(key)))
	rw.bytes(key)
	rw.int32(int32(len(value)))
	rw.bytes(value)
	return rw.err
}

// Delete writes a delete of key (a delta's value size -1).
func (rw *RecordWriter) Delete(key []byte) error {
	rw.int32(int32(len(key)))
	rw.bytes(key)
	rw.int32(-1)
	return rw.err
}

// Close writes the -1 end marker.
func (rw *RecordWriter) Close() error {
	rw.int32(-1)
	return rw.err
}
