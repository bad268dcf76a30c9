package query

import (
	"strings"
	"testing"
	"time"
)

func TestParseTrigger(t *testing.T) {
	for in, want := range map[string]string{
		"": "default", "once": "once", "availableNow": "availableNow", "10s": "processingTime=10s",
		"10 seconds": "processingTime=10s", "processingTime=1m": "processingTime=1m0s", "500": "processingTime=500ms", "0s": "default",
	} {
		got, err := ParseTrigger(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseTrigger(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseTrigger("sometimes"); err == nil {
		t.Error("bad trigger accepted")
	}
}

func TestFileAndFlags(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
name: orders
source: kafka
options:
  kafka.bootstrap.servers: h:9092
  subscribe: in
sink: parquet
sinkOptions:
  path: /out
checkpoint: /ckpt
trigger: 10 seconds
select: ["CAST(value AS STRING) AS v"]
conf:
  spark.sql.streaming.minBatchesToRetain: "7"
`))
	if err != nil {
		t.Fatal(err)
	}
	q.Merge(&Query{Trigger: "once", Options: map[string]string{"startingOffsets": "earliest"}})
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if r.Trigger.Kind != TriggerOnce || r.FileFormat != "parquet" || r.SinkPath != "/out" || r.MinBatchesToRetain != 7 ||
		r.Options["startingOffsets"] != "earliest" || r.Options["subscribe"] != "in" {
		t.Errorf("resolved %+v", r)
	}
	if _, err := Parse("q.yaml", []byte("sinkk: console\n")); err == nil || !strings.Contains(err.Error(), "sinkk") {
		t.Errorf("unknown key: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	q := &Query{Sink: "file", SinkOptions: map[string]string{"pth": "x"}, Trigger: "never", Conf: map[string]string{"spark.x": "1"},
		Select: []string{"offset AS value", "partition AS nope"}}
	_, err := q.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{`unknown file sink option "pth"`, "needs an output directory", "no checkpoint location", `invalid trigger "never"`, "unknown --conf spark.x"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
	k := &Query{Sink: "kafka", Checkpoint: "/c", Select: []string{"offset AS value", "partition AS nope"}}
	if _, err := k.Validate(); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("kafka columns: %v", err)
	}
	_ = time.Second
}

// Async progress tracking: writer options taken out of the sink options, Spark's validations
// with Spark's texts.
func TestAsyncProgressTrackingOptions(t *testing.T) {
	q := &Query{Sink: SinkKafka, Checkpoint: "c", SinkOptions: map[string]string{"topic": "out", OptAsyncProgressTracking: "TRUE", OptAsyncCheckpointInterval: "500"}}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !r.AsyncProgressTracking || r.AsyncCheckpointIntervalMs != 500 || len(q.SinkOptions) != 1 {
		t.Fatalf("async %v interval %d sink options %v", r.AsyncProgressTracking, r.AsyncCheckpointIntervalMs, q.SinkOptions)
	}
	r, err = (&Query{Sink: SinkNoop, Checkpoint: "c"}).Validate()
	if err != nil || r.AsyncProgressTracking || r.AsyncCheckpointIntervalMs != 1000 {
		t.Fatalf("defaults: %v %d %v", r.AsyncProgressTracking, r.AsyncCheckpointIntervalMs, err)
	}
	for _, tc := range []struct {
		q    *Query
		want string
	}{
		{&Query{Sink: SinkConsole, Trigger: "once"}, "Async progress tracking cannot be used with Once trigger"},
		{&Query{Sink: SinkNoop, Trigger: "availableNow"}, "Async progress tracking cannot be used with AvailableNow trigger"},
		{&Query{Sink: SinkJSON, SinkOptions: map[string]string{"path": "/tmp"}}, "Sink FileSink[/tmp] does not support async progress tracking"},
	} {
		tc.q.Checkpoint = "c"
		if tc.q.SinkOptions == nil {
			tc.q.SinkOptions = map[string]string{}
		}
		tc.q.SinkOptions[OptAsyncProgressTracking] = "true"
		if _, err := tc.q.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.q, err, tc.want)
		}
		tc.q.SinkOptions = map[string]string{"path": "/tmp", OptAsyncProgressTracking: "false"}
		if tc.q.Sink == SinkConsole || tc.q.Sink == SinkNoop {
			delete(tc.q.SinkOptions, "path")
		}
		if _, err := tc.q.Validate(); err != nil {
			t.Errorf("without async: %v", err)
		}
	}
	if _, err := (&Query{Sink: SinkNoop, Checkpoint: "c", SinkOptions: map[string]string{OptAsyncCheckpointInterval: "-1"}}).Validate(); err == nil {
		t.Error("negative interval accepted")
	}
}

// The file sink log confs (spark.sql.streaming.fileSink.log.*) are accepted with --conf,
// parsed as Spark parses them, and bad values are refused.
func TestFileSinkLogConfs(t *testing.T) {
	base := func(conf map[string]string) *Query {
		return &Query{Sink: "json", SinkOptions: map[string]string{"path": "/out"}, Checkpoint: "/c", Conf: conf}
	}
	r, err := base(nil).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !r.FileSinkLogDeletion || r.FileSinkCompactInterval != 10 || r.FileSinkCleanupDelay != 10*time.Minute {
		t.Errorf("defaults: deletion %v interval %d delay %v", r.FileSinkLogDeletion, r.FileSinkCompactInterval, r.FileSinkCleanupDelay)
	}
	r, err = base(map[string]string{ConfFileSinkLogDeletion: "false", ConfFileSinkLogCompactInterval: "3", ConfFileSinkLogCleanupDelay: "1500"}).Validate()
	if err != nil {
		t.Fatal(err)
	}
	if r.FileSinkLogDeletion || r.FileSinkCompactInterval != 3 || r.FileSinkCleanupDelay != 1500*time.Millisecond {
		t.Errorf("set: deletion %v interval %d delay %v", r.FileSinkLogDeletion, r.FileSinkCompactInterval, r.FileSinkCleanupDelay)
	}
	for in, want := range map[string]time.Duration{"10m": 10 * time.Minute, "2min": 2 * time.Minute, "30s": 30 * time.Second, "0": 0, " 5H ": 5 * time.Hour, "1d": 24 * time.Hour, "250ms": 250 * time.Millisecond} {
		if got, err := ParseSparkTime(in, time.Millisecond); err != nil || got != want {
			t.Errorf("ParseSparkTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	_, err = base(map[string]string{ConfFileSinkLogDeletion: "maybe", ConfFileSinkLogCompactInterval: "0", ConfFileSinkLogCleanupDelay: "10 parsecs"}).Validate()
	for _, s := range []string{ConfFileSinkLogDeletion, ConfFileSinkLogCompactInterval, ConfFileSinkLogCleanupDelay} {
		if err == nil || !strings.Contains(err.Error(), "--conf "+s) {
			t.Errorf("bad %s accepted: %v", s, err)
		}
	}
}
