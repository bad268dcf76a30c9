package logformat

import (
	"math/bits"
	"sort"
)

// Iteration order of scala.collection.mutable.HashMap, which Spark's Kafka
// source serialises with Jackson (JsonUtils.partitionOffsets), so the key
// order of every Kafka offset JSON Spark writes is this order.
//
// Scala 2.11/2.12 (Spark ≤ 3.5 default build), derived from
// scala/scala src/library/scala/collection/mutable/HashTable.scala (2.12.x):
//
//   - table starts with 16 buckets (initialSize 16); threshold =
//     len*750/1000 (load factor 0.75 in per-mille); after an insert, if
//     size > threshold the table doubles;
//   - seedvalue = bitCount(16-1) = 4, fixed when the map is created (resize
//     does not change it);
//   - index(h) = rotateRight(byteswap32(h), seed) >>> numberOfLeadingZeros(len-1),
//     i.e. the top log2(len) bits of the improved hash, where
//     byteswap32(v) = reverseBytes(v * 0x9e3775cd) * 0x9e3775cd;
//   - a new entry is prepended to its bucket's chain; resize walks the old
//     buckets from the last to the first, each chain head to tail, and
//     prepends into the new table;
//   - iteration (entriesIterator, foreachEntry) walks buckets from the last
//     populated index down to 0, each chain head to tail.
//
// Keys hash with ##: an Int is its own hash, a String uses
// java.lang.String.hashCode (31*h + UTF-16 unit). "+=" on an existing key
// only replaces the value.
//
// Check: partitions 0..4 inserted in order come out 2,4,1,3,0, exactly the
// Spark 2.4.3 fixture checkpoint-version-2.4.3-kafka-include-headers-default
// /offsets/0; 0..2 come out 2,1,0 as in kafka-source-initial-offset-*.bin.
//
// Scala 2.13 (Spark 4.x, and 3.x "_2.13" builds), from the 2.13 mutable
// HashMap: 16 buckets, threshold = (len*0.75).toInt, and every put (also on
// an existing key) first doubles the table while size+1 >= threshold;
// improved hash h ^ (h >>> 16), bucket = improved & (len-1); each bucket is
// kept sorted by improved hash (signed), equal hashes in insertion order;
// iteration walks buckets from 0 up. Checked against offsets files Spark
// 4.0.0 and 4.1.1 wrote (testdata/spark-written/<release>/: one topic of 3
// partitions; two topics, "orders" before "events", in kafka-offset-order/),
// by internal/engine's TestKafkaOffsetOrderMatchesSpark.

type scalaKey struct {
	hash  int32
	index int // caller's identifier for the key
}

// scala212Order simulates inserting keys (in the given order, all distinct)
// into a 2.12 mutable.HashMap and returns their iteration order.
type scala212Table struct {
	buckets   [][]int // entry ids, chain head first
	hashes    []int32
	size      int
	threshold int
}

func newScala212Table() *scala212Table {
	return &scala212Table{buckets: make([][]int, 16), threshold: 16 * 750 / 1000}
}

const scala212Seed = 4 // Integer.bitCount(16 - 1)

func byteswap32(v int32) int32 {
	hc := uint32(v) * 0x9e3775cd
	hc = bits.ReverseBytes32(hc)
	return int32(hc * 0x9e3775cd)
}

func (t *scala212Table) index(h int32) int {
	n := len(t.buckets)
	if n == 1 {
		return 0
	}
	improved := bits.RotateLeft32(uint32(byteswap32(h)), -scala212Seed)
	return int(improved >> uint(bits.LeadingZeros32(uint32(n-1))))
}

// add inserts a new key id with hash h (the caller guarantees it is new).
func (t *scala212Table) add(id int, h int32) {
	for len(t.hashes) <= id {
		t.hashes = append(t.hashes, 0)
	}
	t.hashes[id] = h
	i := t.index(h)
	t.buckets[i] = append([]int{id}, t.buckets[i]...)
	t.size++
	if t.size > t.threshold {
		t.resize(2 * len(t.buckets))
	}
}

func (t *scala212Table) resize(n int) {
	old := t.buckets
	t.buckets = make([][]int, n)
	for i := len(old) - 1; i >= 0; i-- {
		for _, id := range old[i] {
			j := t.index(t.hashes[id])
			t.buckets[j] = append([]int{id}, t.buckets[j]...)
		}
	}
	t.threshold = n * 750 / 1000
}

func (t *scala212Table) order() []int {
	var out []int
	for i := len(t.buckets) - 1; i >= 0; i-- {
		out = append(out, t.buckets[i]...)
	}
	return out
}

// scala213Table simulates a 2.13 mutable.HashMap.
type scala213Table struct {
	length    int
	threshold int
	size      int
	keys      []scalaKey // insertion order
}

func newScala213Table() *scala213Table {
	return &scala213Table{length: 16, threshold: int(16 * 0.75)}
}

// put records one put; isNew says whether the key was absent. The growth
// check runs on every put, as HashMap.put0 does.
func (t *scala213Table) put(id int, h int32, isNew bool) {
	if t.size+1 >= t.threshold {
		t.length *= 2
		t.threshold = int(float64(t.length) * 0.75)
	}
	if isNew {
		improved := h ^ int32(uint32(h)>>16)
		t.keys = append(t.keys, scalaKey{hash: improved, index: id})
		t.size++
	}
}

func (t *scala213Table) order() []int {
	keys := append([]scalaKey(nil), t.keys...)
	mask := int32(t.length - 1)
	sort.SliceStable(keys, func(a, b int) bool {
		ba, bb := keys[a].hash&mask, keys[b].hash&mask
		if ba != bb {
			return ba < bb
		}
		return keys[a].hash < keys[b].hash
	})
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = k.index
	}
	return out
}

// javaStringHash is java.lang.String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16Surrogates(r)
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// javaStringLess is java.lang.String.compareTo(a, b) < 0: UTF-16 code unit
// order, which differs from byte order only outside the BMP.
func javaStringLess(a, b string) bool {
	ua, ub := toUTF16Units(a), toUTF16Units(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func toUTF16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16Surrogates(r)
			out = append(out, uint16(r1), uint16(r2))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}
