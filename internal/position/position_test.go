package position

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// logs is a Broker of plain data: each partition's log and the first offset at or after each
// probe time. The embedded-broker tests (testdata/script/offsets_broker.txtar) cover the real one.
type logs struct {
	parts map[string][]Partition
	at    map[logformat.TopicPartition]int64
}

func (l logs) Partitions(topic string) ([]Partition, bool) {
	ps, ok := l.parts[topic]
	return ps, ok
}

func (l logs) OffsetsAt(_ context.Context, _ []string, _ time.Time) (map[logformat.TopicPartition]int64, error) {
	return l.at, nil
}

// committed builds offsets and commits 0..n of the usual "events" source with 3 partitions:
// batch b ends at (b+1)*(10+p).
func committed(t *testing.T, n int64, extra func(b *scenario.Builder)) *storage.Mem {
	t.Helper()
	b := scenario.NewBuilder("position")
	b.Metadata()
	b.KafkaInitial(0, scenario.KafkaOffsets("events", 0, 0, 0))
	for id := int64(0); id <= n; id++ {
		b.Offsets(id, scenario.Kafka("events", id, 3))
		b.Commit(id)
	}
	if extra != nil {
		extra(b)
	}
	s := storage.NewMem()
	if err := b.WriteTo(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshot(t *testing.T, s storage.Store) map[string]string {
	t.Helper()
	es, err := s.Walk(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		if strings.HasPrefix(e.Path, "_ckpt/") {
			continue
		}
		b, _ := s.ReadFile(context.Background(), e.Path)
		out[e.Path] = string(b)
	}
	return out
}

func execOpts() journal.Options {
	return journal.Options{Now: func() time.Time { return testNow }, Tool: "ckpt test"}
}

var broker = logs{
	parts: map[string][]Partition{"events": {{0, 5, 100}, {1, 0, 110}, {2, 0, 120}}},
	at:    map[logformat.TopicPartition]int64{{Topic: "events", Partition: 0}: 7, {Topic: "events", Partition: 1}: 8, {Topic: "events", Partition: 2}: 9},
}

func TestResetTargets(t *testing.T) {
	// Batch 2 ends at 30, 33, 36.
	file := map[logformat.TopicPartition]int64{{Topic: "events", Partition: 1}: 4}
	cases := []struct {
		name   string
		target Target
		topics []Selector
		want   map[int32]int64 // partitions that move
		skip   int64           // total skipped
		reread int64           // total read again
	}{
		{"earliest", Target{Kind: ToEarliest}, nil, map[int32]int64{0: 5, 1: 0, 2: 0}, 0, 25 + 33 + 36},
		{"latest", Target{Kind: ToLatest}, nil, map[int32]int64{0: 100, 1: 110, 2: 120}, 70 + 77 + 84, 0},
		{"offset narrowed", Target{Kind: ToOffset, Offset: 12}, []Selector{{Topic: "events", Partitions: []int32{0, 2}}}, map[int32]int64{0: 12, 2: 12}, 0, 18 + 24},
		{"shift", Target{Kind: ShiftBy, Shift: -3}, nil, map[int32]int64{0: 27, 1: 30, 2: 33}, 0, 9},
		{"datetime", Target{Kind: ToDatetime, Time: testNow}, nil, map[int32]int64{0: 7, 1: 8, 2: 9}, 0, 23 + 25 + 27},
		{"duration", Target{Kind: ByDuration, Duration: time.Hour}, nil, map[int32]int64{0: 7, 1: 8, 2: 9}, 0, 23 + 25 + 27},
		{"file", Target{Kind: FromFile, File: file}, nil, map[int32]int64{1: 4}, 0, 29},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := committed(t, 2, nil)
			orig := snapshot(t, s)
			p, err := PlanReset(ctx, s, ResetOptions{Target: c.target, Topics: c.topics, Broker: broker, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if p.Refused != "" {
				t.Fatalf("refused: %s", p.Refused)
			}
			var skip, reread int64
			for _, r := range p.Rows {
				skip += r.Skipped
				reread += r.Reread
			}
			if skip != c.skip || reread != c.reread {
				t.Errorf("skipped %d, re-read %d; want %d, %d", skip, reread, c.skip, c.reread)
			}
			done, err := journal.Apply(ctx, s, p.JournalPlan(), execOpts())
			if err != nil {
				t.Fatal(err)
			}
			cp, err := checkpoint.Load(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			res, err := recovery.Plan(ctx, cp, recovery.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() || res.NextBatch != 4 || res.RerunBatch != nil {
				t.Fatalf("after the reset: %s, want a resume at batch 4", res.Verdict())
			}
			seq, err := cp.ReadOffsets(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			got, err := logformat.ParseKafkaOffsets("offsets/3", seq.Sources[0].JSON)
			if err != nil {
				t.Fatal(err)
			}
			for part := int32(0); part < 3; part++ {
				want, moves := c.want[part]
				if !moves {
					want = 3 * int64(10+part)
				}
				if o, _ := got.Get("events", part); o != want {
					t.Errorf("partition %d at %d, want %d", part, o, want)
				}
			}
			// Undo restores every byte.
			j, err := journal.Read(ctx, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + done.ID})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := journal.Undo(ctx, s, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}, execOpts()); err != nil {
				t.Fatal(err)
			}
			if after := snapshot(t, s); fmt.Sprint(after) != fmt.Sprint(orig) {
				t.Fatalf("undo did not restore the checkpoint:\n%v\n%v", orig, after)
			}
		})
	}
}

func TestResetRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		build func(t *testing.T) *storage.Mem
		opts  ResetOptions
		want  string
	}{
		{"uncommitted", func(t *testing.T) *storage.Mem {
			return committed(t, 2, func(b *scenario.Builder) { b.Offsets(3, scenario.Kafka("events", 3, 3)) })
		}, ResetOptions{Target: Target{Kind: ToOffset}}, "ckpt rewind mem://"},
		{"stateful", func(t *testing.T) *storage.Mem {
			return committed(t, 2, func(b *scenario.Builder) { b.Raw("state/0/0/1.delta", "x") })
		}, ResetOptions{Target: Target{Kind: ToOffset}}, "stateful"},
		{"file source", func(t *testing.T) *storage.Mem {
			s := storage.NewMem()
			b := scenario.NewBuilder("file")
			b.Metadata()
			b.Offsets(0, scenario.FileSource(0))
			b.Commit(0)
			if err := b.WriteTo(ctx, s); err != nil {
				t.Fatal(err)
			}
			return s
		}, ResetOptions{Target: Target{Kind: ToOffset}}, "file source"},
		{"out of range", func(t *testing.T) *storage.Mem { return committed(t, 2, nil) },
			ResetOptions{Target: Target{Kind: ToOffset, Offset: 2}, Broker: broker}, "outside the broker's log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.build(t)
			p, err := PlanReset(ctx, s, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Refused, c.want) || len(p.Actions) != 0 {
				t.Fatalf("refused %q (actions %d), want %q", p.Refused, len(p.Actions), c.want)
			}
		})
	}
	// --allow-out-of-range writes it.
	s := committed(t, 2, nil)
	p, err := PlanReset(ctx, s, ResetOptions{Target: Target{Kind: ToOffset, Offset: 2}, Broker: broker, AllowOutOfRange: true})
	if err != nil || p.Refused != "" || len(p.Actions) != 2 {
		t.Fatalf("--allow-out-of-range: %v %q %d", err, p.Refused, len(p.Actions))
	}
	// A broker target without a broker is an error, not a guess.
	if _, err := PlanReset(ctx, s, ResetOptions{Target: Target{Kind: ToLatest}}); err == nil {
		t.Fatal("--to-latest without a broker planned")
	}
}

