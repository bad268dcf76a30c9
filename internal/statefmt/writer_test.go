package statefmt

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestLZ4WriterReusesBuffers: writers of the default block size reuse a closed writer's
// buffers; files written one after the other, and interleaved, each decode to their own
// bytes, and a closed writer refuses writes without touching the buffers it gave away.
func TestLZ4WriterReusesBuffers(t *testing.T) {
	payload := func(seed string, n int) []byte { return []byte(strings.Repeat(seed, n)) }
	check := func(name string, file, want []byte) {
		t.Helper()
		r, err := Decompress(name, CodecLZ4, bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: decoded %d bytes, want %d (first differ at %d)", name, len(got), len(want), firstDiff(got, want))
		}
	}
	a, b := payload("alpha-", 20_000), payload("b", 50) // a spans several 32 KiB blocks
	var fa, fb bytes.Buffer
	wa := NewLZ4Writer(&fa, 0)
	if _, err := wa.Write(a); err != nil {
		t.Fatal(err)
	}
	if err := wa.Close(); err != nil {
		t.Fatal(err)
	}
	wb := NewLZ4Writer(&fb, 0) // likely wa's buffers
	wc := NewLZ4Writer(io.Discard, 0)
	if _, err := wb.Write(b[:10]); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Write(a); err != nil {
		t.Fatal(err)
	}
	if n, err := wa.Write(a); err == nil || n != 0 {
		t.Fatalf("Write after Close: %d, %v; want 0 and an error", n, err)
	}
	if err := wa.Close(); err == nil {
		t.Fatal("a second Close returned nil")
	}
	if _, err := wb.Write(b[10:]); err != nil {
		t.Fatal(err)
	}
	if err := wb.Close(); err != nil {
		t.Fatal(err)
	}
	check("a", fa.Bytes(), a)
	check("b", fb.Bytes(), b)
}

func firstDiff(x, y []byte) int {
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return i
		}
	}
	return min(len(x), len(y))
}
