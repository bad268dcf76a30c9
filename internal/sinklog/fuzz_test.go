package sinklog

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
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

// FuzzSummarizeNames gives the log files arbitrary names (batch ids up to 2^63-1, .compact or
// not): Summarize, Verify and PlanRebuild never panic and never size anything by an id, and the
// present files and the missing runs partition the valid span.
func FuzzSummarizeNames(f *testing.F) {
	f.Add("9223372036854775807", "3")
	f.Add("9223372036854775806.compact", "9")
	f.Add("2147483646.compact", "2147483647")
	f.Add("0.compact", "9223372036854775807.compact")
	f.Fuzz(func(t *testing.T, a, b string) {
		s := storage.NewMem()
		for _, n := range []string{a, b} {
			if n == "" || strings.ContainsAny(n, "/\x00") {
				return
			}
			if err := s.WriteFile(context.Background(), Dir+"/"+n, []byte("v1\n")); err != nil {
				return
			}
		}
		ctx := context.Background()
		sum, err := Summarize(ctx, s, Dir)
		if err != nil {
			t.Fatal(err)
		}
		if sum.HasLatest && sum.Latest >= 0 && sum.CompactInterval > 0 {
			var missing uint64
			for _, m := range sum.Missing {
				if m.First < sum.Valid.First || m.Last > sum.Valid.Last || m.First > m.Last {
					t.Fatalf("missing run %v outside %v", m, sum.Valid)
				}
				missing += m.Len()
			}
			var present uint64
			for _, id := range sum.Batches {
				if id >= sum.Valid.First && id <= sum.Valid.Last {
					present++
				}
			}
			if present+missing != sum.Valid.Len() {
				t.Fatalf("present %d + missing %d != span %v", present, missing, sum.Valid)
			}
		}
		if _, err := Verify(ctx, s, VerifyOptions{MaxProblems: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := PlanRebuild(ctx, s, RebuildOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
