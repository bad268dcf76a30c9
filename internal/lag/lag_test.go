package lag

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Produce N per partition, commit at M: the lag is N − M records, and the record time between
// the first unread record and the last one.
func TestLagAgainstBroker(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("in", 3)
	base := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	stamp := func(p int) func(int) time.Time {
		return func(i int) time.Time { return base.Add(time.Duration(p)*time.Hour + time.Duration(i)*time.Second) }
	}
	e.produce(topic, 0, 100, stamp(0))
	e.produce(topic, 1, 40, stamp(1))
	e.produce(topic, 2, 7, stamp(2))
	ck := newCkpt(t, "q").
		offsets(0, `{"`+topic+`":{"0":10,"1":5,"2":0}}`, `{"logOffset":3}`).commit(0).
		offsets(1, `{"`+topic+`":{"2":7,"1":40,"0":60}}`, `{"logOffset":4}`).commit(1).
		offsets(2, `{"`+topic+`":{"0":90,"1":40,"2":7}}`, `{"logOffset":5}`) // in flight

	c := e.collector(ck.uri)
	now := time.Now().Add(time.Minute)
	c.Now = func() time.Time { return now }
	rep, err := c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checkpoints) != 1 {
		t.Fatalf("report %+v", rep)
	}
	cl := rep.Checkpoints[0]
	if cl.Error != "" || !eq(cl.LastCommitBatch, i64(1)) || !eq(cl.InFlightBatch, i64(2)) || len(cl.Issues) != 0 {
		t.Fatalf("checkpoint %+v", cl)
	}
	if cl.LastCommitAgeSeconds == nil || *cl.LastCommitAgeSeconds < 59 || *cl.LastCommitAgeSeconds > 120 {
		t.Fatalf("commit age %v", cl.LastCommitAgeSeconds)
	}
	type row struct {
		committed, inFlight, latest, lag int64
		lagSeconds                       float64
	}
	want := []row{
		{60, 90, 100, 40, 39}, // records 60..99 unread: 99s − 60s
		{40, 40, 40, 0, 0},
		{7, 7, 7, 0, 0},
	}
	if len(cl.Partitions) != len(want) {
		t.Fatalf("partitions %+v", cl.Partitions)
	}
	for i, w := range want {
		p := cl.Partitions[i]
		if p.Source != 0 || p.Topic != topic || p.Partition != int32(i) || p.Status != StatusOK ||
			!eq(p.Committed, &w.committed) || !eq(p.InFlight, &w.inFlight) || !eq(p.Latest, &w.latest) ||
			!eq(p.LagRecords, &w.lag) || !eq(p.LogStart, i64(0)) || p.LagSeconds == nil || *p.LagSeconds != w.lagSeconds {
			t.Fatalf("partition %d: %+v (lag %s, seconds %v), want %+v", i, p, show(p.LagRecords), p.LagSeconds, w)
		}
	}
	p0 := cl.Partitions[0]
	if !p0.CommittedTimestamp.Equal(base.Add(60*time.Second)) || !p0.LatestTimestamp.Equal(base.Add(99*time.Second)) {
		t.Fatalf("timestamps %v %v", p0.CommittedTimestamp, p0.LatestTimestamp)
	}
	if cl.LagRecords != 40 || cl.LagSeconds == nil || *cl.LagSeconds != 39 {
		t.Fatalf("totals %d %v", cl.LagRecords, cl.LagSeconds)
	}

	// More records arrive: the next refresh sees them (no cache by default).
	e.produce(topic, 1, 5, stamp(1))
	rep, err = c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Checkpoints[0].Partitions[1]; !eq(p.LagRecords, i64(5)) || p.LagSeconds == nil || *p.LagSeconds != 4 {
		t.Fatalf("after producing: %+v", p)
	}

	// The JSON form has the documented fields.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"checkpoint":"` + ck.uri + `"`, `"lastCommitBatch":1`, `"inFlightBatch":2`, `"lagRecords":45`,
		`"committed":60`, `"inFlight":90`, `"latest":100`, `"logStart":0`, `"lagSeconds":39`, `"status":"ok"`, `"issues":[]`} {
		if !strings.Contains(string(b), field) {
			t.Fatalf("json lacks %s: %s", field, b)
		}
	}
}

