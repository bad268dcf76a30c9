package statefmt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec names, as spark.sql.streaming.stateStore.compression.codec takes them.
const (
	CodecLZ4    = "lz4"
	CodecZstd   = "zstd"
	CodecSnappy = "snappy"
	CodecLZF    = "lzf"
)

// DefaultCodec is Spark's default state store codec (since 3.2; see Spark's
// STATE_STORE_COMPRESSION_CODEC).
const DefaultCodec = CodecLZ4

// CanonicalCodec maps a codec setting (a short name or Spark's codec class name) to its short
// name; ok is false for a codec ckpt does not know.
func CanonicalCodec(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "", CodecLZ4, "org.apache.spark.io.lz4compressioncodec":
		return CodecLZ4, true
	case CodecZstd, "org.apache.spark.io.zstdcompressioncodec":
		return CodecZstd, true
	case CodecSnappy, "org.apache.spark.io.snappycompressioncodec":
		return CodecSnappy, true
	case CodecLZF, "org.apache.spark.io.lzfcompressioncodec":
		return CodecLZF, true
	}
	return n, false
}

// DetectCodec names the codec whose framing data starts with, or "" when none matches.
// Spark does not record the codec in the file; the conf of the batch does, but a reader that
// only has the file can tell lz4-java, snappy-java, zstd and LZF streams apart by their magic.
func DetectCodec(data []byte) string {
	switch {
	case bytes.HasPrefix(data, lz4BlockMagic):
		return CodecLZ4
	case bytes.HasPrefix(data, snappyMagic):
		return CodecSnappy
	case len(data) >= 4 && binary.LittleEndian.Uint32(data) == 0xFD2FB528:
		return CodecZstd
	case len(data) >= 3 && data[0] == 'Z' && data[1] == 'V' && data[2] <= 1:
		return CodecLZF
	}
	return ""
}

// Decompress wraps r, the bytes of a state file named file, in a reader of codec's framing.
// Errors while reading name file and the offset in the compressed file.
func Decompress(file, codec string, r io.Reader) (io.ReadCloser, error) {
	c, ok := CanonicalCodec(codec)
	if !ok {
		return nil, &Error{File: file, Offset: -1, Expected: "a codec among lz4, zstd, snappy, lzf", Got: fmt.Sprintf("%q", codec)}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	switch c {
	case CodecLZ4:
		return io.NopCloser(&lz4BlockReader{file: file, r: br}), nil
	case CodecSnappy:
		return io.NopCloser(&snappyReader{file: file, r: br}), nil
	case CodecLZF:
		return io.NopCloser(&lzfReader{file: file, r: br}), nil
	default:
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, &Error{File: file, Offset: 0, Expected: "a zstd stream", Err: err}
		}
		return &zstdReader{file: file, d: d}, nil
	}
}

type zstdReader struct {
	file string
	d    *zstd.Decoder
}

func (z *zstdReader) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if err != nil && err != io.EOF {
		err = &Error{File: z.file, Offset: -1, Expected: "a valid zstd stream", Err: err}
	}
	return n, err
}

func (z *zstdReader) Close() error { z.d.Close(); return nil }

// lz4-java's LZ4BlockOutputStream framing: each block is the magic "LZ4Block", a token (method
// in the high nibble: 0x10 raw, 0x20 lz4), the compressed and the original length and the
// XXHash32 of the original bytes (little-endian int32s), then the block. An empty raw block ends
// a stream; another stream may follow.
var lz4BlockMagic = []byte("LZ4Block")

const (
	lz4HeaderLen  = 8 + 1 + 4 + 4 + 4
	lz4MethodRaw  = 0x10
	lz4MethodLZ4  = 0x20
	lz4Seed       = 0x9747b28c
	lz4MaxBlock   = 1 << 25 // lz4-java's limit is 32 MB
	lz4ChecksumMk = 0x0FFFFFFF
)

type lz4BlockReader struct {
	file   string
	r      *bufio.Reader
	off    int64 // offset in the compressed file
	buf    []byte
	cbuf   []byte
	pos    int
	ended  bool // the end mark was read
	header [lz4HeaderLen]byte
}

func (z *lz4BlockReader) Read(p []byte) (int, error) {
	for z.pos >= len(z.buf) {
		if err := z.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, z.buf[z.pos:])
	z.pos += n
	return n, nil
}

