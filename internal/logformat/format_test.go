package logformat

import (
	"math/bits"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"unicode"
)

func TestParseName(t *testing.T) {
	const uuid = "3f0c6c5e-1a2b-4c3d-8e9f-0123456789ab"
	cases := []struct {
		in   string
		want Name
	}{
		{"5", Name{Kind: NameBatch, Batch: 5, HasBatch: true}},
		{"0", Name{Kind: NameBatch, Batch: 0, HasBatch: true}},
		{"+5", Name{Kind: NameBatch, Batch: 5, HasBatch: true}},
		{"-1", Name{Kind: NameBatch, Batch: -1, HasBatch: true}},
		{"007", Name{Kind: NameBatch, Batch: 7, HasBatch: true}},
		{"٣", Name{Kind: NameBatch, Batch: 3, HasBatch: true}},
		{"9223372036854775807", Name{Kind: NameBatch, Batch: 9223372036854775807, HasBatch: true}},
		{"-9223372036854775808", Name{Kind: NameBatch, Batch: -9223372036854775808, HasBatch: true}},
		{"9223372036854775808", Name{Kind: NameOther}},
		{"9.compact", Name{Kind: NameCompact, Batch: 9, HasBatch: true}},
		{"+9.compact", Name{Kind: NameCompact, Batch: 9, HasBatch: true}},
		{"9.compact.compact", Name{Kind: NameOther}},
		{".compact", Name{Kind: NameOther}},
		{".5.crc", Name{Kind: NameChecksum, Target: "5", Batch: 5, HasBatch: true}},
		{".9.compact.crc", Name{Kind: NameChecksum, Target: "9.compact", Batch: 9, HasBatch: true}},
		{".metadata.crc", Name{Kind: NameChecksum, Target: "metadata"}},
		{".5." + uuid + ".tmp", Name{Kind: NameTemp, Target: "5", Batch: 5, HasBatch: true}},
		{".5." + uuid + ".TID3.tmp", Name{Kind: NameTemp, Target: "5", Batch: 5, HasBatch: true}},
		{".9.compact." + uuid + ".tmp", Name{Kind: NameTemp, Target: "9.compact", Batch: 9, HasBatch: true}},
		{".metadata." + uuid + ".tmp", Name{Kind: NameTemp, Target: "metadata"}},
		{"." + uuid + ".tmp", Name{Kind: NameTemp}},
		{"..5." + uuid + ".tmp.crc", Name{Kind: NameChecksum, Target: ".5." + uuid + ".tmp"}},
		{".5.tmp", Name{Kind: NameOther}},
		{".5.not-a-uuid-at-all-not-a-uuid-at-all.tmp", Name{Kind: NameOther}},
		{"..crc", Name{Kind: NameOther}},
		{"metadata", Name{Kind: NameOther}},
		{"", Name{Kind: NameOther}},
		{"+", Name{Kind: NameOther}},
		{" 5", Name{Kind: NameOther}},
		{"5 ", Name{Kind: NameOther}},
		{"0x5", Name{Kind: NameOther}},
	}
	for _, c := range cases {
		if got := ParseName(c.in); got != c.want {
			t.Errorf("ParseName(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
	if NameTemp.String() != "temp" || NameKind(9).String() != "name-kind(9)" {
		t.Errorf("NameKind.String")
	}
}

func TestIsCompactionBatch(t *testing.T) {
	for _, c := range []struct {
		id, interval int64
		want         bool
	}{{9, 10, true}, {19, 10, true}, {8, 10, false}, {10, 10, false}, {0, 1, true}, {2, 3, true}, {5, 0, false}, {5, -2, false}} {
		if got := IsCompactionBatch(c.id, c.interval); got != c.want {
			t.Errorf("IsCompactionBatch(%d, %d) = %v", c.id, c.interval, got)
		}
	}
}

func TestJavaParse(t *testing.T) {
	for _, c := range []struct {
		in string
		v  int64
		ok bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"+12", 12, true}, {"-2147483648", -2147483648, true},
		{"2147483647", 2147483647, true}, {"2147483648", 0, false}, {"-2147483649", 0, false},
		{"", 0, false}, {"-", 0, false}, {"+", 0, false}, {"1_0", 0, false}, {"１２", 12, true}, {"1e3", 0, false},
	} {
		v, ok := javaParseInt(c.in)
		if ok != c.ok || (ok && int64(v) != c.v) {
			t.Errorf("javaParseInt(%q) = %d, %v", c.in, v, ok)
		}
	}
	// javaDigit assumes every BMP Nd range is made of whole 0..9 runs.
	for _, r := range unicode.Nd.R16 {
		if r.Stride != 1 || (int(r.Hi)-int(r.Lo)+1)%10 != 0 {
			t.Errorf("unexpected Nd range %+v", r)
		}
	}
}

func TestJSONWriterEscapesLikeJackson(t *testing.T) {
	in := "a\"b\\c/\n\r\t\b\f\x01\x1f\x7fé€\u2028😀"
	want := `"a\"b\\c/\n\r\t\b\f\u0001\u001F` + "\x7fé€\u2028😀" + `"`
	if got := string(appendJSONString(nil, in)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Decoding is the inverse, including surrogate pairs and a lone surrogate.
	for lit, want := range map[string]string{
		`"\u00e9\ud83d\ude00\/"`: "é😀/",
		`"\ud800x"`:              "\uFFFDx",
		`"\u0041\n"`:             "A\n",
	} {
		if got := stringValue([]byte(lit), 0, len(lit)); got != want {
			t.Errorf("decode %s = %q, want %q", lit, got, want)
		}
	}
	m := &OffsetMetadata{BatchWatermarkMs: -1, BatchTimestampMs: 2, Conf: []KV{{"k\"", "v\n"}},
		Extra: []KV{{"x", `{"a":[1]}`}}}
	if got := m.JSON(); got != `{"batchWatermarkMs":-1,"batchTimestampMs":2,"conf":{"k\"":"v\n"},"x":{"a":[1]}}` {
		t.Errorf("metadata JSON: %s", got)
	}
	if (&OffsetMetadata{}).JSON() != `{"batchWatermarkMs":0,"batchTimestampMs":0}` {
		t.Errorf("no conf key when Conf is nil")
	}
}

func TestJSONScannerStrictness(t *testing.T) {
	for _, bad := range []string{`{"a":01}`, `{"a":1,}`, `{'a':1}`, `{"a":NaN}`, `{"a":"x` + "\x01" + `"}`,
		`{"a":tru}`, `[1 2]`, `{"a" 1}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `"\x"`, `"\u12"`, `{"a":[}`} {
		if _, _, _, err := scanDocument([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, good := range []string{` {"a":[1,-0.5e+3,true,false,null,"\u00e9"]} `, `[]`, `{}`, `-0`, `"x"`} {
		if _, _, _, err := scanDocument([]byte(good)); err != nil {
			t.Errorf("rejected %s: %v", good, err)
		}
	}
	deep := make([]byte, 0, 4100)
	for i := 0; i < 2000; i++ {
		deep = append(deep, '[')
	}
	if _, _, _, err := scanDocument(deep); err == nil {
		t.Errorf("accepted 2000 nested arrays")
	}
	for _, c := range []struct {
		in string
		v  int64
		ok bool
	}{{"9223372036854775807", 1<<63 - 1, true}, {"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false}, {"1.0", 0, false}, {"-", 0, false}, {"99999999999999999999", 0, false}} {
		v, ok := int64Value([]byte(c.in), 0, len(c.in))
		if ok != c.ok || v != c.v {
			t.Errorf("int64Value(%s) = %d %v", c.in, v, ok)
		}
	}
}

func kafkaOrder(k KafkaOffsets) [][]int32 {
	var out [][]int32
	for _, t := range k.Topics {
		var ps []int32
		for _, p := range t.Partitions {
			ps = append(ps, p.Partition)
		}
		out = append(out, ps)
	}
	return out
}

func partitionsOf(topic string, n int32) map[TopicPartition]int64 {
	m := map[TopicPartition]int64{}
	for p := int32(0); p < n; p++ {
		m[TopicPartition{topic, p}] = int64(p) * 10
	}
	return m
}

func TestNewKafkaOffsetsScala212(t *testing.T) {
	// Fixture vectors: Spark 2.4.3 offsets/0 and the Kafka .bin files.
	if got := kafkaOrder(NewKafkaOffsets(partitionsOf("t", 5))); !reflect.DeepEqual(got, [][]int32{{2, 4, 1, 3, 0}}) {
		t.Errorf("5 partitions: %v", got)
	}
	if got := kafkaOrder(NewKafkaOffsets(partitionsOf("t", 3))); !reflect.DeepEqual(got, [][]int32{{2, 1, 0}}) {
		t.Errorf("3 partitions: %v", got)
	}
	// Past the first resize (13+ keys) no Spark fixture exists: compare with
	// a literal, pointer-chasing transliteration of HashTable.scala.
	for n := int32(0); n <= 200; n++ {
		var keys []int32
		for p := int32(0); p < n; p++ {
			keys = append(keys, p*7919%1000)
		}
		m := map[TopicPartition]int64{}
		for _, k := range keys {
			m[TopicPartition{"t", k}] = 1
		}
		sorted := append([]int32(nil), keys...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		want := literalScala212Order(sorted)
		got := kafkaOrder(NewKafkaOffsets(m))
		if n == 0 {
			if len(got) != 0 {
				t.Errorf("empty map: %v", got)
			}
			continue
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("%d partitions:\n got %v\nwant %v", n, got[0], want)
		}
	}
	m := partitionsOf("topic1", 2)
	m[TopicPartition{"topic2", 0}] = 0
	k := NewKafkaOffsets(m)
	if k.JSON() != `{"topic2":{"0":0},"topic1":{"1":10,"0":0}}` {
		t.Errorf("two topics: %s", k.JSON())
	}
	// Every entry is kept, whatever the size.
	big := map[TopicPartition]int64{}
	for tp := 0; tp < 30; tp++ {
		for p := int32(0); p < 70; p++ {
			big[TopicPartition{"topic-" + strconv.Itoa(tp), p}] = int64(tp*1000) + int64(p)
		}
	}
	for _, k := range []KafkaOffsets{NewKafkaOffsets(big), NewKafkaOffsetsScala213(big)} {
		if !reflect.DeepEqual(k.Map(), big) {
			t.Fatalf("entries lost")
		}
		back, err := ParseKafkaOffsets("x", k.JSON())
		if err != nil || !reflect.DeepEqual(back, k) {
			t.Fatalf("JSON round trip: %v", err)
		}
	}
	if (KafkaOffsets{}).JSON() != "{}" || string(MarshalKafkaInitialOffsets(NewKafkaOffsets(partitionsOf("t", 3)))) !=
		"\x00v1\n{\"t\":{\"2\":20,\"1\":10,\"0\":0}}" {
		t.Errorf("MarshalKafkaInitialOffsets: %q", MarshalKafkaInitialOffsets(NewKafkaOffsets(partitionsOf("t", 3))))
	}
}

func TestNewKafkaOffsetsScala213(t *testing.T) {
	if got := kafkaOrder(NewKafkaOffsetsScala213(partitionsOf("t", 5))); !reflect.DeepEqual(got, [][]int32{{0, 1, 2, 3, 4}}) {
		t.Errorf("5 partitions: %v", got)
	}
	m := map[TopicPartition]int64{{"t", 0}: 1, {"t", 16}: 1, {"t", 1}: 1}
	if got := kafkaOrder(NewKafkaOffsetsScala213(m)); !reflect.DeepEqual(got, [][]int32{{0, 16, 1}}) {
		t.Errorf("bucket collision: %v", got)
	}
	// 12 partitions grow the table to 32 before the 12th insert.
	m = partitionsOf("t", 12)
	m[TopicPartition{"t", 16}] = 1
	if got := kafkaOrder(NewKafkaOffsetsScala213(m)); !reflect.DeepEqual(got, [][]int32{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16}}) {
		t.Errorf("after growth: %v", got)
	}
}

// literalScala212Order inserts keys into a transliteration of Scala 2.12's
// mutable.HashTable (entries with next pointers, addEntry0, resize,
// entriesIterator) and returns the iteration order.
func literalScala212Order(keys []int32) []int32 {
	type entry struct {
		key  int32
		next *entry
	}
	table := make([]*entry, 16)
	size, threshold := 0, 16*750/1000
	const seed = 4
	index := func(h int32, n int) int {
		if n == 1 {
			return 0
		}
		hc := uint32(h) * 0x9e3775cd
		hc = bits.ReverseBytes32(hc) * 0x9e3775cd
		improved := hc>>seed | hc<<(32-seed)
		return int(improved >> uint(bits.LeadingZeros32(uint32(n-1))))
	}
	for _, k := range keys {
		h := index(k, len(table))
		table[h] = &entry{key: k, next: table[h]}
		size++
		if size > threshold {
			old := table
			table = make([]*entry, 2*len(old))
			for i := len(old) - 1; i >= 0; i-- {
				for e := old[i]; e != nil; {
					next := e.next
					j := index(e.key, len(table))
					e.next = table[j]
					table[j] = e
					e = next
				}
			}
			threshold = len(table) * 750 / 1000
		}
	}
	var out []int32
	for i := len(table) - 1; i >= 0; i-- {
		for e := table[i]; e != nil; e = e.next {
			out = append(out, e.key)
		}
	}
	return out
}
