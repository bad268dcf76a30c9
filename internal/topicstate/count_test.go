package topicstate

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// CountRange clamps the re-run range to what the broker still holds.
func TestCountRange(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "in")
	tb.CreateTopic(topic, 4)
	tb.produce(topic, 0, 20, nil)
	tb.produce(topic, 1, 20, nil)
	tb.produce(topic, 2, 6, nil)
	tb.produce(topic, 3, 9, nil)
	tb.DeleteRecords(topic, 0, 5) // the range starts at 2: 3 offsets aged out
	tb.DeleteRecords(topic, 3, 4) // not in the start offsets: read from 4
	st := tb.read(topic)
	start := offsets(topic+":0=2", topic+":1=10", topic+":2=4", topic+":9=0")
	end := offsets(topic+":0=12", topic+":1=15", topic+":2=10", topic+":3=9")
	got := CountRange(st, start, end)
	want := []PartitionCount{
		{Topic: topic, Partition: 0, From: 2, Until: 12, Offsets: 10, Records: 7, AgedOut: 3, LogStart: 5, LogEnd: 20, Note: "partly deleted: below the log start"},
		{Topic: topic, Partition: 1, From: 10, Until: 15, Offsets: 5, Records: 5, LogStart: 0, LogEnd: 20},
		{Topic: topic, Partition: 2, From: 4, Until: 10, Offsets: 6, Records: 2, BeyondEnd: 4, LogStart: 0, LogEnd: 6, Note: "partly beyond the log end"},
		{Topic: topic, Partition: 3, From: 4, Until: 9, Offsets: 5, Records: 5, LogStart: 4, LogEnd: 9, Note: "not in the start offsets: read from the earliest offset"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("counts\n%+v\nwant\n%+v", got, want)
	}

	// Reading the ranges counts the same records: no transactions here.
	_, cl := tb.reader()
	if err := CountExact(tb.ctx, cl, got, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !got[i].Exact || got[i].Records != want[i].Records {
			t.Fatalf("exact count %+v, want %d records", got[i], want[i].Records)
		}
	}

	// Offsets that went backwards and partitions the broker lacks read nothing.
	back := CountRange(st, offsets(topic+":1=15", topic+":7=1"), offsets(topic+":1=3", topic+":7=4", topic+":8=2"))
	if back[0].Records != 0 || back[0].Offsets != 0 || back[0].Note == "" ||
		back[1].LogStart != recovery.Unknown || back[1].Offsets != 3 || back[1].Records != 0 ||
		back[2].From != recovery.Unknown || back[2].Note != "not in the start offsets and not on the broker" {
		t.Fatalf("counts %+v", back)
	}
}

// On a transactional topic commit markers take offsets: CountRange counts offsets (an upper
// bound), CountExact counts the data records.
func TestCountExactTransactional(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "txn")
	tb.CreateTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for txn := range 3 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			cl.Produce(tb.ctx, &kgo.Record{Value: []byte(strconv.Itoa(txn*10 + i))}, nil)
		}
		if err := cl.Flush(tb.ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(tb.ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	st := tb.read(topic)
	p, _ := st.Lookup(topic, 0)
	if p.End != 15 { // 3 × (4 records + 1 commit marker)
		t.Fatalf("log end %d, want 15", p.End)
	}
	counts := CountRange(st, offsets(topic+":0=0"), offsets(topic+":0=15"))
	if counts[0].Records != 15 || counts[0].Exact {
		t.Fatalf("upper bound %+v", counts[0])
	}
	_, rc := tb.reader()
	if err := CountExact(tb.ctx, rc, counts, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if counts[0].Records != 12 || !counts[0].Exact {
		t.Fatalf("exact %+v, want 12 data records", counts[0])
	}
	// A range ending on a marker's offset: [5, 9) holds 4 data records (offset 9 is a marker).
	part := CountRange(st, offsets(topic+":0=5"), offsets(topic+":0=9"))
	if err := CountExact(tb.ctx, rc, part, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if part[0].Records != 4 || !part[0].Exact {
		t.Fatalf("exact %+v, want 4", part[0])
	}
}

func TestRecordTimestamps(t *testing.T) {
	tb := newBroker(t)
	topic := uniqueTopic(t, "ts")
	tb.CreateTopic(topic, 2)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tb.produce(topic, 0, 10, func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) })
	tb.produce(topic, 1, 3, func(i int) time.Time { return base.Add(time.Hour + time.Duration(i)*time.Minute) })
	_, cl := tb.reader()
	at := []At{
		{topic, 0, 0}, {topic, 0, 4}, {topic, 0, 9}, // three rounds on partition 0
		{topic, 1, 2},
		{topic, 1, 3},  // the log end: no record yet
		{topic, 0, -1}, // ignored
	}
	got, err := RecordTimestamps(tb.ctx, cl, at, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[At]time.Time{
		{topic, 0, 0}: base,
		{topic, 0, 4}: base.Add(4 * time.Second),
		{topic, 0, 9}: base.Add(9 * time.Second),
		{topic, 1, 2}: base.Add(time.Hour + 2*time.Minute),
	}
	if len(got) != len(want) {
		t.Fatalf("timestamps %v", got)
	}
	for k, v := range want {
		if !got[k].Equal(v) {
			t.Fatalf("%v: %v, want %v", k, got[k], v)
		}
	}
}
