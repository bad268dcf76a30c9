package statefmt

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Spark's shuffle partitioning (HashPartitioning): pmod(Murmur3Hash(k1, k2, …), N), the 32-bit
// Murmur3 of Spark's Murmur3_x86_32 with seed 42, folded over the key columns in order. It
// decides which state partition holds a key, so a repartition must compute it exactly.

// HashSeed is the seed of Spark's hash() and of HashPartitioning.
const HashSeed = 42

const (
	murmurC1 = 0xcc9e2d51
	murmurC2 = 0x1b873593
)

func mixK1(k1 uint32) uint32 {
	k1 *= murmurC1
	k1 = bits.RotateLeft32(k1, 15)
	return k1 * murmurC2
}

func mixH1(h1, k1 uint32) uint32 {
	h1 ^= k1
	h1 = bits.RotateLeft32(h1, 13)
	return h1*5 + 0xe6546b64
}

func fmix(h1 uint32, length int) uint32 {
	h1 ^= uint32(length)
	h1 ^= h1 >> 16
	h1 *= 0x85ebca6b
	h1 ^= h1 >> 13
	h1 *= 0xc2b2ae35
	h1 ^= h1 >> 16
	return h1
}

func hashInt(v int32, seed uint32) uint32 { return fmix(mixH1(seed, mixK1(uint32(v))), 4) }

func hashLong(v int64, seed uint32) uint32 {
	h := mixH1(seed, mixK1(uint32(v)))
	h = mixH1(h, mixK1(uint32(uint64(v)>>32)))
	return fmix(h, 8)
}

// hashBytes is Murmur3_x86_32.hashUnsafeBytes, the variant hash() uses: whole little-endian
// words, then each remaining byte (sign-extended) mixed as a word of its own, unlike the
// reference Murmur3's tail.
func hashBytes(b []byte, seed uint32) uint32 {
	h := seed
	n := len(b) - len(b)%4
	for i := 0; i < n; i += 4 {
		h = mixH1(h, mixK1(uint32(b[i])|uint32(b[i+1])<<8|uint32(b[i+2])<<16|uint32(b[i+3])<<24))
	}
	for _, c := range b[n:] {
		h = mixH1(h, mixK1(uint32(int32(int8(c)))))
	}
	return fmix(h, len(b))
}

// hashValue is Spark's Murmur3HashFunction.hash of v (as DecodeRow returns it) of type t.
func hashValue(v any, t *Type, seed uint32) (uint32, error) {
	if v == nil {
		return seed, nil
	}
	switch x := v.(type) {
	case bool:
		if x {
			return hashInt(1, seed), nil
		}
		return hashInt(0, seed), nil
	case int8:
		return hashInt(int32(x), seed), nil
	case int16:
		return hashInt(int32(x), seed), nil
	case int32:
		return hashInt(x, seed), nil
	case Date:
		return hashInt(int32(x), seed), nil
	case int64:
		return hashLong(x, seed), nil
	case Timestamp:
		return hashLong(int64(x), seed), nil
	case TimestampNTZ:
		return hashLong(int64(x), seed), nil
	case float32:
		return hashFloat(x, seed), nil
	case float64:
		return hashDouble(x, seed), nil
	case Decimal:
		if t.Precision <= 18 {
			if x.Unscaled == nil || !x.Unscaled.IsInt64() {
				return 0, fmt.Errorf("decimal %v does not fit %s", x, t)
			}
			return hashLong(x.Unscaled.Int64(), seed), nil
		}
		return hashBytes(twosComplement(x.Unscaled), seed), nil
	case string:
		return hashBytes([]byte(x), seed), nil
	case []byte:
		return hashBytes(x, seed), nil
	case []any:
		h := seed
		for _, e := range x {
			var err error
			if h, err = hashValue(e, t.Elem, h); err != nil {
				return 0, err
			}
		}
		return h, nil
	case *Map:
		h := seed
		for i := range x.Keys {
			var err error
			if h, err = hashValue(x.Keys[i], t.Key, h); err != nil {
				return 0, err
			}
			if h, err = hashValue(x.Values[i], t.Value, h); err != nil {
				return 0, err
			}
		}
		return h, nil
	case *Object:
		h := seed
		for i, f := range t.Fields {
			var err error
			if h, err = hashValue(x.Values[i], f.Type, h); err != nil {
				return 0, err
			}
		}
		return h, nil
	}
	return 0, fmt.Errorf("no hash for a %s value (%T)", t, v)
}

