package repartition

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"testing"
)

// TestContentUUIDSlabs: the name of rows hashed on the hasher goroutine, in slabs of any size
// (smaller than a row, a few rows, the real size), is the name of the same rows hashed one by
// one in order, as the SST files written before the hasher were named (the goldens' names).
func TestContentUUIDSlabs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type row struct{ key, value []byte }
	var rows []row
	for i := range 3000 {
		k := make([]byte, 1+rng.Intn(40))
		v := make([]byte, rng.Intn(300))
		if i%500 == 0 {
			v = make([]byte, 3*hashSlab/2) // a row bigger than a slab
		}
		rng.Read(k)
		rng.Read(v)
		rows = append(rows, row{k, v})
	}
	for _, n := range []int{0, 1, 2, 37, len(rows)} {
		h := sha256.New()
		fmt.Fprintf(h, "%d\x00%s\x00%d\x00%d\x00", int64(3), "left", 5, int64(9))
		for _, r := range rows[:n] {
			fmt.Fprintf(h, "%d:%d:", len(r.key), len(r.value))
			h.Write(r.key)
			h.Write(r.value)
		}
		s := h.Sum(nil)
		s[6] = s[6]&0x0f | 0x80
		s[8] = s[8]&0x3f | 0x80
		want := fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
		for _, slab := range []int{1, 7, 100, 4096, hashSlab} {
			c := newContentUUIDSlab(3, "left", 5, 9, slab)
			for _, r := range rows[:n] {
				// The caller's buffers are reused after add returns, as the sorter's are.
				k, v := append([]byte(nil), r.key...), append([]byte(nil), r.value...)
				c.add(k, v)
				clear(k)
				clear(v)
			}
			if got := c.uuid(); got != want || c.n != int64(n) {
				t.Errorf("%d rows, slabs of %d: %s (%d rows), want %s", n, slab, got, c.n, want)
			}
			c.finish() // a second finish, as writeSST's deferred one after uuid, is harmless
		}
	}
}

// TestContentUUIDFinishStopsHasher: a write that fails mid-way finishes the name without
// asking for it, and the hasher goroutine ends (finish returns).
func TestContentUUIDFinishStopsHasher(t *testing.T) {
	c := newContentUUIDSlab(0, "default", 0, 1, 8)
	for range 100 {
		c.add([]byte("key"), []byte("value"))
	}
	c.finish()
	c.finish()
	select {
	case <-c.done:
	default:
		t.Fatal("the hasher is still running after finish")
	}
}
