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
