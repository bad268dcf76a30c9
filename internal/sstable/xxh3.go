package sstable

import (
	"encoding/binary"
	"math/bits"
)

// XXH3-64 with seed 0 and the default secret, as the xxHash specification defines it: RocksDB's
// default block checksum (kXXH3) since 6.27, so the SST files of Spark 4 (RocksDB JNI 9).

var xxh3Secret = [192]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

const (
	xp32_1 = 0x9E3779B1
	xp32_2 = 0x85EBCA77
	xp32_3 = 0xC2B2AE3D
	xp64_1 = 0x9E3779B185EBCA87
	xp64_2 = 0xC2B2AE3D27D4EB4F
	xp64_3 = 0x165667B19E3779F9
	xp64_4 = 0x85EBCA77C2B2AE63
	xp64_5 = 0x27D4EB2F165667C5
)

func le64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
func le32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }

func fold64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func xxh64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= xp64_2
	h ^= h >> 29
	h *= xp64_3
	return h ^ h>>32
}

func xxh3Avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= 0x165667919E3779F9
	return h ^ h>>32
}

func mix16(in []byte, i int, s int) uint64 {
	return fold64(le64(in, i)^le64(xxh3Secret[:], s), le64(in, i+8)^le64(xxh3Secret[:], s+8))
}

// xxh3 is XXH3_64bits(in) (seed 0).
func xxh3(in []byte) uint64 {
	s := xxh3Secret[:]
	n := len(in)
	switch {
	case n == 0:
		return xxh64Avalanche(le64(s, 56) ^ le64(s, 64))
	case n <= 3:
		c := uint32(in[0])<<16 | uint32(in[n>>1])<<24 | uint32(in[n-1]) | uint32(n)<<8
		return xxh64Avalanche(uint64(c) ^ uint64(le32(s, 0)^le32(s, 4)))
	case n <= 8:
		v := (uint64(le32(in, n-4)) | uint64(le32(in, 0))<<32) ^ (le64(s, 8) ^ le64(s, 16))
		v ^= bits.RotateLeft64(v, 49) ^ bits.RotateLeft64(v, 24)
		v *= 0x9FB21C651E98DF25
		v ^= v>>35 + uint64(n)
		v *= 0x9FB21C651E98DF25
		return v ^ v>>28
	case n <= 16:
		lo := le64(in, 0) ^ (le64(s, 24) ^ le64(s, 32))
		hi := le64(in, n-8) ^ (le64(s, 40) ^ le64(s, 48))
		return xxh3Avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + fold64(lo, hi))
	case n <= 128:
		acc := uint64(n) * xp64_1
		if n > 32 {
			if n > 64 {
				if n > 96 {
					acc += mix16(in, 48, 96) + mix16(in, n-64, 112)
				}
				acc += mix16(in, 32, 64) + mix16(in, n-48, 80)
			}
			acc += mix16(in, 16, 32) + mix16(in, n-32, 48)
		}
		acc += mix16(in, 0, 0) + mix16(in, n-16, 16)
		return xxh3Avalanche(acc)
	case n <= 240:
		acc := uint64(n) * xp64_1
		for i := 0; i < 8; i++ {
			acc += mix16(in, 16*i, 16*i)
		}
		acc = xxh3Avalanche(acc)
		for i := 8; i < n/16; i++ {
			acc += mix16(in, 16*i, 16*(i-8)+3)
		}
		acc += mix16(in, n-16, 119)
		return xxh3Avalanche(acc)
	}
	acc := [8]uint64{xp32_3, xp64_1, xp64_2, xp64_3, xp64_4, xp32_2, xp64_5, xp32_1}
	const stripes = (192 - 64) / 8
	const blockLen = 64 * stripes
	blocks := (n - 1) / blockLen
	for b := 0; b < blocks; b++ {
		for st := 0; st < stripes; st++ {
			accumulate(&acc, in[b*blockLen+st*64:], st*8)
		}
		for i := range acc {
			a := acc[i]
			a ^= a >> 47
			a ^= le64(s, 192-64+8*i)
			acc[i] = a * xp32_1
		}
	}
	last := ((n - 1) - blockLen*blocks) / 64
	for st := 0; st < last; st++ {
		accumulate(&acc, in[blocks*blockLen+st*64:], st*8)
	}
	accumulate(&acc, in[n-64:], 192-64-7)
	r := uint64(n) * xp64_1
	for i := 0; i < 4; i++ {
		r += fold64(acc[2*i]^le64(s, 11+16*i), acc[2*i+1]^le64(s, 11+16*i+8))
	}
	return xxh3Avalanche(r)
}

