package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
)

// syncBuffer is a bytes.Buffer safe to read while run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRun starts the command on a free port, talks to it with a separate franz-go client, then
// cancels it as SIGINT would.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	ready := make(chan *embedkafka.Broker, 1)
	opts := &Options{Out: out, Err: errOut, Port: 0, Topics: []string{"in:4", "out"}, Generate: "in", Rate: 0, Limit: 500, Keys: 7,
		ready: func(b *embedkafka.Broker) { ready <- b }}
	done := make(chan error, 1)
	go func() { done <- run(ctx, opts) }()
	var b *embedkafka.Broker
	select {
	case b = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("broker did not start")
	}
	line := strings.TrimSpace(out.String())
	if !strings.HasPrefix(line, "broker listening on 127.0.0.1:") || line != "broker listening on "+b.Addr() {
		t.Fatalf("output %q", line)
	}

	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(tctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics["in"].Partitions) != 4 || len(topics["out"].Partitions) != embedkafka.DefaultPartitions {
		t.Errorf("topics %v", topics.Names())
	}
	ids := map[int64]bool{}
	for len(ids) < 500 {
		fs := cl.PollFetches(tctx)
		if tctx.Err() != nil {
			t.Fatalf("consumed %d of 500", len(ids))
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v struct {
				ID   int64  `json:"id"`
				User string `json:"user"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil || string(r.Key) != v.User {
				t.Errorf("record %q: %v", r.Value, err)
			}
			if ids[v.ID] {
				t.Errorf("duplicate id %d", v.ID)
			}
			ids[v.ID] = true
		})
	}
	for i := range int64(500) {
		if !ids[i] {
			t.Fatalf("id %d missing", i)
		}
	}
	// Produce through it too.
	if err := cl.ProduceSync(tctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if errOut.String() != "" {
		t.Errorf("stderr %q", errOut.String())
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Topics: []string{"in:0"}}, `--topic "in:0": partitions must be a positive integer`},
		{Options{Topics: []string{":3"}}, `--topic ":3": empty topic name`},
		{Options{Port: 70000}, "--port 70000: out of range 0-65535"},
		{Options{Rate: -1, Keys: 1}, "--rate -1: must not be negative"},
		{Options{Limit: 5, Keys: 1}, "--limit needs --generate"},
	} {
		tc.opts.Out, tc.opts.Err = &bytes.Buffer{}, &bytes.Buffer{}
		if tc.opts.Keys == 0 {
			tc.opts.Keys = 1
		}
		err := run(context.Background(), &tc.opts)
		var ee *exitcode.Error
		if !errors.As(err, &ee) || ee.Code != exitcode.Usage || err.Error() != tc.want {
			t.Errorf("%+v: %v, want usage error %q", tc.opts, err, tc.want)
		}
	}
}

func TestRunPortInUse(t *testing.T) {
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := strconv.Atoi(b.Addr()[strings.LastIndex(b.Addr(), ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), &Options{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Port: p, Keys: 1})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("err = %v", err)
	}
}
