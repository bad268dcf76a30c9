package statefmt

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestChangelogWriterRealFiles: every v1 and v3 changelog Spark wrote in testdata/spark-state,
// its header and records written again by ChangelogWriter in the file's codec, decompresses to
// Spark's bytes exactly.
func TestChangelogWriterRealFiles(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/spark-state/*/*/checkpoint/state/*/*/*.changelog")
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		codec := DetectCodec(data)
		plain := decompressAll(t, f, codec, data)
		br := bufio.NewReader(bytes.NewReader(plain))
		h, err := ReadTypedChangelogHeader(f, br)
		if err != nil {
			t.Fatal(err)
		}
		if h.Typed() {
			continue
		}
		var out bytes.Buffer
		w, err := NewChangelogWriter(codec, &out, *h)
		if err != nil {
			t.Fatal(err)
		}
		rr := NewRecordReader(f, Changelog, br)
		for {
			r, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Delete {
				err = w.Delete(r.Key[1:])
			} else {
				err = w.Put(r.Key[1:], r.Value[1:])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := decompressAll(t, f, codec, out.Bytes()); !bytes.Equal(got, plain) {
			t.Errorf("%s (v%d, %s): ckpt's changelog decompresses to %d bytes other than Spark's %d", f, h.Version, codec, len(got), len(plain))
		}
		n++
	}
	if n < 20 {
		t.Errorf("%d changelogs rewritten", n)
	}
}

func decompressAll(t *testing.T, f, codec string, data []byte) []byte {
	t.Helper()
	r, err := Decompress(f, codec, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChangelogWriterRefuses: typed formats, and a lineage in v1.
func TestChangelogWriterRefuses(t *testing.T) {
	for _, h := range []ChangelogHeader{{Version: 2}, {Version: 4}, {Version: 1, Lineage: []LineageEntry{{Version: 1, UniqueID: "x"}}}} {
		if _, err := NewChangelogWriter(CodecLZ4, io.Discard, h); err == nil {
			t.Errorf("header %+v accepted", h)
		}
	}
}
