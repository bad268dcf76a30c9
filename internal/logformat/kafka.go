package logformat

import (
	"sort"
	"strconv"
)

// KafkaOffsets is a KafkaSourceOffset: {"topic":{"partition":nextOffset}}.
// Topics and partitions keep the file's order, so parse→JSON reproduces
// Spark's bytes; lookups go through Map or Get.
type KafkaOffsets struct{ Topics []TopicOffsets }

// TopicOffsets is one topic's partitions, in file order.
type TopicOffsets struct {
	Topic      string
	Partitions []PartitionOffset
}

// PartitionOffset is the next offset to read from one partition (Spark
// stores 1 + the last offset processed; -1 latest, -2 earliest in options).
type PartitionOffset struct {
	Partition int32
	Offset    int64
}

// TopicPartition names a Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ParseKafkaOffsets parses a Kafka source offset JSON, accepting any key
// order as Spark's Jackson reader does. The error carries Spark's
// IllegalArgumentException text.
func ParseKafkaOffsets(file, json string) (KafkaOffsets, error) {
	var k KafkaOffsets
	d := []byte(json)
	fail := func(expected string) error {
		return &Error{File: file, Kind: KindBadOffset, Expected: expected, Got: excerpt(json),
			Spark: sparkKafkaExpected + json}
	}
	kind, s, e, je := scanDocument(d)
	if je != nil {
		return KafkaOffsets{}, fail("Kafka offsets JSON (" + je.Error() + ")")
	}
	if kind != jObject {
		return KafkaOffsets{}, fail(`a JSON object like {"topic":{"0":23}}`)
	}
	obj := d[s:e]
	var msg string
	_, je = scanObject(obj, 0, 1, func(topic []byte, kind jsonKind, vs, ve int) *jsonErr {
		if kind != jObject {
			msg = "topic " + strconv.Quote(string(topic)) + " to map partitions to offsets"
			return errStop
		}
		t := TopicOffsets{Topic: string(topic), Partitions: []PartitionOffset{}}
		_, err := scanObject(obj, vs, 1, func(part []byte, kind jsonKind, ps, pe int) *jsonErr {
			p, ok := jacksonParseInt(part)
			if !ok {
				msg = "partition numbers as keys, got " + strconv.Quote(string(part))
				return errStop
			}
			off, ok := int64Value(obj, ps, pe)
			if kind != jNumber || !ok {
				msg = "an integer offset for partition " + string(part)
				return errStop
			}
			t.Partitions = append(t.Partitions, PartitionOffset{Partition: p, Offset: off})
			return nil
		})
		k.Topics = append(k.Topics, t)
		return err
	})
	if msg != "" {
		return KafkaOffsets{}, fail(msg)
	}
	if je != nil {
		return KafkaOffsets{}, fail("Kafka offsets JSON (" + je.Error() + ")")
	}
	return k, nil
}

// jacksonParseInt parses an Int map key: optional sign and ASCII digits in
// int32 range.
func jacksonParseInt(b []byte) (int32, bool) {
	for _, c := range b {
		if c >= 0x80 {
			return 0, false
		}
	}
	return javaParseInt(string(b))
}

// JSON writes the offsets as Jackson does, in the stored order.
func (k KafkaOffsets) JSON() string { return string(k.appendJSON(nil)) }

func (k KafkaOffsets) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, t := range k.Topics {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, t.Topic)
		b = append(b, ':', '{')
		for j, p := range t.Partitions {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = appendInt(b, int64(p.Partition))
			b = append(b, '"', ':')
			b = appendInt(b, p.Offset)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// Map returns the offsets keyed by partition; a duplicated key keeps its
// last value, as Jackson's map reader does.
func (k KafkaOffsets) Map() map[TopicPartition]int64 {
	m := make(map[TopicPartition]int64)
	for _, t := range k.Topics {
		for _, p := range t.Partitions {
			m[TopicPartition{t.Topic, p.Partition}] = p.Offset
		}
	}
	return m
}

// Get returns the offset of one partition.
func (k KafkaOffsets) Get(topic string, p int32) (int64, bool) {
	var v int64
	found := false
	for _, t := range k.Topics {
		if t.Topic != topic {
			continue
		}
		for _, po := range t.Partitions {
			if po.Partition == p {
				v, found = po.Offset, true
			}
		}
	}
	return v, found
}

// NewKafkaOffsets orders m the way Spark 3.5 (Scala 2.12) writes it:
// JsonUtils.partitionOffsets inserts the partitions sorted by (topic,
// partition) into a mutable.HashMap[String, HashMap[Int, Long]] and Jackson
// writes it in HashMap iteration order (see scalamap.go for the
// derivation).
func NewKafkaOffsets(m map[TopicPartition]int64) KafkaOffsets {
	return newKafkaOffsets(m, false)
}

// NewKafkaOffsetsScala213 orders m the way Spark builds on Scala 2.13
// (Spark 4.x) write it. Derived from the Scala 2.13 HashMap source and
// confirmed by Spark 4.0.0's and 4.1.1's own offsets files (scalamap.go).
func NewKafkaOffsetsScala213(m map[TopicPartition]int64) KafkaOffsets {
	return newKafkaOffsets(m, true)
}

func newKafkaOffsets(m map[TopicPartition]int64, scala213 bool) KafkaOffsets {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return javaStringLess(tps[i].Topic, tps[j].Topic)
		}
		return tps[i].Partition < tps[j].Partition
	})
	type topicState struct {
		name  string
		parts []PartitionOffset
		t212  *scala212Table
		t213  *scala213Table
	}
	var topics []*topicState
	ids := map[string]int{}
	t212, t213 := newScala212Table(), newScala213Table()
	for _, tp := range tps {
		id, seen := ids[tp.Topic]
		if !seen {
			id = len(topics)
			ids[tp.Topic] = id
			topics = append(topics, &topicState{name: tp.Topic, t212: newScala212Table(), t213: newScala213Table()})
		}
		ts := topics[id]
		pid := len(ts.parts)
		ts.parts = append(ts.parts, PartitionOffset{Partition: tp.Partition, Offset: m[tp]})
		// parts += partition -> offset
		if scala213 {
			ts.t213.put(pid, tp.Partition, true)
		} else {
			ts.t212.add(pid, tp.Partition)
		}
		// result += topic -> parts
		h := javaStringHash(tp.Topic)
		if scala213 {
			t213.put(id, h, !seen)
		} else if !seen {
			t212.add(id, h)
		}
	}
	order := func(t212 *scala212Table, t213 *scala213Table) []int {
		if scala213 {
			return t213.order()
		}
		return t212.order()
	}
	var k KafkaOffsets
	for _, id := range order(t212, t213) {
		ts := topics[id]
		to := TopicOffsets{Topic: ts.name, Partitions: make([]PartitionOffset, 0, len(ts.parts))}
		for _, pid := range order(ts.t212, ts.t213) {
			to.Partitions = append(to.Partitions, ts.parts[pid])
		}
		k.Topics = append(k.Topics, to)
	}
	return k
}

