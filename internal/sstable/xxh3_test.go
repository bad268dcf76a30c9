package sstable

import "testing"

// TestXXH3 checks xxh3 against the reference implementation's hashes of i%251 byte sequences,
// one length per branch boundary (longer inputs, the striped path, are the 4.x fixtures' blocks,
// and were compared once with github.com/zeebo/xxh3 up to 64 KiB).
func TestXXH3(t *testing.T) {
	gen := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 251)
		}
		return b
	}
	for _, c := range []struct {
		n    int
		want uint64
	}{
		{0, 0x2d06800538d394c2}, {1, 0xc44bdff4074eecdb}, {3, 0x5f4299fc161c9cbb},
		{4, 0x60dab036a58211f2}, {8, 0x3a1c2d7c85af88f8}, {9, 0xe9612598145bb9dc},
		{16, 0x8355e3a6f61770db}, {17, 0x9ef341a99de37328}, {33, 0xe68c56ba88991e58},
		{128, 0x85c6174c7ff4c46b}, {129, 0xec7642b431ba3e5a}, {240, 0x375a384d957fe865},
		{241, 0x02e8cd95421c6d02}, {244, 0xbc17c91ec3cf8d7f},
	} {
		if got := xxh3(gen(c.n)); got != c.want {
			t.Errorf("xxh3 of %d bytes = %#x, want %#x", c.n, got, c.want)
		}
	}
}

// TestXXH3Stream checks the streamed hash against xxh3 for lengths around the stripe and block
// boundaries, the input given in pieces of several sizes.
func TestXXH3Stream(t *testing.T) {
	in := make([]byte, 5000)
	for i := range in {
		in[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{0, 1, 17, 240, 241, 255, 256, 257, 1023, 1024, 1025, 1088, 1089, 2048, 2049, 4999} {
		for _, piece := range []int{1, 3, 63, 64, 65, 1000, n + 1} {
			s := newXXH3Stream(n)
			for b := in[:n]; len(b) > 0; {
				k := min(piece, len(b))
				s.Write(b[:k])
				b = b[k:]
			}
			if got, want := s.Sum(), xxh3(in[:n]); got != want {
				t.Errorf("%d bytes in pieces of %d: %#x, want %#x", n, piece, got, want)
			}
		}
	}
}
