package logformat

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"
)

func readerLines(data []byte, chunked bool) lines {
	var r = bytes.NewReader(data)
	var lr *lineReader
	if chunked {
		lr = newLineReader(iotestOneByte(data))
	} else {
		lr = newLineReader(r)
	}
	var ls lines
	for {
		line, ok, err := lr.next()
		if err != nil {
			panic(err)
		}
		if !ok {
			break
		}
		ls.text = append(ls.text, append([]byte(nil), line...))
	}
	ls.trailingNewline, ls.crBreaks = lr.trailingNewline, lr.crBreaks
	if len(ls.text) == 0 {
		ls.trailingNewline = false
	}
	return ls
}

func TestSplitLinesMatchesScala(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    []string
		trailer bool
		cr      int
	}{
		{"", nil, false, 0},
		{"\n", []string{""}, true, 0},
		{"a", []string{"a"}, false, 0},
		{"a\n", []string{"a"}, true, 0},
		{"a\n\n", []string{"a", ""}, true, 0},
		{"a\r\nb", []string{"a", "b"}, false, 1},
		{"a\rb\r", []string{"a", "b"}, true, 2},
		{"a\r\r\nb", []string{"a", "", "b"}, false, 2},
		{"\r\n\r\n", []string{"", ""}, true, 2},
		{"a\n\rb", []string{"a", "", "b"}, false, 1},
	} {
		ls := splitLines([]byte(c.in))
		var got []string
		for _, l := range ls.text {
			got = append(got, string(l))
		}
		if !reflect.DeepEqual(got, c.want) || ls.trailingNewline != c.trailer || ls.crBreaks != c.cr {
			t.Errorf("splitLines(%q) = %q %v %d", c.in, got, ls.trailingNewline, ls.crBreaks)
		}
	}
	// The streaming splitter agrees with the in-memory one on random input,
	// with large and with tiny reads.
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("ab\r\n")
	for i := 0; i < 3000; i++ {
		data := make([]byte, rng.Intn(200))
		for j := range data {
			data[j] = alphabet[rng.Intn(len(alphabet))]
		}
		want := splitLines(data)
		for _, chunked := range []bool{false, true} {
			got := readerLines(data, chunked)
			if len(got.text) != len(want.text) || got.crBreaks != want.crBreaks ||
				(len(want.text) > 0 && got.trailingNewline != want.trailingNewline) {
				t.Fatalf("%q (chunked %v): reader %q %v %d, splitLines %q %v %d", data, chunked,
					got.text, got.trailingNewline, got.crBreaks, want.text, want.trailingNewline, want.crBreaks)
			}
			for k := range want.text {
				if !bytes.Equal(got.text[k], want.text[k]) {
					t.Fatalf("%q: line %d differs", data, k)
				}
			}
		}
	}
}

// TestSplitLinesLinear guards against quadratic scanning when one kind of
// line break is plentiful and the other is rare.
func TestSplitLinesLinear(t *testing.T) {
	data := append(bytes.Repeat([]byte("x\r"), 1<<20), '\n')
	// No clock: a quadratic split of a million lines would run for hours, so go test's timeout
	// fails it, where a wall-clock bound failed on a loaded CI machine.
	if n := len(splitLines(data).text); n != 1<<20 {
		t.Fatalf("%d lines", n)
	}
	if n := len(readerLines(data, false).text); n != 1<<20 {
		t.Fatalf("%d lines", n)
	}
	long := append(bytes.Repeat([]byte("x"), 1<<20), '\r', 'y')
	if n := len(readerLines(long, true).text); n != 2 {
		t.Fatalf("%d lines", n)
	}
}
