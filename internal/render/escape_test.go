package render

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want, text string }{
		{"offsets/7", "offsets/7", "offsets/7"},
		{"offsets/.7.\x1b[2Jx.tmp", `offsets/.7.\x1b[2Jx.tmp`, `offsets/.7.\x1b[2Jx.tmp`},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"a\r\nb\tc\x7f", `a\r\nb\tc\x7f`, "a\\r\nb\\tc\\x7f"},
		{"csi \u009b2J", `csi \u009b2J`, `csi \u009b2J`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
		{"héllo ✓", "héllo ✓", "héllo ✓"},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := EscapeText(tc.in); got != tc.text {
			t.Errorf("EscapeText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

func TestEscapeStrings(t *testing.T) {
	type inner struct{ Name string }
	type report struct {
		Path    string
		Names   []string
		Conf    map[string]string
		Inner   *inner
		Any     any
		private string
	}
	r := &report{Path: "a\x1bb", Names: []string{"\x07"}, Conf: map[string]string{"k\x1b": "v\x1b"},
		Inner: &inner{Name: "\x1b[2J"}, Any: inner{Name: "\x1b"}, private: "\x1b"}
	EscapeStrings(r)
	if r.Path != `a\x1bb` || r.Names[0] != `\x07` || r.Conf[`k\x1b`] != `v\x1b` || len(r.Conf) != 1 ||
		r.Inner.Name != `\x1b[2J` || r.Any.(inner).Name != `\x1b` || r.private != "\x1b" {
		t.Errorf("report = %+v", r)
	}
}