func accumulate(acc *[8]uint64, in []byte, s int) {
	for i := 0; i < 8; i++ {
		v := le64(in, 8*i)
		k := v ^ le64(xxh3Secret[:], s+8*i)
		acc[i^1] += v
		acc[i] += uint64(uint32(k)) * (k >> 32)
	}
}

// xxh3Stream is xxh3 of n bytes given in pieces (Write), for a block read a part at a time:
// it holds the 64-bit accumulators, a partial stripe and the last 64 bytes, not the input.
type xxh3Stream struct {
	n        int
	stripes  int // stripes accumulated in the loop (the long input's blocks and last stripes)
	full     int // stripes that belong to whole blocks (each block's are scrambled after it)
	acc      [8]uint64
	pend     []byte   // bytes of a stripe not yet complete
	tail     [64]byte // the last 64 bytes seen
	small    []byte   // the whole input when it is 240 bytes or fewer
	stripeAt int      // stripes done
}

func newXXH3Stream(n int) *xxh3Stream {
	s := &xxh3Stream{n: n, acc: [8]uint64{xp32_3, xp64_1, xp64_2, xp64_3, xp64_4, xp32_2, xp64_5, xp32_1}}
	if n > 240 {
		const perBlock = (192 - 64) / 8
		blocks := (n - 1) / (64 * perBlock)
		s.full = blocks * perBlock
		s.stripes = s.full + ((n-1)-64*perBlock*blocks)/64
	}
	return s
}

func (s *xxh3Stream) Write(p []byte) {
	if s.n <= 240 {
		s.small = append(s.small, p...)
		return
	}
	// The rolling tail: the last 64 bytes of everything written.
	if len(p) >= 64 {
		copy(s.tail[:], p[len(p)-64:])
	} else {
		copy(s.tail[:], s.tail[len(p):])
		copy(s.tail[64-len(p):], p)
	}
	for len(p) > 0 && s.stripeAt < s.stripes {
		var st []byte
		if len(s.pend) == 0 && len(p) >= 64 {
			st, p = p[:64], p[64:]
		} else {
			k := min(64-len(s.pend), len(p))
			s.pend, p = append(s.pend, p[:k]...), p[k:]
			if len(s.pend) < 64 {
				return
			}
			st, s.pend = s.pend, s.pend[:0]
		}
		const perBlock = (192 - 64) / 8
		i := s.stripeAt % perBlock
		accumulate(&s.acc, st, i*8)
		s.stripeAt++
		if i == perBlock-1 && s.stripeAt <= s.full {
			for j := range s.acc {
				a := s.acc[j]
				a ^= a >> 47
				a ^= le64(xxh3Secret[:], 192-64+8*j)
				s.acc[j] = a * xp32_1
			}
		}
	}
}

// Sum is the hash, once all n bytes are written.
func (s *xxh3Stream) Sum() uint64 {
	if s.n <= 240 {
		return xxh3(s.small)
	}
	acc := s.acc
	accumulate(&acc, s.tail[:], 192-64-7)
	r := uint64(s.n) * xp64_1
	for i := 0; i < 4; i++ {
		r += fold64(acc[2*i]^le64(xxh3Secret[:], 11+16*i), acc[2*i+1]^le64(xxh3Secret[:], 11+16*i+8))
	}
	return xxh3Avalanche(r)
}
