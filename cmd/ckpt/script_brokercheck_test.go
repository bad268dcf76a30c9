package main

import (
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands for the broker checks of doctor, replay, inspect and repair
// (testdata/script/broker_*.txtar), on top of lag's (lagfreeport, lagwait, lagtopic, lagproduce,
// lagdeleterecords: script_lag_test.go). They talk to the broker at $BOOTSTRAP over the wire,
// so they work against a `ckpt broker` process.
//
//	brokerdeletetopic TOPIC                   delete a topic
//	brokerrecreatetopic TOPIC PARTITIONS      delete a topic and create it again, empty
//	brokeraddpartitions TOPIC N               add N partitions to a topic
func init() {
	scriptCmds["brokerdeletetopic"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: brokerdeletetopic TOPIC")
		}
		brokerDeleteTopic(ts, args[0])
	}
	scriptCmds["brokerrecreatetopic"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: brokerrecreatetopic TOPIC PARTITIONS")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		brokerDeleteTopic(ts, args[0])
		resp, err := lagAdmin(ts).CreateTopic(lagCtx(ts), int32(n), 1, nil, args[0])
		ts.Check(err)
		ts.Check(resp.Err)
	}
	scriptCmds["brokeraddpartitions"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: brokeraddpartitions TOPIC N")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		resp, err := lagAdmin(ts).CreatePartitions(lagCtx(ts), n, args[0])
		ts.Check(err)
		ts.Check(resp.Error())
	}
}

func brokerDeleteTopic(ts *testscript.TestScript, topic string) {
	resp, err := lagAdmin(ts).DeleteTopic(lagCtx(ts), topic)
	ts.Check(err)
	ts.Check(resp.Err)
}