// Problems on the broker show in the status; partitions new to the query count from earliest.
func TestLagStatuses(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("in", 3)
	e.produce(topic, 0, 10, nil)
	e.produce(topic, 2, 6, nil)
	// The checkpoint knows partitions 0 and 1 only; 0 is beyond the log end (recreated).
	ck := newCkpt(t, "q").offsets(0, `{"`+topic+`":{"0":25,"1":0}}`).commit(0)
	// Nothing committed yet: the initial offsets are the starting point.
	fresh := newCkpt(t, "fresh").kafkaInitial(0, `{"`+topic+`":{"0":4,"1":0,"2":0}}`).offsets(0, `{"`+topic+`":{"0":10,"1":0,"2":6}}`)
	noInit := newCkpt(t, "noinit").offsets(0, `{"`+topic+`":{"0":10,"1":0,"2":6}}`)
	broken := newCkpt(t, "broken").commit(0) // commits/0 without offsets/0
	newQuery := newCkpt(t, "new").write("metadata", `{"id":"0e5fa2b4-4e0c-4f0a-8a3c-1c2b3d4e5f60"}`)
	c := e.collector(ck.uri, fresh.uri, noInit.uri, broken.uri, newQuery.uri, newCkpt(t, "empty").uri)
	c.NoTimeLag = true
	rep, err := c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Checkpoints[0]
	if len(q.Partitions) != 3 || q.Partitions[0].Status != recovery.ReasonTopicRecreated || q.Partitions[1].Status != StatusRestartFails ||
		q.Partitions[2].Status != recovery.ReasonPartitionsAdded || q.Partitions[2].Committed != nil || !eq(q.Partitions[2].LagRecords, i64(6)) ||
		!eq(q.Partitions[0].LagRecords, i64(0)) || q.Partitions[0].LagSeconds != nil {
		t.Fatalf("statuses %+v", q.Partitions)
	}
	// The recreated topic fails the restart (the planner, with the broker): partition 1 reads
	// nothing more either.
	if q.Restart == nil || !q.Restart.Fails {
		t.Fatalf("restart %+v", q.Restart)
	}
	if len(q.Issues) != 2 || q.Issues[0].Code != recovery.ReasonPartitionsAdded || q.Issues[1].Code != recovery.ReasonTopicRecreated {
		t.Fatalf("issues %+v", q.Issues)
	}
	f := rep.Checkpoints[1]
	if f.LastCommitBatch != nil || !eq(f.InFlightBatch, i64(0)) || !eq(f.Partitions[0].Committed, i64(4)) || !eq(f.Partitions[0].InFlight, i64(10)) ||
		!eq(f.Partitions[0].LagRecords, i64(6)) || f.LagRecords != 12 || f.Partitions[0].Status != StatusOK {
		t.Fatalf("before the first commit: %+v", f)
	}
	n := rep.Checkpoints[2]
	if n.Partitions[0].Status != StatusNoCommit || n.Partitions[0].LagRecords != nil || n.LagRecords != 0 {
		t.Fatalf("no initial offsets: %+v", n)
	}
	if b := rep.Checkpoints[3]; !strings.Contains(b.Error, "commits/0 exists but offsets/0 does not") {
		t.Fatalf("broken: %+v", b)
	}
	if nq := rep.Checkpoints[4]; nq.Error != "" || len(nq.Partitions) != 0 || nq.LastCommitBatch != nil {
		t.Fatalf("new query: %+v", nq)
	}
	if em := rep.Checkpoints[5]; !strings.Contains(em.Error, "no checkpoint at mem://") {
		t.Fatalf("empty location: %+v", em)
	}
}

func TestReadPositionSkipsOtherSources(t *testing.T) {
	ck := newCkpt(t, "q").offsets(0, `{"logOffset":1}`, `{"t":{"0":5}}`, `-`, `7`).commit(0)
	s, err := open(context.Background(), ck.uri)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	pos, err := ReadPosition(context.Background(), cp, ck.uri)
	if err != nil {
		t.Fatal(err)
	}
	if len(pos.Sources) != 1 || pos.Sources[0].Index != 1 || pos.Sources[0].CommittedFile != "offsets/0" || pos.InFlight != nil {
		t.Fatalf("position %+v", pos)
	}
	if got := pos.Topics(); len(got) != 1 || got[0] != "t" {
		t.Fatalf("topics %v", got)
	}
}

// The position is where the planner says the restart reads: with commits behind the offsets
// (C < L-1) the restart re-runs batch L from offsets/L-1, so batches C+1..L-1 count as read,
// not offsets/C; an async checkpoint the sync planner refuses keeps the latest commit.
func TestReadPositionFollowsThePlanner(t *testing.T) {
	ctx := context.Background()
	read := func(ck *ckpt) *Position {
		t.Helper()
		s, err := open(ctx, ck.uri)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := checkpoint.Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		pos, err := ReadPosition(ctx, cp, ck.uri)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	behind := newCkpt(t, "behind").offsets(0, `{"t":{"0":1}}`).offsets(1, `{"t":{"0":2}}`).offsets(2, `{"t":{"0":3}}`).offsets(3, `{"t":{"0":4}}`).
		commit(0).commit(1)
	pos := read(behind)
	if s := pos.Sources; len(s) != 1 || s[0].CommittedFile != "offsets/2" || s[0].Committed.Map()[logformat.TopicPartition{Topic: "t", Partition: 0}] != 3 {
		t.Fatalf("commits behind: %+v", pos.Sources)
	}
	async := newCkpt(t, "async").offsets(0, `{"t":{"0":1}}`).offsets(3, `{"t":{"0":4}}`).commit(0).commit(3)
	if s := read(async).Sources; len(s) != 1 || s[0].CommittedFile != "offsets/3" {
		t.Fatalf("async gaps: %+v", s)
	}
}
