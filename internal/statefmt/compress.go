package statefmt

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Compress wraps w in a writer of codec's framing, as Spark's CompressionCodec of that name
// frames a state file; Close ends the stream (it does not close w). The compressed bytes may
// differ from Spark's (other compressors); Spark's readers read them (the state writer's
// round-trip suite).
func Compress(codec string, w io.Writer) (io.WriteCloser, error) {
	c, ok := CanonicalCodec(codec)
	if !ok {
		return nil, fmt.Errorf("state codec %q: ckpt writes lz4, zstd, snappy and lzf", codec)
	}
	switch c {
	case CodecLZ4:
		return NewLZ4Writer(w, 0), nil
	case CodecSnappy:
		return &snappyWriter{w: w, buf: make([]byte, 0, snappyBlockSize)}, nil
	case CodecLZF:
		return &lzfWriter{w: w, buf: make([]byte, 0, lzfChunkSize)}, nil
	}
	// zstd-jni's ZstdOutputStream writes plain zstd frames; Spark's level is 1.
	return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
}

// snappyBlockSize is spark.io.compression.snappy.blockSize's default (32 KiB).
const snappyBlockSize = 32 << 10

// snappyWriter writes snappy-java's SnappyOutputStream framing (see snappyReader).
type snappyWriter struct {
	w       io.Writer
	buf     []byte
	started bool
	err     error
}

func (s *snappyWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && s.err == nil {
		c := min(len(p), snappyBlockSize-len(s.buf))
		s.buf = append(s.buf, p[:c]...)
		p, n = p[c:], n+c
		if len(s.buf) == snappyBlockSize {
			s.flush()
		}
	}
	return n, s.err
}

func (s *snappyWriter) header() {
	if !s.started && s.err == nil {
		s.started = true
		h := append([]byte(nil), snappyMagic...)
		h = binary.BigEndian.AppendUint32(h, 1) // version
		h = binary.BigEndian.AppendUint32(h, 1) // minimum compatible version
		_, s.err = s.w.Write(h)
	}
}

func (s *snappyWriter) flush() {
	s.header()
	if len(s.buf) == 0 || s.err != nil {
		return
	}
	enc := snappy.Encode(nil, s.buf)
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(enc)), uint32(len(enc)))
	_, s.err = s.w.Write(append(out, enc...))
	s.buf = s.buf[:0]
}

// Close writes the last block (snappy-java's stream has no end marker; an empty stream is its
// header alone).
func (s *snappyWriter) Close() error {
	s.flush()
	return s.err
}

// lzfChunkSize is ning compress's LZFChunk.MAX_CHUNK_LEN (65,535 bytes).
const lzfChunkSize = 0xFFFF

// lzfWriter writes LZF chunks uncompressed (type 0), which ning's LZFInputStream reads as it
// reads its own compressed ones; the state files are already small and LZF is rarely chosen.
type lzfWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (z *lzfWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && z.err == nil {
		c := min(len(p), lzfChunkSize-len(z.buf))
		z.buf = append(z.buf, p[:c]...)
		p, n = p[c:], n+c
		if len(z.buf) == lzfChunkSize {
			z.flush()
		}
	}
	return n, z.err
}

func (z *lzfWriter) flush() {
	if len(z.buf) == 0 || z.err != nil {
		return
	}
	out := append(make([]byte, 0, 5+len(z.buf)), 'Z', 'V', 0)
	out = binary.BigEndian.AppendUint16(out, uint16(len(z.buf)))
	_, z.err = z.w.Write(append(out, z.buf...))
	z.buf = z.buf[:0]
}

func (z *lzfWriter) Close() error {
	z.flush()
	return z.err
}

// FileWriter writes an HDFS-backed store's delta or snapshot file: records framed by
// RecordWriter inside codec's compression, as HDFSBackedStateStoreProvider writes them.
type FileWriter struct {
	*RecordWriter
	c io.WriteCloser
}

// NewFileWriter writes a state file in codec to w.
func NewFileWriter(codec string, w io.Writer) (*FileWriter, error) {
	c, err := Compress(codec, w)
	if err != nil {
		return nil, err
	}
	return &FileWriter{RecordWriter: NewRecordWriter(c), c: c}, nil
}

// Close writes the end marker and ends the compressed stream.
func (f *FileWriter) Close() error {
	err := f.RecordWriter.Close()
	if cerr := f.c.Close(); err == nil {
		err = cerr
	}
	return err
}