func (z *lz4BlockReader) next() error {
	start := z.off
	n, err := io.ReadFull(z.r, z.header[:])
	z.off += int64(n)
	if err == io.EOF && z.ended {
		return io.EOF
	}
	if err != nil {
		if z.ended || err == io.EOF {
			if z.ended {
				return io.EOF
			}
			return truncated(errf(z.file, start, "an LZ4Block header", "end of file (stream not finished: no end mark)"))
		}
		return truncated(errf(z.file, start, "a 21-byte LZ4Block header", "%d bytes", n))
	}
	h := z.header[:]
	if !bytes.Equal(h[:8], lz4BlockMagic) {
		return errf(z.file, start, `the LZ4Block magic "LZ4Block"`, "%q", h[:8])
	}
	method := int(h[8]) & 0xF0
	clen := int32(binary.LittleEndian.Uint32(h[9:]))
	olen := int32(binary.LittleEndian.Uint32(h[13:]))
	sum := binary.LittleEndian.Uint32(h[17:])
	if olen < 0 || clen < 0 || olen > lz4MaxBlock || clen > lz4MaxBlock ||
		(olen == 0) != (clen == 0) || (method == lz4MethodRaw && olen != clen) {
		return errf(z.file, start, "consistent LZ4Block lengths", "compressed %d, original %d, method 0x%x", clen, olen, method)
	}
	if method != lz4MethodRaw && method != lz4MethodLZ4 {
		return errf(z.file, start+8, "LZ4Block method 0x10 (raw) or 0x20 (lz4)", "0x%x", method)
	}
	if olen == 0 {
		z.ended = true
		z.buf, z.pos = z.buf[:0], 0
		return nil
	}
	z.ended = false
	if cap(z.cbuf) < int(clen) {
		z.cbuf = make([]byte, clen)
	}
	cb := z.cbuf[:clen]
	n, err = io.ReadFull(z.r, cb)
	z.off += int64(n)
	if err != nil {
		return truncated(errf(z.file, start+lz4HeaderLen, fmt.Sprintf("%d compressed bytes", clen), "%d (truncated)", n))
	}
	if cap(z.buf) < int(olen) {
		z.buf = make([]byte, olen)
	}
	out := z.buf[:olen]
	if method == lz4MethodRaw {
		copy(out, cb)
	} else {
		m, err := lz4.UncompressBlock(cb, out)
		if err != nil || m != int(olen) {
			e := errf(z.file, start+lz4HeaderLen, fmt.Sprintf("an lz4 block of %d bytes", olen), "%d bytes", m)
			e.Err = err
			return e
		}
	}
	if got := xxh32(out, lz4Seed) & lz4ChecksumMk; got != sum {
		return errf(z.file, start+17, "the block checksum 0x"+fmt.Sprintf("%x", sum), "0x%x (the block is corrupt)", got)
	}
	z.buf, z.pos = out, 0
	return nil
}

// snappy-java's SnappyOutputStream framing: the 8-byte magic, two big-endian int32 versions,
// then chunks of a big-endian int32 length and a raw snappy block.
var snappyMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

type snappyReader struct {
	file    string
	r       *bufio.Reader
	off     int64
	started bool
	buf     []byte
	cbuf    []byte
	pos     int
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for s.pos >= len(s.buf) {
		if err := s.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.buf[s.pos:])
	s.pos += n
	return n, nil
}

func (s *snappyReader) next() error {
	if !s.started {
		var h [16]byte
		n, err := io.ReadFull(s.r, h[:])
		s.off += int64(n)
		if err != nil || !bytes.Equal(h[:8], snappyMagic) {
			return errf(s.file, 0, "the snappy-java stream header", "%q", h[:n])
		}
		s.started = true
	}
	start := s.off
	var l [4]byte
	n, err := io.ReadFull(s.r, l[:])
	s.off += int64(n)
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return errf(s.file, start, "a 4-byte snappy chunk length", "%d bytes", n)
	}
	clen := int32(binary.BigEndian.Uint32(l[:]))
	if clen < 0 || clen > 1<<28 {
		return errf(s.file, start, "a snappy chunk length", "%d", clen)
	}
	if cap(s.cbuf) < int(clen) {
		s.cbuf = make([]byte, clen)
	}
	cb := s.cbuf[:clen]
	n, err = io.ReadFull(s.r, cb)
	s.off += int64(n)
	if err != nil {
		return truncated(errf(s.file, start+4, fmt.Sprintf("%d compressed bytes", clen), "%d (truncated)", n))
	}
	if bytes.Equal(cb[:min(len(cb), 8)], snappyMagic) && clen >= 16 {
		// concatenated stream: a new header inside (snappy-java allows it)
		return errf(s.file, start, "a snappy chunk", "a second stream header")
	}
	olen, err := snappy.DecodedLen(cb)
	if err != nil || olen > 1<<28 {
		return &Error{File: s.file, Offset: start + 4, Expected: "a snappy block", Err: err}
	}
	if cap(s.buf) < olen {
		s.buf = make([]byte, olen)
	}
	out, err := snappy.Decode(s.buf[:olen], cb)
	if err != nil {
		return &Error{File: s.file, Offset: start + 4, Expected: "a snappy block", Err: err}
	}
	s.buf, s.pos = out, 0
	return nil
}

