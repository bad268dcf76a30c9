package logformat

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// A line longer than MaxLineBytes is refused with an error naming the file and the line, before
// any copy or JSON parse of it.
func TestLineTooLong(t *testing.T) {
	long := bytes.Repeat([]byte("a"), MaxLineBytes+1)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name  string
		parse func(string, []byte) error
		data  []byte
		line  int
	}{
		{"offsets", func(f string, d []byte) error { _, err := ParseOffsets(f, d); return err },
			cat([]byte("v1\n"), long), 2},
		{"offsets source", func(f string, d []byte) error { _, err := ParseOffsets(f, d); return err },
			cat([]byte("v1\n{}\n"), long), 3},
		{"commits", func(f string, d []byte) error { _, err := ParseCommit(f, d); return err },
			cat([]byte("v1\n"), long), 2},
		{"metadata", func(f string, d []byte) error { _, err := ParseStreamMetadata(f, d); return err },
			long, 1},
		{"operator", func(f string, d []byte) error { _, err := ParseOperatorMetadata(f, d); return err },
			cat([]byte("v1\n"), long), 2},
		{"kafka initial", func(f string, d []byte) error { _, err := ParseKafkaInitialOffsets(f, d); return err },
			cat([]byte{0}, []byte("v1\n"), long), 2},
		{"sink log", func(f string, d []byte) error { _, err := ParseSinkLog(f, d); return err },
			cat([]byte("v1\n"), long), 2},
		{"sink log streamed", func(f string, d []byte) error {
			r, err := NewSinkLogReader(f, bytes.NewReader(d))
			for err == nil {
				_, err = r.Next()
			}
			return err
		}, cat([]byte("v1\n"), long), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse("offsets/7", tc.data)
			var le *Error
			if !errors.As(err, &le) || le.Kind != KindLineTooLong || le.Line != tc.line || le.File != "offsets/7" {
				t.Fatalf("err = %v (%+v), want line-too-long at offsets/7 line %d", err, le, tc.line)
			}
			if msg := err.Error(); !strings.Contains(msg, "offsets/7: line") || !strings.Contains(msg, "at most 8 MiB") {
				t.Errorf("message = %s", msg)
			}
		})
	}
}

// The 100 MB single-line offsets file that once cost over 1 GB: parsing it now allocates almost
// nothing (the line is measured, not copied).
func TestLineTooLongAllocates(t *testing.T) {
	data := append([]byte("v1\n{}\n"), bytes.Repeat([]byte("x"), 100<<20)...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ParseOffsets("offsets/7", data)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("parsed")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("parsing a 100 MB line allocated %d bytes, want under 1 MiB", n)
	}
}

// Lines up to the limit still parse.
func TestLineAtLimit(t *testing.T) {
	src := `{"t":{"0":` + strings.Repeat("0", MaxLineBytes-len(`{"t":{"0":1}}`)) + `1}}`
	if len(src) != MaxLineBytes {
		t.Fatalf("test line is %d bytes", len(src))
	}
	o, err := ParseOffsets("offsets/7", []byte("v1\n{}\n"+src))
	if err != nil || len(o.Sources) != 1 {
		t.Fatalf("%v %+v", err, o)
	}
}
