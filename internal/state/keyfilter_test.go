package state

import (
	"fmt"
	"testing"
)

// The filter may only err towards "maybe": a changed key it denied would be read from the
// snapshot as well as from the deltas.
func TestKeyFilterHasNoFalseNegatives(t *testing.T) {
	for _, n := range []int{0, 1, 3, 1000, 60_000} {
		f := newKeyFilter(n)
		for i := range n {
			f.add(fmt.Sprintf("key-%d", i))
		}
		for i := range n {
			if !f.mayHave(fmt.Appendf(nil, "key-%d", i)) {
				t.Fatalf("n=%d: key-%d added but denied", n, i)
			}
		}
		fp := 0
		const probes = 100_000
		for i := range probes {
			if f.mayHave(fmt.Appendf(nil, "other-%d", i)) {
				fp++
			}
		}
		// 16 bits and two probes per key: about 2% in theory; 5% means the probes collide.
		if n > 0 && fp > probes/20 {
			t.Errorf("n=%d: %d of %d absent keys pass the filter", n, fp, probes)
		}
		if n == 0 && fp != 0 {
			t.Errorf("empty filter passed %d keys", fp)
		}
	}
}
