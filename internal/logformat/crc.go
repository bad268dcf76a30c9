package logformat

import (
	"encoding/binary"
	"hash/crc32"
)

// HadoopChecksumChunk is io.bytes.per.checksum's default: Hadoop's local file system keeps one
// CRC32 per 512 bytes of a file.
const HadoopChecksumChunk = 512

// HadoopChecksum returns the bytes of the ".<name>.crc" file Hadoop's ChecksumFileSystem (the
// local file system Spark writes through) keeps next to a file of content data: "crc\0", the
// chunk size as a big-endian int32, then the big-endian CRC32 (IEEE) of each 512-byte chunk.
// Spark's checkpoints on a local disk carry one for every log and state file.
func HadoopChecksum(data []byte) []byte {
	var c HadoopChecksummer
	c.Write(data)
	return c.Sum()
}

// HadoopChecksummer computes HadoopChecksum of the bytes written to it, as a stream: a file of
// a gigabyte is checksummed holding one chunk and the checksums (1/128 of its size).
type HadoopChecksummer struct {
	out   []byte
	chunk []byte
}

// Write adds p to the file checksummed; it never fails.
func (c *HadoopChecksummer) Write(p []byte) (int, error) {
	n := len(p)
	if c.out == nil {
		c.out = make([]byte, 8, 8+4*(len(p)/HadoopChecksumChunk+1))
		copy(c.out, "crc\x00")
		binary.BigEndian.PutUint32(c.out[4:], HadoopChecksumChunk)
	}
	for len(p) > 0 {
		if len(c.chunk) == 0 && len(p) >= HadoopChecksumChunk {
			c.out = binary.BigEndian.AppendUint32(c.out, crc32.ChecksumIEEE(p[:HadoopChecksumChunk]))
			p = p[HadoopChecksumChunk:]
			continue
		}
		k := min(len(p), HadoopChecksumChunk-len(c.chunk))
		c.chunk = append(c.chunk, p[:k]...)
		p = p[k:]
		if len(c.chunk) == HadoopChecksumChunk {
			c.out = binary.BigEndian.AppendUint32(c.out, crc32.ChecksumIEEE(c.chunk))
			c.chunk = c.chunk[:0]
		}
	}
	return n, nil
}

// Sum returns the checksum file's bytes for what was written so far.
func (c *HadoopChecksummer) Sum() []byte {
	if c.out == nil {
		_, _ = c.Write(nil)
	}
	out := c.out
	if len(c.chunk) > 0 {
		out = binary.BigEndian.AppendUint32(out[:len(out):len(out)], crc32.ChecksumIEEE(c.chunk))
	}
	return out
}
