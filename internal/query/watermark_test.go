package query

import (
	"strings"
	"testing"
)

// TestWatermarkQuery: the YAML key watermark and the flag give the same resolved watermark;
// append mode is accepted when a grouping column carries it.
func TestWatermarkQuery(t *testing.T) {
	file := []byte("checkpoint: /c\nsink: noop\ngroupBy: [\"window(timestamp, '10 minutes', '5 minutes') AS w, string(key) AS k\"]\nagg: [\"count(*) AS n\"]\nwatermark: timestamp=10 seconds\n")
	q, err := Parse("q.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputMode != OutputAppend || r.WatermarkColumn != "timestamp" || r.WatermarkDelayMs != 10000 {
		t.Fatalf("resolved %q %q %d", r.OutputMode, r.WatermarkColumn, r.WatermarkDelayMs)
	}
	w := r.Grouping.Window
	if w == nil || w.Key != 0 || w.Size != 600_000_000 || w.Slide != 300_000_000 || r.Grouping.EventTimeKey("timestamp") != 0 {
		t.Fatalf("window %+v", w)
	}
	if !r.Grouping.KeyNullable[0] {
		t.Error("a sliding window column is not nullable; Spark's Expand makes it nullable")
	}
	var names []string
	for _, c := range r.Grouping.Columns() {
		names = append(names, c.Name+":"+c.Kind.String())
	}
	if got := strings.Join(names, ","); got != "w:struct<start:timestamp,end:timestamp>,k:string,n:bigint" {
		t.Errorf("columns %s", got)
	}
	flags := &Query{Watermark: "timestamp=1 minute 30 seconds", OutputMode: "update"}
	q.Merge(flags)
	if r, err = q.Validate(); err != nil || r.WatermarkDelayMs != 90000 || r.OutputMode != OutputUpdate {
		t.Fatalf("merged: %v %+v", err, r)
	}
	// A plain timestamp key carries the watermark too; no alias names a window "window".
	q = &Query{Checkpoint: "/c", Sink: "noop", GroupBy: []string{"timestamp, window(timestamp, '1 minute')"}, Agg: []string{"count(*) AS n"}, Watermark: "timestamp=0 seconds"}
	if r, err = q.Validate(); err != nil || r.Grouping.EventTimeKey("timestamp") != 0 || r.Grouping.Keys[1].Name != "window" || r.Grouping.KeyNullable[1] {
		t.Fatalf("timestamp key: %v", err)
	}
}

func TestWatermarkRefusals(t *testing.T) {
	win := []string{"window(timestamp, '1 minute') AS w"}
	for _, c := range []struct {
		q    Query
		want string
	}{
		// Spark's texts (the append ones checked against Spark by TestSparkLiveWindowHandOver
		// and TestSparkLiveAggregationHandOver).
		{Query{GroupBy: win, Agg: []string{"count(*)"}}, SparkAppendAggregation},
		{Query{GroupBy: []string{"string(key) AS k"}, Agg: []string{"count(*)"}, Watermark: "timestamp=10 seconds"}, SparkAppendAggregation4},
		{Query{GroupBy: win, Agg: []string{"count(*)"}, Watermark: "timestamp=-10 seconds"}, "delay threshold (-10 seconds) should not be negative."},
		{Query{GroupBy: []string{"window(timestamp, '1 minute', '2 minutes') AS w"}, Agg: []string{"count(*)"}, Watermark: "timestamp=1s"}, "The slide duration (120000000) must be less than or equal to the windowDuration (60000000)."},
		{Query{GroupBy: []string{"window(timestamp, '0 minutes') AS w"}, Agg: []string{"count(*)"}, Watermark: "timestamp=1s"}, "The window duration (0) must be greater than 0."},
		// ckpt's own limits.
		{Query{GroupBy: win, Agg: []string{"count(*)"}, Watermark: "offset=10 seconds"}, "must be the Kafka column timestamp"},
		{Query{GroupBy: win, Agg: []string{"count(*)"}, Watermark: "timestamp"}, "want COLUMN=DELAY"},
		{Query{GroupBy: win, Agg: []string{"count(*)"}, Watermark: "timestamp=10 fortnights"}, "is not N unit"},
		{Query{GroupBy: win, Agg: []string{"count(*)"}, Watermark: "timestamp=1 month"}, "is not N unit"},
		{Query{Watermark: "timestamp=10 seconds"}, "--watermark without --group-by"},
		{Query{GroupBy: win, Agg: []string{"count(*)"}, Watermark: "timestamp=10s", Filter: "timestamp_ms(timestamp) > 5"}, "--filter naming timestamp"},
		{Query{GroupBy: []string{"window(offset, '1 minute') AS w"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "must be the Kafka column timestamp"},
		{Query{GroupBy: []string{"window(timestamp, '1 minute') AS a, window(timestamp, '2 minutes') AS b"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "only one window()"},
		{Query{GroupBy: []string{"window(timestamp, '1 minute', '10 seconds', '5 seconds') AS w"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "a start time is not supported"},
		{Query{Sink: "json", SinkOptions: map[string]string{"path": "/o"}, GroupBy: win, Agg: []string{"count(*)"}, Watermark: "timestamp=1s"}, "the file sink with an aggregation is not supported yet"},
	} {
		c.q.Checkpoint = "/c"
		if c.q.Sink == "" {
			c.q.Sink = "noop"
		}
		_, err := c.q.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.q, err, c.want)
		}
	}
}
