package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// readAll reads (start, end] and returns the offsets read per partition.
func readAll(ctx context.Context, s *Source, start, end logformat.KafkaOffsets) (map[logformat.TopicPartition][]int64, error) {
	got := map[logformat.TopicPartition][]int64{}
	var mu sync.Mutex
	err := s.Read(ctx, start, end, 2, func(p logformat.TopicPartition, rows []Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			got[p] = append(got[p], r.Offset)
		}
		return nil
	})
	return got, err
}

func wantDataLoss(t *testing.T, err error, kind DataLossKind, msg string) {
	t.Helper()
	var dle *DataLossError
	if !errors.As(err, &dle) {
		t.Fatalf("err = %v (%T), want *DataLossError", err, err)
	}
	if dle.Kind != kind {
		t.Errorf("kind %s, want %s", dle.Kind, kind)
	}
	if want := msg + InstructionFailOnDataLossTrue; dle.Message != want {
		t.Errorf("message\n got: %q\nwant: %q", dle.Message, want)
	}
}

// TestDataLossAgedOut: records below the start offset were deleted (retention, DeleteRecords).
func TestDataLossAgedOut(t *testing.T) {
	ctx := testCtx(t)
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprintf("failOnDataLoss=%v", fail), func(t *testing.T) {
			topic := newTopic(t, 1)
			produceN(t, topic, 0, 0, 10)
			s, w := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "failOnDataLoss": fmt.Sprint(fail), "kafka.group.id": "g1"}, nil)
			start, err := s.InitialOffsets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			end, _, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := testBroker.Cluster().DeleteRecords(topic, 0, 6); err != nil {
				t.Fatal(err)
			}
			got, err := readAll(ctx, s, start, end)
			tp := sparkTP(logformat.TopicPartition{Topic: topic, Partition: 0})
			if fail {
				wantDataLoss(t, err, LossCannotFetchOffset, "Cannot fetch offset 0 (GroupId: g1, TopicPartition: "+tp+"). ")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got[logformat.TopicPartition{Topic: topic}]) != "[6 7 8 9]" {
				t.Errorf("read %v, want offsets 6..9", got)
			}
			if !w.contains("Cannot fetch offset 0 (GroupId: g1, TopicPartition: "+tp+"). "+InstructionFailOnDataLossFalse) ||
				!w.contains("The current available offset range is AvailableOffsetRange(6,10).\n Offset 0 is out of range, and records in [0, 6) will be\n skipped (GroupId: g1") {
				t.Errorf("warnings: %q", w.all())
			}
		})
	}
}

// TestDataLossTopicRecreated: the topic was deleted and created again with less data (and fewer
// partitions): end offsets go backwards and partitions disappear.
func TestDataLossTopicRecreated(t *testing.T) {
	ctx := testCtx(t)
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprintf("failOnDataLoss=%v", fail), func(t *testing.T) {
			topic := newTopic(t, 2)
			produceN(t, topic, 0, 0, 10)
			produceN(t, topic, 1, 0, 10)
			s, w := newSource(t, map[string]string{"subscribe": topic, "failOnDataLoss": fmt.Sprint(fail)}, nil)
			start, err := s.InitialOffsets(ctx) // latest: 10, 10
			if err != nil {
				t.Fatal(err)
			}
			c := testBroker.Cluster()
			if err := c.DeleteTopic(topic); err != nil {
				t.Fatal(err)
			}
			if err := c.CreateTopic(topic, 1, nil); err != nil {
				t.Fatal(err)
			}
			produceN(t, topic, 0, 0, 3)
			end, warns, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
			if err != nil {
				t.Fatal(err)
			}
			if end.JSON() != offs(topic, 0, 3).JSON() {
				t.Fatalf("end %s", end.JSON())
			}
			if len(warns) == 0 || !strings.HasPrefix(warns[0], "Found incorrect offsets in some partitions (partition, previous offset, fetched offset): List(("+topic+"-0,10,3))") {
				t.Errorf("latest warnings %q", warns)
			}
			ranges, rw, err := s.Ranges(ctx, start, end)
			if fail {
				// Partitions gone is checked before offsets going backwards.
				wantDataLoss(t, err, LossPartitionsGone, "Set("+topic+"-1) are gone. Some data may have been missed.. ")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ranges) != 0 {
				t.Errorf("ranges %v, want none (negative ranges are dropped)", ranges)
			}
			want := []string{
				"Set(" + topic + "-1) are gone. Some data may have been missed.. " + InstructionFailOnDataLossFalse,
				"Partition " + topic + "-0's offset was changed from 10 to 3, some data may have been missed. " + InstructionFailOnDataLossFalse,
			}
			if strings.Join(rw, "|") != strings.Join(want, "|") {
				t.Errorf("warnings\n got: %q\nwant: %q", rw, want)
			}
			// Read warns the same way and reads nothing; the next batch starts at 3.
			got, err := readAll(ctx, s, start, end)
			if err != nil || len(got) != 0 || !w.contains("offset was changed from 10 to 3") {
				t.Errorf("read %v %v %q", got, err, w.all())
			}
		})
	}
	t.Run("offset changed", func(t *testing.T) {
		topic := newTopic(t, 1)
		produceN(t, topic, 0, 0, 10)
		s, _ := newSource(t, map[string]string{"subscribe": topic}, nil)
		start, err := s.InitialOffsets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := testBroker.Cluster()
		if err := c.DeleteTopic(topic); err != nil {
			t.Fatal(err)
		}
		if err := c.CreateTopic(topic, 1, nil); err != nil {
			t.Fatal(err)
		}
		end, _, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Ranges(ctx, start, end)
		wantDataLoss(t, err, LossOffsetChanged, "Partition "+topic+"-0's offset was changed from 10 to 0, some data may have been missed. ")
	})
}