func TestRewind(t *testing.T) {
	ctx := context.Background()
	// Batches 0..5 committed, with HDFS state versions 1..6 (version v written by batch v-1),
	// RocksDB v2 lineage files and a Hadoop checksum.
	s := committed(t, 5, func(b *scenario.Builder) {
		for v := 1; v <= 6; v++ {
			b.Raw(fmt.Sprintf("state/0/0/%d.delta", v), "d")
			b.Raw(fmt.Sprintf("state/0/1/%d_0f1e2d3c-aaaa-bbbb-cccc-000000000000.zip", v), "z")
		}
		b.Raw("state/0/0/.6.delta.crc", "c")
		b.Raw("state/0/0/5.snapshot", "s")
		b.Raw("state/0/1/SSTs/000001-abc.sst", "sst")
		b.Raw("state/0/_metadata/metadata", "m")
	})
	orig := snapshot(t, s)
	two := int64(2)
	p, err := PlanRewind(ctx, s, RewindOptions{ToBatch: &two})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused != "" {
		t.Fatal(p.Refused)
	}
	// Versions above 3 go: 4, 5, 6 in both partitions, 5.snapshot; the .crc rides along.
	if p.Offsets != 3 || p.Commits != 3 || p.StateFiles != 7 {
		t.Fatalf("moves %d offsets, %d commits, %d state files; want 3, 3, 7: %+v", p.Offsets, p.Commits, p.StateFiles, p.Actions)
	}
	if p.RerunRecords == nil || *p.RerunRecords != 3*(10+11+12) {
		t.Errorf("rerun records %v", p.RerunRecords)
	}
	done, err := journal.Apply(ctx, s, p.JournalPlan(), execOpts())
	if err != nil {
		t.Fatal(err)
	}
	now := snapshot(t, s)
	for _, keep := range []string{"state/0/0/3.delta", "state/0/1/SSTs/000001-abc.sst", "state/0/_metadata/metadata", "offsets/2", "commits/2"} {
		if _, ok := now[keep]; !ok {
			t.Errorf("%s was moved", keep)
		}
	}
	for _, gone := range []string{"state/0/0/4.delta", "state/0/0/.6.delta.crc", "state/0/1/6_0f1e2d3c-aaaa-bbbb-cccc-000000000000.zip", "offsets/3", "commits/5"} {
		if _, ok := now[gone]; ok {
			t.Errorf("%s is still there", gone)
		}
	}
	j, err := journal.Read(ctx, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + done.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Undo(ctx, s, journal.Location{Store: s, Dir: journal.RepairsDir + "/" + j.ID}, execOpts()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(snapshot(t, s)) != fmt.Sprint(orig) {
		t.Fatal("undo did not restore the checkpoint")
	}

	// --to-time picks the last batch at or before it: batch b's timestamp is base + b minutes.
	at := time.UnixMilli(scenario.BaseTimestampMs + 3*60000 + 30000)
	p, err = PlanRewind(ctx, s, RewindOptions{ToTime: &at})
	if err != nil || p.Batch != 3 {
		t.Fatalf("--to-time: batch %d, %v; want 3", p.Batch, err)
	}
	// A Kafka sink: refused without --allow-duplicates, with the count.
	p, err = PlanRewind(ctx, s, RewindOptions{ToBatch: &two, KafkaSink: true})
	if err != nil || !strings.Contains(p.Refused, "--allow-duplicates") || !strings.Contains(p.Refused, "99 Kafka input record(s)") {
		t.Fatalf("kafka sink: %v %q", err, p.Refused)
	}
	p, err = PlanRewind(ctx, s, RewindOptions{ToBatch: &two, KafkaSink: true, AllowDuplicates: true})
	if err != nil || p.Refused != "" || p.DuplicateRecords == nil || *p.DuplicateRecords != 99 {
		t.Fatalf("--allow-duplicates: %v %q %v", err, p.Refused, p.DuplicateRecords)
	}
}

// TestRewindKafkaSinkUncommitted: rewinding to the latest commit, above which only an
// uncommitted batch stands (a crash), re-runs no committed batch: a Kafka sink gets nothing
// again that a plain restart would not send, so nothing is refused or warned about.
func TestRewindKafkaSinkUncommitted(t *testing.T) {
	ctx := context.Background()
	s := committed(t, 2, func(b *scenario.Builder) { b.Offsets(3, scenario.Kafka("events", 3, 3)) })
	two := int64(2)
	p, err := PlanRewind(ctx, s, RewindOptions{ToBatch: &two, KafkaSink: true})
	if err != nil || p.Refused != "" || len(p.Warnings) > 0 || p.DuplicateRecords != nil || p.Offsets != 1 {
		t.Fatalf("%v: refused %q, warnings %v, duplicates %v, %d offsets files moved", err, p.Refused, p.Warnings, p.DuplicateRecords, p.Offsets)
	}
}

func TestExport(t *testing.T) {
	ctx := context.Background()
	s := committed(t, 2, func(b *scenario.Builder) { b.Offsets(3, scenario.Kafka("events", 3, 3)) })
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	b := logs{parts: map[string][]Partition{"events": {{0, 0, 100}, {1, 0, 100}, {2, 0, 100}, {3, 0, 5}}}}
	x, err := ExportOffsets(ctx, cp, b)
	if err != nil {
		t.Fatal(err)
	}
	if x.Batch != 2 || x.Uncommitted == nil || *x.Uncommitted != 3 {
		t.Fatalf("batch %d uncommitted %v", x.Batch, x.Uncommitted)
	}
	got, err := logformat.ParseKafkaOffsets("export", x.Sources[0].StartingOffsets)
	if err != nil {
		t.Fatal(err)
	}
	want := map[logformat.TopicPartition]int64{{Topic: "events", Partition: 0}: 30, {Topic: "events", Partition: 1}: 33, {Topic: "events", Partition: 2}: 36, {Topic: "events", Partition: 3}: -2}
	if fmt.Sprint(got.Map()) != fmt.Sprint(want) {
		t.Fatalf("export %s, want %v", x.Sources[0].StartingOffsets, want)
	}
}

func TestParseOffsetsFile(t *testing.T) {
	for _, in := range []string{"topic,partition,offset\nevents,1,4\n", `{"events":{"1":4}}`} {
		m, err := ParseOffsetsFile("f", []byte(in))
		if err != nil || len(m) != 1 || m[logformat.TopicPartition{Topic: "events", Partition: 1}] != 4 {
			t.Errorf("%q: %v %v", in, m, err)
		}
	}
	for _, bad := range []string{"events,x,4", `{"events":{"1":-2}}`, "events,1", ""} {
		if _, err := ParseOffsetsFile("f", []byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A newest commit truncated mid-JSON is no committed batch: Spark's restart fails on it, so the
// export is the end of the batch before and says it is not sound (it once said "end of batch 2
// (the latest committed)" with no warning).
func TestExportTruncatedLatestCommit(t *testing.T) {
	ctx := context.Background()
	s := committed(t, 2, func(b *scenario.Builder) { b.Raw("commits/2", "v1\n{\"nextBatchWat") })
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ExportOffsets(ctx, cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.Sound || x.Batch != 1 || len(x.Warnings) < 2 || !strings.Contains(x.Warnings[0], "commits/2 cannot be read") ||
		!strings.HasPrefix(x.Restart, "Restart will FAIL") {
		t.Fatalf("export %+v", x)
	}
	// A healthy checkpoint is sound.
	cp, err = checkpoint.Load(ctx, committed(t, 2, nil))
	if err != nil {
		t.Fatal(err)
	}
	if x, err = ExportOffsets(ctx, cp, nil); err != nil || !x.Sound || x.Batch != 2 || len(x.Warnings) != 0 {
		t.Fatalf("export %+v %v", x, err)
	}
}
