package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
)

// Script commands for the Kafka-aware tests (testdata/script/lag_*.txtar). They talk to the
// broker at $BOOTSTRAP over the wire, so they work against a `ckpt broker` process as well as
// against the in-process broker of lagbroker.
//
//	lagfreeport VAR                              set VAR to a free TCP port on 127.0.0.1
//	lagbroker                                    start an in-process broker, set $BOOTSTRAP
//	lagwait                                      wait (up to 20s) until $BOOTSTRAP answers
//	lagtopic TOPIC PARTITIONS                    create a topic
//	lagproduce TOPIC PARTITION N [START STEP]    produce N records; record i is stamped
//	                                             START (RFC 3339) + i×STEP
//	lagdeleterecords TOPIC PARTITION OFFSET      move the log start up to OFFSET (DeleteRecords)
//	laggroup GROUP TOPIC:PARTITION=OFFSET...     require exactly these committed group offsets
//	laghttp URL FILE                             GET URL (retrying up to 20s) into FILE
func init() {
	scriptCmds["lagfreeport"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: lagfreeport VAR")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		port := ln.Addr().(*net.TCPAddr).Port
		ts.Check(ln.Close())
		ts.Setenv(args[0], strconv.Itoa(port))
	}
	scriptCmds["lagbroker"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: lagbroker")
		}
		b, err := embedkafka.Start(context.Background(), embedkafka.Options{})
		ts.Check(err)
		ts.Defer(b.Close)
		ts.Setenv("BOOTSTRAP", b.Addr())
	}
	scriptCmds["lagwait"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: lagwait")
		}
		adm := lagAdmin(ts)
		deadline := time.Now().Add(20 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := adm.ListBrokers(ctx)
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("broker %s not up: %v", ts.Getenv("BOOTSTRAP"), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	scriptCmds["lagtopic"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: lagtopic TOPIC PARTITIONS")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		resp, err := lagAdmin(ts).CreateTopic(lagCtx(ts), int32(n), 1, nil, args[0])
		ts.Check(err)
		ts.Check(resp.Err)
	}
	scriptCmds["lagproduce"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || (len(args) != 3 && len(args) != 5) {
			ts.Fatalf("usage: lagproduce TOPIC PARTITION N [START STEP]")
		}
		p, err := strconv.Atoi(args[1])
		ts.Check(err)
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		var start time.Time
		var step time.Duration
		if len(args) == 5 {
			start, err = time.Parse(time.RFC3339, args[3])
			ts.Check(err)
			step, err = time.ParseDuration(args[4])
			ts.Check(err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(ts.Getenv("BOOTSTRAP")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		ts.Check(err)
		defer cl.Close()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: args[0], Partition: int32(p), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))}
			if !start.IsZero() {
				recs[i].Timestamp = start.Add(time.Duration(i) * step)
			}
		}
		ts.Check(cl.ProduceSync(lagCtx(ts), recs...).FirstErr())
	}
	scriptCmds["lagdeleterecords"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: lagdeleterecords TOPIC PARTITION OFFSET")
		}
		p, err := strconv.Atoi(args[1])
		ts.Check(err)
		off, err := strconv.ParseInt(args[2], 10, 64)
		ts.Check(err)
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: args[0], Partition: int32(p), At: off, LeaderEpoch: -1})
		resp, err := lagAdmin(ts).DeleteRecords(lagCtx(ts), os)
		ts.Check(err)
		ts.Check(resp.Error())
	}
	scriptCmds["laggroup"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: laggroup GROUP TOPIC:PARTITION=OFFSET...")
		}
		resp, err := lagAdmin(ts).FetchOffsets(lagCtx(ts), args[0])
		ts.Check(err)
		ts.Check(resp.Error())
		got := map[string]int64{}
		resp.Each(func(o kadm.OffsetResponse) { got[fmt.Sprintf("%s:%d", o.Topic, o.Partition)] = o.At })
		for _, want := range args[1:] {
			tp, off, _ := strings.Cut(want, "=")
			n, err := strconv.ParseInt(off, 10, 64)
			ts.Check(err)
			if v, ok := got[tp]; !ok || v != n {
				ts.Fatalf("group %s: %s is %v (present %v), want %d; all: %v", args[0], tp, v, ok, n, got)
			}
			delete(got, tp)
		}
		if len(got) > 0 {
			ts.Fatalf("group %s has more offsets: %v", args[0], got)
		}
	}
	scriptCmds["laghttp"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: laghttp URL FILE")
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp, err := http.Get(args[0])
			if err == nil {
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				ts.Check(rerr)
				if resp.StatusCode != http.StatusOK {
					ts.Fatalf("GET %s: %s", args[0], resp.Status)
				}
				ts.Check(os.WriteFile(ts.MkAbs(args[1]), body, 0o644))
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("GET %s: %v", args[0], err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func lagAdmin(ts *testscript.TestScript) *kadm.Client {
	addr := ts.Getenv("BOOTSTRAP")
	if addr == "" {
		ts.Fatalf("$BOOTSTRAP is not set: run lagbroker, or start ckpt broker and set it")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	ts.Check(err)
	ts.Defer(cl.Close)
	return kadm.NewClient(cl)
}

func lagCtx(ts *testscript.TestScript) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	ts.Defer(cancel)
	return ctx
}