// LZF (ning compress, LZFOutputStream): chunks of "ZV", a type byte (0 raw, 1 compressed),
// a big-endian uint16 length and, for compressed chunks, the uncompressed uint16 length.
type lzfReader struct {
	file string
	r    *bufio.Reader
	off  int64
	buf  []byte
	cbuf []byte
	pos  int
}

func (z *lzfReader) Read(p []byte) (int, error) {
	for z.pos >= len(z.buf) {
		if err := z.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, z.buf[z.pos:])
	z.pos += n
	return n, nil
}

func (z *lzfReader) next() error {
	start := z.off
	var h [7]byte
	n, err := io.ReadFull(z.r, h[:5])
	z.off += int64(n)
	if err == io.EOF {
		return io.EOF
	}
	if err != nil || h[0] != 'Z' || h[1] != 'V' || h[2] > 1 {
		return errf(z.file, start, `an LZF chunk header "ZV"`, "%q", h[:n])
	}
	l := int(binary.BigEndian.Uint16(h[3:]))
	if h[2] == 0 {
		if cap(z.buf) < l {
			z.buf = make([]byte, l)
		}
		z.buf = z.buf[:l]
		n, err = io.ReadFull(z.r, z.buf)
		z.off += int64(n)
		if err != nil {
			return truncated(errf(z.file, start+5, fmt.Sprintf("%d raw bytes", l), "%d (truncated)", n))
		}
		z.pos = 0
		return nil
	}
	n, err = io.ReadFull(z.r, h[5:7])
	z.off += int64(n)
	if err != nil {
		return errf(z.file, start+5, "the uncompressed length of an LZF chunk", "end of file")
	}
	ol := int(binary.BigEndian.Uint16(h[5:]))
	if cap(z.cbuf) < l {
		z.cbuf = make([]byte, l)
	}
	cb := z.cbuf[:l]
	n, err = io.ReadFull(z.r, cb)
	z.off += int64(n)
	if err != nil {
		return truncated(errf(z.file, start+7, fmt.Sprintf("%d compressed bytes", l), "%d (truncated)", n))
	}
	if cap(z.buf) < ol {
		z.buf = make([]byte, ol)
	}
	out, err := lzfDecode(cb, z.buf[:0], ol)
	if err != nil {
		return &Error{File: z.file, Offset: start + 7, Expected: "an LZF block", Err: err}
	}
	z.buf, z.pos = out, 0
	return nil
}

var errLZF = errors.New("corrupt LZF block")

func lzfDecode(in, out []byte, size int) ([]byte, error) {
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			l := ctrl + 1
			if i+l > len(in) || len(out)+l > size {
				return nil, errLZF
			}
			out = append(out, in[i:i+l]...)
			i += l
			continue
		}
		l := ctrl >> 5
		if l == 7 {
			if i >= len(in) {
				return nil, errLZF
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, errLZF
		}
		ref := len(out) - ((ctrl&0x1f)<<8 + int(in[i]) + 1)
		i++
		l += 2
		if ref < 0 || len(out)+l > size {
			return nil, errLZF
		}
		for k := 0; k < l; k++ {
			out = append(out, out[ref+k])
		}
	}
	if len(out) != size {
		return nil, errLZF
	}
	return out, nil
}

var (
	blockZstdOnce sync.Once
	blockZstd     *zstd.Decoder
	blockZstdErr  error
)

// DecompressBlock decompresses one raw block of codec (lz4, snappy or zstd, without Spark's
// stream framing: RocksDB's SST blocks) into dst, whose length is the uncompressed size when
// known (lz4 needs it; 0 lets snappy and zstd tell). It returns the uncompressed bytes.
func DecompressBlock(codec string, dst, src []byte) ([]byte, error) {
	switch codec {
	case CodecLZ4:
		n, err := lz4.UncompressBlock(src, dst)
		if err != nil {
			return nil, err
		}
		return dst[:n], nil
	case CodecSnappy:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		// A snappy element of 1 to 5 bytes yields at most 64: a larger length is damage, and
		// must not allocate gigabytes.
		if n > 64*len(src)+64 {
			return nil, fmt.Errorf("snappy block of %d bytes claims %d uncompressed", len(src), n)
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		return snappy.Decode(dst[:n], src)
	case CodecZstd:
		blockZstdOnce.Do(func() {
			// DecodeAll grows dst at most to its capacity, and windows stay small: a damaged
			// frame header must not allocate gigabytes.
			blockZstd, blockZstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(256<<20), zstd.WithDecodeAllCapLimit(true))
		})
		if blockZstdErr != nil {
			return nil, blockZstdErr
		}
		if len(dst) == 0 {
			dst = make([]byte, 0, max(1<<20, 256*len(src)))
		}
		return blockZstd.DecodeAll(src, dst[:0])
	}
	return nil, fmt.Errorf("no raw block decoder for codec %q", codec)
}

// truncated marks e as a file that ends inside a codec block.
func truncated(e *Error) *Error {
	e.Problem = ProblemCodecTruncated
	return e
}
