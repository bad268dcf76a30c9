package shell

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/data/ckpt":   "/data/ckpt",
		"s3://b/p":     "s3://b/p",
		"my ckpt":      "'my ckpt'",
		"it's":         `'it'\''s'`,
		"":             "''",
		"/a/$HOME/`x`": "'/a/$HOME/`x`'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
