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

// Hints and plans printed with Printf and Println wrap at the terminal's width under their
// indentation, as doctor's findings do; a prompt begun without its newline and piped output are
// written as they are. Before, every command but doctor ran past column 80 and the terminal
// broke its words.
func TestPrintWrapsAtTheTerminalWidth(t *testing.T) {
	long := "  Restart: batch 20000 re-runs from the offsets of batch 19999, and the file sink skips it because its log already holds batch 20000 (a hint that must fit)"
	io, _, out, _ := iostreams.Test()
	io.SetStdoutTTY(true)
	io.SetTerminalWidth(80)
	r := New(io)
	r.Printf("%s\n", long)
	r.Println("short line")
	r.Printf("Delete %d files of %s? [y/N] ", 3, strings.Repeat("s3://bucket/prefix/", 5))
	r.Printf("y\n")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for _, l := range lines[:2] {
		if w := len(l); w > 80 || !strings.HasPrefix(l, "  ") {
			t.Errorf("%d cells or not indented: %q", w, l)
		}
	}
	if strings.Join(strings.Fields(lines[0]+" "+lines[1]), " ") != strings.Join(strings.Fields(long), " ") {
		t.Errorf("words changed:\n%s", out.String())
	}
	if lines[2] != "short line" || !strings.HasSuffix(lines[3], "[y/N] y") {
		t.Errorf("short line or prompt changed:\n%s", out.String())
	}

	io, _, out, _ = iostreams.Test() // piped
	New(io).Printf("%s\n", long)
	if out.String() != long+"\n" {
		t.Errorf("piped output wrapped: %q", out.String())
	}
}