// KafkaInitialOffsets is the Kafka source's sources/<i>/0 file, written the
// first time the source needs its starting offsets.
type KafkaInitialOffsets struct {
	Lead    byte // first byte, skipped by Spark (0x00 when written by Spark ≥2.1.1; the 2.1.0 form has a length byte)
	Version int  // 1; 0 for the Spark 2.1.0 form (no header)
	Offsets KafkaOffsets
	// JSON is the offsets text as in the file, without the trailing newline.
	// Marshal writes JSON when it is set, else Offsets.JSON(): after editing
	// Offsets, clear JSON (or use MarshalKafkaInitialOffsets).
	JSON            string
	TrailingNewline bool
}

// ParseKafkaInitialOffsets parses sources/<i>/0 the way
// KafkaSourceInitialOffsetWriter.deserialize does: skip one byte, then
// either "v<N>\n<json>" or (Spark 2.1.0) the bare JSON.
func ParseKafkaInitialOffsets(file string, data []byte) (*KafkaInitialOffsets, error) {
	if len(data) < 2 {
		return nil, &Error{File: file, Kind: KindEmpty,
			Expected: "a lead byte followed by the initial offsets", Got: excerpt(string(data)),
			Spark: sparkRequirementFailed}
	}
	if e := checkLineLength(file, data[1:]); e != nil {
		return nil, e
	}
	k := &KafkaInitialOffsets{Lead: data[0]}
	content := string(data[1:])
	line := 1
	if content[0] == 'v' {
		nl := indexByteString(content, '\n')
		if nl <= 0 {
			return nil, &Error{File: file, Line: 1, Kind: KindMalformed,
				Expected: `a version line like "v1" ended by "\n"`, Got: excerpt(content), Spark: sparkKafkaNoVersion}
		}
		v, verr := parseVersionHeader(file, 1, []byte(content[:nl]), KafkaInitialOffsetsMaxVersion)
		if verr != nil {
			return nil, verr
		}
		k.Version = v
		content = content[nl+1:]
		line = 2
	}
	offsets, err := ParseKafkaOffsets(file, content)
	if err != nil {
		e := err.(*Error)
		e.Line = line
		return nil, e
	}
	k.Offsets = offsets
	if n := len(content); n > 0 && content[n-1] == '\n' {
		k.TrailingNewline = true
		content = content[:n-1]
	}
	k.JSON = content
	return k, nil
}

func indexByteString(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// Marshal reproduces the file: lead byte, header (unless the 2.1.0 form),
// JSON, optional trailing newline.
func (k *KafkaInitialOffsets) Marshal() []byte {
	b := []byte{k.Lead}
	if k.Version > 0 {
		b = appendHeader(b, k.Version)
		b = append(b, '\n')
	}
	if k.JSON != "" {
		b = append(b, k.JSON...)
	} else {
		b = k.Offsets.appendJSON(b)
	}
	if k.TrailingNewline {
		b = append(b, '\n')
	}
	return b
}

// MarshalKafkaInitialOffsets returns what Spark writes today for a new
// initial-offsets file: a zero byte (SPARK-19517), "v1\n" and the JSON.
func MarshalKafkaInitialOffsets(o KafkaOffsets) []byte {
	b := []byte{0, 'v', '1', '\n'}
	return o.appendJSON(b)
}
