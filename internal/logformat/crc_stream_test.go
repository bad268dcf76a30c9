package logformat

import (
	"bytes"
	"hash/crc32"
	"testing"
)

// TestHadoopChecksummer: written in pieces of any size, the stream gives the checksum of the
// whole (8 bytes of header, then one CRC per 512-byte chunk, the last one short).
func TestHadoopChecksummer(t *testing.T) {
	data := make([]byte, 3*HadoopChecksumChunk+100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := []byte("crc\x00\x00\x00\x02\x00")
	for i := 0; i < len(data); i += HadoopChecksumChunk {
		c := crc32.ChecksumIEEE(data[i:min(i+HadoopChecksumChunk, len(data))])
		want = append(want, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
	}
	for _, step := range []int{1, 7, 512, 600, len(data)} {
		var c HadoopChecksummer
		for i := 0; i < len(data); i += step {
			_, _ = c.Write(data[i:min(i+step, len(data))])
		}
		if got := c.Sum(); !bytes.Equal(got, want) {
			t.Errorf("pieces of %d: % x\nwant % x", step, got, want)
		}
	}
	if got := HadoopChecksum(nil); !bytes.Equal(got, want[:8]) {
		t.Errorf("empty file: % x", got)
	}
	if got := HadoopChecksum(data); !bytes.Equal(got, want) {
		t.Errorf("HadoopChecksum: % x", got)
	}
}
