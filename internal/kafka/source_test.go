package kafka

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

func TestInitialOffsets(t *testing.T) {
	topic := newTopic(t, 3)
	produceN(t, topic, 0, 0, 10)
	produceN(t, topic, 1, 0, 20)
	produceN(t, topic, 2, 0, 30)
	if err := testBroker.Cluster().DeleteRecords(topic, 2, 5); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	tests := []struct {
		name, starting string
		want           logformat.KafkaOffsets
	}{
		{"default is latest", "", offs(topic, 0, 10, 1, 20, 2, 30)},
		{"latest", "latest", offs(topic, 0, 10, 1, 20, 2, 30)},
		{"earliest", "Earliest", offs(topic, 0, 0, 1, 0, 2, 5)},
		{"specific", `{"` + topic + `":{"0":3,"1":100,"2":1}}`, offs(topic, 0, 3, 1, 100, 2, 1)},
		{"specific -2 and -1", `{"` + topic + `":{"0":-2,"1":-1,"2":-2}}`, offs(topic, 0, 0, 1, 20, 2, 5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]string{"subscribe": topic}
			if tc.starting != "" {
				opts["startingOffsets"] = tc.starting
			}
			s, _ := newSource(t, opts, nil)
			got, err := s.InitialOffsets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.JSON() != tc.want.JSON() {
				t.Errorf("got %s, want %s", got.JSON(), tc.want.JSON())
			}
		})
	}

	t.Run("specific must name every partition", func(t *testing.T) {
		s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": `{"` + topic + `":{"0":-2,"2":7}}`}, nil)
		_, err := s.InitialOffsets(ctx)
		var ae *AssertionError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v, want *AssertionError", err)
		}
		want := "assertion failed: If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n" +
			"Use -1 for latest, -2 for earliest, if you don't care.\n" +
			"Specified: Set(" + topic + "-0, " + topic + "-2) Assigned: Set(" + topic + "-0, " + topic + "-1, " + topic + "-2)"
		if err.Error() != want {
			t.Errorf("got  %q\nwant %q", err.Error(), want)
		}
	})
}

func TestStrategies(t *testing.T) {
	a := newTopic(t, 2)
	b := newTopic(t, 3)
	produceN(t, a, 1, 0, 4)
	produceN(t, b, 2, 0, 6)
	ctx := testCtx(t)
	tests := []struct {
		name string
		opts map[string]string
		want map[logformat.TopicPartition]int64
	}{
		{"subscribe", map[string]string{"subscribe": a + "," + b}, map[logformat.TopicPartition]int64{
			{Topic: a, Partition: 0}: 0, {Topic: a, Partition: 1}: 4,
			{Topic: b, Partition: 0}: 0, {Topic: b, Partition: 1}: 0, {Topic: b, Partition: 2}: 6}},
		// Unanchored, as Spark's findFirstIn: b's name without its first letter matches b.
		{"subscribePattern", map[string]string{"subscribePattern": regexp.QuoteMeta(b[1:]) + "$"}, map[logformat.TopicPartition]int64{
			{Topic: b, Partition: 0}: 0, {Topic: b, Partition: 1}: 0, {Topic: b, Partition: 2}: 6}},
		// Partitions that do not exist are left out, as Spark filters the described ones.
		{"assign", map[string]string{"assign": `{"` + a + `":[1],"` + b + `":[2,9]}`}, map[logformat.TopicPartition]int64{
			{Topic: a, Partition: 1}: 4, {Topic: b, Partition: 2}: 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSource(t, tc.opts, nil)
			got, err := s.InitialOffsets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := logformat.NewKafkaOffsets(tc.want); got.JSON() != want.JSON() {
				t.Errorf("got %s, want %s", got.JSON(), want.JSON())
			}
		})
	}

	t.Run("subscribe to a missing topic", func(t *testing.T) {
		s, _ := newSource(t, map[string]string{"subscribe": a + ",no-such-topic-x", "fetchOffset.numRetries": "2"}, nil)
		_, err := s.InitialOffsets(ctx)
		var ute *UnknownTopicError
		if !errors.As(err, &ute) || len(ute.Topics) != 1 || ute.Topics[0] != "no-such-topic-x" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("pattern matching nothing", func(t *testing.T) {
		s, _ := newSource(t, map[string]string{"subscribePattern": "^no-such-topic-.*"}, nil)
		got, err := s.InitialOffsets(ctx)
		if err != nil || len(got.Topics) != 0 {
			t.Fatalf("%s %v", got.JSON(), err)
		}
		end, _, err := s.Latest(ctx, got, ReadLimit{AllAvailable: true})
		if err != nil || len(end.Topics) != 0 {
			t.Fatalf("latest %s %v (an empty end means no batch)", end.JSON(), err)
		}
	})
}

// TestLatestRateLimit runs the 10/20/70 case against the broker, then drains the topic.
func TestLatestRateLimit(t *testing.T) {
	topic := newTopic(t, 3)
	produceN(t, topic, 0, 0, 10)
	produceN(t, topic, 1, 0, 20)
	produceN(t, topic, 2, 0, 70)
	ctx := testCtx(t)
	s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "7"}, nil)
	start, err := s.InitialOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	limit := s.Options().DefaultReadLimit()
	end, _, err := s.Latest(ctx, start, limit)
	if err != nil {
		t.Fatal(err)
	}
	if want := offs(topic, 0, 1, 1, 1, 2, 4); end.JSON() != want.JSON() {
		t.Fatalf("first batch %s, want %s", end.JSON(), want.JSON())
	}
	batches := 1
	for {
		next, _, err := s.Latest(ctx, end, limit)
		if err != nil {
			t.Fatal(err)
		}
		if next.JSON() == end.JSON() {
			break
		}
		var n int64
		for tp, o := range next.Map() {
			n += o - end.Map()[tp]
		}
		if n > 7+3 { // at most the limit plus one per partition (the ceil)
			t.Fatalf("batch of %d records", n)
		}
		end = next
		batches++
	}
	if want := offs(topic, 0, 10, 1, 20, 2, 70); end.JSON() != want.JSON() {
		t.Fatalf("drained to %s, want %s", end.JSON(), want.JSON())
	}
	if batches < 100/7 {
		t.Errorf("%d batches for 100 records at 7 per trigger", batches)
	}
}