// TestDataLossAddedPartition: a partition added since the last batch whose earliest offset is no
// longer 0 (records deleted before the query saw it).
func TestDataLossAddedPartition(t *testing.T) {
	ctx := testCtx(t)
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprintf("failOnDataLoss=%v", fail), func(t *testing.T) {
			topic := newTopic(t, 2)
			produceN(t, topic, 0, 0, 5)
			s, w := newSource(t, map[string]string{"subscribe": topic, "startingOffsets": "earliest", "failOnDataLoss": fmt.Sprint(fail)}, nil)
			start, err := s.InitialOffsets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := admin(t).CreatePartitions(ctx, 2, topic); err != nil {
				t.Fatal(err)
			}
			produceN(t, topic, 2, 0, 4)
			produceN(t, topic, 3, 0, 6)
			if err := testBroker.Cluster().DeleteRecords(topic, 3, 2); err != nil {
				t.Fatal(err)
			}
			end, _, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
			if err != nil {
				t.Fatal(err)
			}
			if end.JSON() != offs(topic, 0, 5, 1, 0, 2, 4, 3, 6).JSON() {
				t.Fatalf("end %s", end.JSON())
			}
			got, err := readAll(ctx, s, start, end)
			if fail {
				wantDataLoss(t, err, LossAddedPartitionNotAtZero, "Added partition "+topic+"-3 starts from 2 instead of 0. Some data may have been missed. ")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprintf("map[{%s 0}:[0 1 2 3 4] {%s 2}:[0 1 2 3] {%s 3}:[2 3 4 5]]", topic, topic, topic) {
				t.Errorf("read %v", got)
			}
			if !w.contains("Added partition " + topic + "-3 starts from 2 instead of 0. Some data may have been missed. " + InstructionFailOnDataLossFalse) {
				t.Errorf("warnings %q", w.all())
			}
		})
	}
}

// TestDataLossTopicGone: with subscribePattern a deleted topic simply stops matching, so its
// partitions are gone; with subscribe Spark's describeTopics fails instead.
func TestDataLossTopicGone(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		fail    bool
		groupID string
	}{{true, ""}, {true, "my-group"}, {false, ""}} {
		t.Run(fmt.Sprintf("failOnDataLoss=%v,group=%q", tc.fail, tc.groupID), func(t *testing.T) {
			topic := newTopic(t, 2)
			produceN(t, topic, 0, 0, 5)
			opts := map[string]string{"subscribePattern": "^" + topic + "$", "failOnDataLoss": fmt.Sprint(tc.fail)}
			if tc.groupID != "" {
				opts["kafka.group.id"] = tc.groupID
			}
			s, _ := newSource(t, opts, nil)
			start, err := s.InitialOffsets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := testBroker.Cluster().DeleteTopic(topic); err != nil {
				t.Fatal(err)
			}
			end, _, err := s.Latest(ctx, start, ReadLimit{AllAvailable: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(end.Topics) != 0 {
				t.Fatalf("end %s", end.JSON())
			}
			ranges, warns, err := s.Ranges(ctx, start, end)
			set := "Set(" + topic + "-0, " + topic + "-1)"
			switch {
			case tc.fail && tc.groupID == "":
				wantDataLoss(t, err, LossPartitionsGone, set+" are gone. Some data may have been missed.. ")
			case tc.fail:
				wantDataLoss(t, err, LossPartitionsGone, set+" are gone. "+dataloss.CustomGroupID+". ")
			default:
				if err != nil || len(ranges) != 0 || len(warns) != 1 || !strings.HasPrefix(warns[0], set+" are gone.") {
					t.Errorf("%v %v %q", ranges, err, warns)
				}
			}
		})
	}
	t.Run("subscribe", func(t *testing.T) {
		topic := newTopic(t, 1)
		s, _ := newSource(t, map[string]string{"subscribe": topic}, nil)
		start, err := s.InitialOffsets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := testBroker.Cluster().DeleteTopic(topic); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Latest(ctx, start, ReadLimit{AllAvailable: true})
		var ute *UnknownTopicError
		if !errors.As(err, &ute) {
			t.Fatalf("err = %v, want *UnknownTopicError", err)
		}
	})
	t.Run("cannot find earliest", func(t *testing.T) {
		// A partition in the end offsets that vanished before planning.
		topic := newTopic(t, 1)
		s, _ := newSource(t, map[string]string{"subscribePattern": "^" + topic + "$"}, nil)
		gone := "gone-" + topic
		_, _, err := s.Ranges(ctx, offs(topic, 0, 0), logformat.NewKafkaOffsets(map[logformat.TopicPartition]int64{
			{Topic: topic, Partition: 0}: 0, {Topic: gone, Partition: 0}: 5}))
		wantDataLoss(t, err, LossCannotFindEarliest, "Cannot find earliest offsets of Set("+gone+"-0). Some data may have been missed. ")
	})
}
