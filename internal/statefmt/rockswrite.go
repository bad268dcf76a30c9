package statefmt

import "github.com/pierrec/lz4/v4"

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