func TestLatestMinOffsetsAndDelay(t *testing.T) {
	topic := newTopic(t, 2)
	ctx := testCtx(t)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	s, _ := newSource(t, map[string]string{"subscribe": topic, "minOffsetsPerTrigger": "10", "maxTriggerDelay": "1m"}, clock)
	start, err := s.InitialOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	limit := s.Options().DefaultReadLimit()
	latest := func(from logformat.KafkaOffsets) logformat.KafkaOffsets {
		t.Helper()
		end, _, err := s.Latest(ctx, from, limit)
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	// Spark's lastTriggerMillis starts at 0: the first trigger is never delayed.
	produceN(t, topic, 0, 0, 2)
	end := latest(start)
	if want := offs(topic, 0, 2, 1, 0); end.JSON() != want.JSON() {
		t.Fatalf("first trigger %s, want %s", end.JSON(), want.JSON())
	}
	start = end
	produceN(t, topic, 0, 2, 3)
	produceN(t, topic, 1, 0, 2) // 5 new records < 10
	if got := latest(start); got.JSON() != start.JSON() {
		t.Fatalf("5 < 10 records: batch not delayed: %s", got.JSON())
	}
	clock.Advance(30 * time.Second)
	if got := latest(start); got.JSON() != start.JSON() {
		t.Fatalf("30s < 1m: batch not delayed: %s", got.JSON())
	}
	produceN(t, topic, 1, 2, 5) // 10 new records
	end = latest(start)
	if want := offs(topic, 0, 5, 1, 7); end.JSON() != want.JSON() {
		t.Fatalf("10 records: %s, want %s", end.JSON(), want.JSON())
	}
	start = end
	produceN(t, topic, 0, 5, 1)
	clock.Advance(59 * time.Second)
	if got := latest(start); got.JSON() != start.JSON() {
		t.Fatalf("59s after the last batch: not delayed: %s", got.JSON())
	}
	clock.Advance(time.Second)
	end = latest(start)
	if want := offs(topic, 0, 6, 1, 7); end.JSON() != want.JSON() {
		t.Fatalf("after maxTriggerDelay: %s, want %s", end.JSON(), want.JSON())
	}

	// AllAvailable (Trigger.Once) ignores the minimum.
	produceN(t, topic, 1, 7, 1)
	if got, _, err := s.Latest(ctx, end, ReadLimit{AllAvailable: true}); err != nil || got.JSON() != offs(topic, 0, 6, 1, 8).JSON() {
		t.Fatalf("all available: %s %v", got.JSON(), err)
	}
}

func TestTriggerAvailableNow(t *testing.T) {
	topic := newTopic(t, 1)
	produceN(t, topic, 0, 0, 10)
	ctx := testCtx(t)
	s, _ := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "4"}, nil)
	start, err := s.InitialOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.PrepareForTriggerAvailableNow()
	var ends []string
	for range 5 {
		end, _, err := s.Latest(ctx, start, s.Options().DefaultReadLimit())
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end.JSON())
		start = end
		produceN(t, topic, 0, 100, 5) // arrives after the snapshot: not part of this run
	}
	want := []string{offs(topic, 0, 4).JSON(), offs(topic, 0, 8).JSON(), offs(topic, 0, 10).JSON(), offs(topic, 0, 10).JSON(), offs(topic, 0, 10).JSON()}
	if strings.Join(ends, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", ends, want)
	}
}