func hashFloat(x float32, seed uint32) uint32 {
	if x == 0 { // -0.0 hashes as 0.0
		return hashInt(0, seed)
	}
	if x != x {
		return hashInt(0x7fc00000, seed) // floatToIntBits' canonical NaN
	}
	return hashInt(int32(math.Float32bits(x)), seed)
}

func hashDouble(x float64, seed uint32) uint32 {
	if x == 0 {
		return hashLong(0, seed)
	}
	if x != x {
		return hashLong(0x7ff8000000000000, seed)
	}
	return hashLong(int64(math.Float64bits(x)), seed)
}

// PartitionRow is Partition of a key given as its UnsafeRow bytes, hashed in place: no
// decoding, no allocation. A string is hashed over its bytes as stored, as Spark hashes a
// UTF8String. ok is false when a key column has a type it does not hash in place (nested
// types, decimals of more than 18 digits): use Partition.
func PartitionRow(b []byte, t *Type, cols []int, n int) (p int, ok bool, err error) {
	if n <= 0 {
		return 0, true, fmt.Errorf("%d partitions", n)
	}
	nf := len(t.Fields)
	words := bitsetWords(nf)
	if (words+nf)*8 > len(b) {
		return 0, true, &RowError{Reason: fmt.Sprintf("a row of %d fields needs %d bytes, has %d", nf, (words+nf)*8, len(b))}
	}
	h := uint32(HashSeed)
	for _, c := range cols {
		if c < 0 || c >= nf {
			return 0, true, fmt.Errorf("key column %d of a key of %d", c, nf)
		}
		if b[c/64*8+(c%64)/8]&(1<<(uint(c)%8)) != 0 {
			continue // null leaves the hash as it is
		}
		at := (words + c) * 8
		w := b[at : at+8]
		switch ft := t.Fields[c].Type; ft.Name {
		case "null":
		case "boolean":
			v := int32(0)
			if w[0] != 0 {
				v = 1
			}
			h = hashInt(v, h)
		case "byte":
			h = hashInt(int32(int8(w[0])), h)
		case "short":
			h = hashInt(int32(int16(binary.LittleEndian.Uint16(w))), h)
		case "integer", "date":
			h = hashInt(int32(binary.LittleEndian.Uint32(w)), h)
		case "long", "timestamp", "timestamp_ntz":
			h = hashLong(int64(binary.LittleEndian.Uint64(w)), h)
		case "float":
			h = hashFloat(math.Float32frombits(binary.LittleEndian.Uint32(w)), h)
		case "double":
			h = hashDouble(math.Float64frombits(binary.LittleEndian.Uint64(w)), h)
		case "decimal":
			if ft.Precision > 18 {
				return 0, false, nil
			}
			h = hashLong(int64(binary.LittleEndian.Uint64(w)), h)
		case "string", "binary":
			ref := binary.LittleEndian.Uint64(w)
			off, size := int(ref>>32), int(uint32(ref))
			if off < 0 || size < 0 || off+size > len(b) {
				return 0, true, &RowError{At: at, Reason: fmt.Sprintf("a %s at offset %d size %d outside the row of %d bytes", ft, off, size, len(b))}
			}
			h = hashBytes(b[off:off+size], h)
		default:
			return 0, false, nil
		}
	}
	p = int(int32(h)) % n
	if p < 0 {
		p += n
	}
	return p, true, nil
}

// Partition is the partition Spark's HashPartitioning over the columns cols of key (of struct
// type t) gives among n partitions: pmod(hash(key[cols[0]], key[cols[1]], …), n).
func Partition(key *Object, t *Type, cols []int, n int) (int, error) {
	if n <= 0 {
		return 0, fmt.Errorf("%d partitions", n)
	}
	h := uint32(HashSeed)
	for _, c := range cols {
		if c < 0 || c >= len(t.Fields) || c >= len(key.Values) {
			return 0, fmt.Errorf("key column %d of a key of %d", c, len(t.Fields))
		}
		var err error
		if h, err = hashValue(key.Values[c], t.Fields[c].Type, h); err != nil {
			return 0, fmt.Errorf("key column %s: %w", t.Fields[c].Name, err)
		}
	}
	p := int(int32(h)) % n
	if p < 0 {
		p += n
	}
	return p, nil
}
