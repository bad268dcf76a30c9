package sstable

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/statefmt"
)

// decompress is the state reader's decompressor: statefmt's raw block codecs.
func decompress(c Compression, dst, src []byte) ([]byte, error) {
	codec := map[Compression]string{LZ4Compression: statefmt.CodecLZ4, LZ4HCCompression: statefmt.CodecLZ4,
		SnappyCompression: statefmt.CodecSnappy, ZSTDCompression: statefmt.CodecZstd}[c]
	return statefmt.DecompressBlock(codec, dst, src)
}

// fixtureSSTs are SST files real Spark wrote (testdata/spark-state).
func fixtureSSTs(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/spark-state/*/*rocksdb*/checkpoint/state/*/*/SSTs/*.sst")
	if err != nil || len(files) == 0 {
		t.Fatalf("no SST fixtures: %v", err)
	}
	return files
}

func TestDumpFixture(t *testing.T) {
	for _, f := range fixtureSSTs(t)[:3] {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := Open(f, data, Options{Decompress: decompress})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v %+v %v", f, tb.Footer, tb.Properties, tb.MetaBlocks)
		it := tb.Iter()
		for it.Next() {
			t.Logf("%x seq=%d %s %x", it.UserKey, it.Seq, it.Kind, it.Value)
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
}
