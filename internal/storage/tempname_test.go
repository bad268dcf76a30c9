package storage

import (
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// ckpt's temporary files keep Spark's form (doctor and Spark see a temp of the target) and are
// told from Spark's own (random, version 4 UUIDs) by their name.
func TestOwnTempNames(t *testing.T) {
	for _, target := range []string{"5", "9.compact", "metadata"} {
		n := TempName(target)
		if !IsOwnTemp(n) {
			t.Errorf("IsOwnTemp(%q) = false", n)
		}
		if p := logformat.ParseName(n); p.Kind != logformat.NameTemp || p.Target != target {
			t.Errorf("ParseName(%q) = %+v, want a temp of %s", n, p, target)
		}
	}
	if a, b := TempName("5"), TempName("5"); a == b {
		t.Error("two temp names alike")
	}
	for _, n := range []string{
		".5.0b8e9d86-3a2f-4c55-9f59-6c1f0d6a2e11.tmp",     // Spark's
		".5.636b7074-3a2f-4c55-9f59-6c1f0d6a2e11.tmp",     // the tag, version 4
		".5.636b7074-3a2f-8c55-9f59-6c1f0d6a2e1g.tmp",     // not hex
		"5.636b7074-3a2f-8c55-9f59-6c1f0d6a2e11.tmp",      // not hidden
		".5.636b7074-3a2f-8c55-9f59-6c1f0d6a2e11.tmp.crc", // a checksum
		".636b7074-3a2f-8c55-9f59-6c1f0d6a2e11.tmp",       // no target
	} {
		if IsOwnTemp(n) {
			t.Errorf("IsOwnTemp(%q) = true", n)
		}
	}
}
