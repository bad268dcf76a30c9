package sinklog

import (
	"path"
	"strings"
	"testing"
)

// FuzzResolver feeds log entry paths (the bytes of a sink log, so anything) to the resolver:
// it never panics, and a path it accepts is clean, relative and inside the output, so verify
// and repair never look outside it.
func FuzzResolver(f *testing.F) {
	for _, s := range [][2]string{
		{"/data/out", "file:/data/out/part-0"},
		{"/data/out", "file:///data/out/k=1/../../etc/passwd"},
		{"s3://b/out", "s3a://b/out/part%20x"},
		{"abfss://c@a.dfs.core.windows.net/o", "abfss://c@a.dfs.core.windows.net/o/p"},
		{"mem://x", "mem://x/a/b"},
		{"/o", "%zz:/o/p"},
		{"/o", "/o/./p//q"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, out, entry string) {
		r := NewResolver(out, []string{entry})
		rel, ok := r.Rel(entry)
		if !ok {
			return
		}
		if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("Rel(%q) under %q = %q", entry, out, rel)
		}
	})
}
