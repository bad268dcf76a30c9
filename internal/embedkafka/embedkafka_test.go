package embedkafka

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecord(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600))
	k, v := Record(7, 5, ts)
	if string(k) != "u2" || string(v) != `{"id":7,"user":"u2","amount":566.83,"ts":"2024-05-06T06:08:09.123Z"}` {
		t.Errorf("%s %s", k, v)
	}
	_, v = Record(0, 0, ts)
	if string(v) != `{"id":0,"user":"u0","amount":12.5,"ts":"2024-05-06T06:08:09.123Z"}` {
		t.Errorf("%s", v)
	}
	for id := range int64(2000) {
		_, v := Record(id, 0, ts)
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil || m["id"].(float64) != float64(id) || !strings.Contains(string(v), ".") {
			t.Fatalf("%s: %v", v, err)
		}
	}
}

func TestStartGenerateClose(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Unix(1_700_000_000, 0) }
	b, err := Start(ctx, Options{Topics: []TopicSpec{{Name: "a", Partitions: 3}, {Name: "b"}},
		Generate: &GeneratorSpec{Topic: "gen", Limit: 1000, Keys: 10, StartID: 5, Now: now}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
		t.Errorf("addr %s", b.Addr())
	}
	select {
	case <-b.GeneratorDone():
	case <-time.After(20 * time.Second):
		t.Fatal("generator did not finish")
	}
	if b.GeneratorErr() != nil || b.Produced() != 1000 {
		t.Fatalf("produced %d, err %v", b.Produced(), b.GeneratorErr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("gen"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics["a"].Partitions) != 3 || len(topics["b"].Partitions) != DefaultPartitions || len(topics["gen"].Partitions) != DefaultPartitions {
		t.Errorf("topics: %v", topics)
	}
	seen := map[int64]bool{}
	keyPart := map[string]int32{}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for len(seen) < 1000 {
		fs := cl.PollFetches(tctx)
		if tctx.Err() != nil {
			t.Fatalf("read %d", len(seen))
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v struct{ ID int64 }
			_ = json.Unmarshal(r.Value, &v)
			wk, wv := Record(v.ID, 10, now())
			if string(r.Key) != string(wk) || string(r.Value) != string(wv) {
				t.Errorf("record %d: %s %s", v.ID, r.Key, r.Value)
			}
			if p, ok := keyPart[string(r.Key)]; ok && p != r.Partition {
				t.Errorf("key %s on two partitions", r.Key)
			}
			keyPart[string(r.Key)] = r.Partition
			seen[v.ID] = true
		})
	}
	for id := int64(5); id < 1005; id++ {
		if !seen[id] {
			t.Fatalf("id %d missing", id)
		}
	}
	b.Close()
	b.Close() // idempotent
}

func TestGenerateRate(t *testing.T) {
	b, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Cluster().CreateTopic("r", 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	n, err := Generate(ctx, b.Addr(), GeneratorSpec{Topic: "r", Rate: 200})
	if err == nil {
		t.Fatal("a generator without a limit runs until cancelled")
	}
	// 200/s for 0.6s is 120; allow for a slow, loaded machine.
	if n < 40 || n > 130 {
		t.Errorf("%d records in 0.6s at 200/s", n)
	}
}

func TestStartErrors(t *testing.T) {
	for _, o := range []Options{
		{Port: -1},
		{Topics: []TopicSpec{{Name: ""}}},
		{Topics: []TopicSpec{{Name: "x"}, {Name: "x"}}},
		{Topics: []TopicSpec{{Name: "x", Partitions: -2}}},
		{Generate: &GeneratorSpec{}},
		{Generate: &GeneratorSpec{Topic: "g", Rate: -1}},
	} {
		if b, err := Start(context.Background(), o); err == nil {
			b.Close()
			t.Errorf("%+v: want error", o)
		}
	}
}

func TestDataDir(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, err := Start(ctx, Options{DataDir: dir, Topics: []TopicSpec{{Name: "p", Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Generate(ctx, b.Addr(), GeneratorSpec{Topic: "p", Limit: 50})
	if err != nil || n != 50 {
		t.Fatalf("%d %v", n, err)
	}
	b.Close()
	b, err = Start(ctx, Options{DataDir: dir, Topics: []TopicSpec{{Name: "p", Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 50 {
		t.Errorf("after restart: %d records, want 50", total)
	}
}
