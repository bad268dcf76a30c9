package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

func TestPlainTableWhenPiped(t *testing.T) {
	io, _, out, _ := iostreams.Test()
	New(io).Table(Table{Headers: []string{"batch", "committed"}, Rows: [][]string{{"7", "yes"}, {"10", "no"}}})
	want := "BATCH  COMMITTED\n7      yes\n10     no\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
}

func TestTerminalTableWithoutColourHasNoEscapes(t *testing.T) {
	io, _, out, _ := iostreams.Test()
	io.SetStdoutTTY(true)
	io.SetColorEnabled(false) // NO_COLOR
	r := New(io)
	r.Table(Table{Title: "Batches", Headers: []string{"batch"}, Rows: [][]string{{"7"}}})
	r.Println(r.Bad("error"), r.Warn("warn"), r.Bold("b"))
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("escape sequences with colour off:\n%q", out.String())
	}
	if !strings.Contains(out.String(), "╭") {
		t.Errorf("terminal table should have a border:\n%s", out.String())
	}
}

func TestTerminalTableWithColour(t *testing.T) {
	io, _, out, _ := iostreams.Test()
	io.SetStdoutTTY(true)
	io.SetColorEnabled(true)
	r := New(io)
	r.Println(r.Bad("error"))
	if !strings.Contains(out.String(), "\x1b[") {
		t.Errorf("expected colour escapes, got %q", out.String())
	}
}

func TestJSONDoesNotEscapeHTML(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, map[string]string{"path": "a&b<c>"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"a&b<c>"`) {
		t.Errorf("got %s", b.String())
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatTable, "table": FormatTable, "json": FormatJSON} {
		got, err := ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("%q: got %v %v", in, got, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil {
		t.Error("yaml accepted")
	}
}
