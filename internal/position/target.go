package position

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// TargetKind is how the new offsets are chosen, as in kafka-consumer-groups --reset-offsets.
type TargetKind string

// The targets.
const (
	ToEarliest TargetKind = "to-earliest" // the log start on the broker
	ToLatest   TargetKind = "to-latest"   // the log end on the broker
	ToOffset   TargetKind = "to-offset"   // Offset on every chosen partition
	ShiftBy    TargetKind = "shift-by"    // the current offset plus Shift (negative: back)
	ToDatetime TargetKind = "to-datetime" // the first offset with a timestamp at or after Time
	ByDuration TargetKind = "by-duration" // to-datetime at now minus Duration
	FromFile   TargetKind = "from-file"   // the offsets of File
)

// Target is the chosen new position.
type Target struct {
	Kind     TargetKind
	Offset   int64
	Shift    int64
	Time     time.Time
	Duration time.Duration
	// File are the rows of --from-file.
	File map[logformat.TopicPartition]int64
}

// NeedsBroker reports whether the target can only be resolved on the broker.
func (t Target) NeedsBroker() bool {
	switch t.Kind {
	case ToEarliest, ToLatest, ToDatetime, ByDuration:
		return true
	}
	return false
}

// Selector is one --topic T[:P,…]: the topic, and the partitions (nil: all of them).
type Selector struct {
	Topic      string
	Partitions []int32
}

// ParseSelector parses --topic's value: "orders" or "orders:0,2".
func ParseSelector(s string) (Selector, error) {
	topic, parts, hasParts := strings.Cut(s, ":")
	if topic == "" {
		return Selector{}, fmt.Errorf("--topic %q: want TOPIC or TOPIC:PARTITION[,PARTITION…]", s)
	}
	sel := Selector{Topic: topic}
	if !hasParts {
		return sel, nil
	}
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return Selector{}, fmt.Errorf("--topic %q: partition %q is not a partition number", s, p)
		}
		sel.Partitions = append(sel.Partitions, int32(n))
	}
	return sel, nil
}

// selected reports whether tp is chosen by sels (no selector: every partition).
func selected(sels []Selector, tp logformat.TopicPartition) bool {
	if len(sels) == 0 {
		return true
	}
	for _, s := range sels {
		if s.Topic == tp.Topic && (s.Partitions == nil || slices.Contains(s.Partitions, tp.Partition)) {
			return true
		}
	}
	return false
}

// ParseDatetime parses --to-datetime: RFC 3339 ("2025-01-02T15:04:05Z", with an offset or
// fractional seconds), kafka-consumer-groups' "2025-01-02T15:04:05.000" (UTC when no zone is
// given), or epoch milliseconds.
func ParseDatetime(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(n).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2025-01-02T15:04:05Z), YYYY-MM-DDTHH:mm:SS.sss (UTC) or epoch milliseconds", s)
}

// ParseOffsetsFile reads --from-file: either CSV lines "topic,partition,offset" (the format of
// kafka-consumer-groups --export and of `ckpt offsets reset --export`; a header line naming the
// columns is skipped) or Spark's startingOffsets JSON {"topic":{"0":42}}.
func ParseOffsetsFile(name string, data []byte) (map[logformat.TopicPartition]int64, error) {
	text := strings.TrimSpace(string(data))
	if strings.HasPrefix(text, "{") {
		ko, err := logformat.ParseKafkaOffsets(name, text)
		if err != nil {
			return nil, err
		}
		m := ko.Map()
		for tp, o := range m {
			if o < 0 {
				return nil, fmt.Errorf("%s: %s-%d: offset %d: the file must give real offsets, not -1 (latest) or -2 (earliest); use --to-latest or --to-earliest", name, tp.Topic, tp.Partition, o)
			}
		}
		return m, nil
	}
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	r.Comment = '#'
	m := map[logformat.TopicPartition]int64{}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s, line %d: want topic,partition,offset, got %q", name, line, strings.Join(rec, ","))
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "topic") {
			continue
		}
		p, perr := strconv.ParseInt(strings.TrimSpace(rec[1]), 10, 32)
		o, oerr := strconv.ParseInt(strings.TrimSpace(rec[len(rec)-1]), 10, 64)
		if perr != nil || oerr != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%s, line %d: want topic,partition,offset with a partition and an offset of 0 or more, got %q", name, line, strings.Join(rec, ","))
		}
		m[logformat.TopicPartition{Topic: strings.TrimSpace(rec[0]), Partition: int32(p)}] = o
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: no offsets", name)
	}
	return m, nil
}
