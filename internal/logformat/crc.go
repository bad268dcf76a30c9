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
	out := make([]byte, 8, 8+4*(len(data)/HadoopChecksumChunk+1))
	copy(out, "crc\x00")
	binary.BigEndian.PutUint32(out[4:], HadoopChecksumChunk)
	for i := 0; i < len(data); i += HadoopChecksumChunk {
		out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(data[i:min(i+HadoopChecksumChunk, len(data))]))
	}
	return out
}
