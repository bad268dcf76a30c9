package query

import (
	"fmt"
	"strings"
	"testing"
)

func TestDedupQuery(t *testing.T) {
	file := []byte("checkpoint: /c\nsink: kafka\nsinkOptions: {topic: o, kafka.bootstrap.servers: h:1}\nselect: [\"string(key) AS k\", \"partition AS p\", \"string(value) AS value\"]\ndropDuplicates: [\"value\"]\n")
	q, err := Parse("q.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	q.Merge(&Query{DropDuplicates: []string{"p, k"}, OutputMode: "update"})
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	// The flags win; the order given is the key's order; the Kafka sink leaves out p.
	if r.Dedup == nil || fmt.Sprint(r.Dedup.Columns) != "[1 0]" || r.OutputMode != OutputUpdate {
		t.Fatalf("resolved %+v %q", r.Dedup, r.OutputMode)
	}
	r, err = (&Query{Checkpoint: "/c", Sink: "noop", DropDuplicates: []string{"key"}}).Validate()
	if err != nil || fmt.Sprint(r.Dedup.Columns) != "[0]" || r.OutputMode != OutputAppend {
		t.Fatalf("dedup over the Kafka columns: %+v %v", r, err)
	}
	file = []byte("checkpoint: /c\nsink: noop\nselect: [\"string(key) AS k\", timestamp]\nwatermark: timestamp=5 seconds\ndropDuplicatesWithinWatermark: [k]\n")
	if q, err = Parse("q.yaml", file); err != nil {
		t.Fatal(err)
	}
	q.Merge(&Query{Watermark: "timestamp=10 seconds"})
	if r, err = q.Validate(); err != nil || !r.Dedup.WithinWatermark || fmt.Sprint(r.Dedup.Columns) != "[0]" || r.WatermarkDelayMs != 10000 {
		t.Fatalf("dropDuplicatesWithinWatermark from YAML: %+v %v", r, err)
	}
}

func TestDedupRefusals(t *testing.T) {
	sel := []string{"string(key) AS k", "json(value, \"a\") AS a", "headers"}
	wsel := []string{"string(key) AS k", "timestamp", "value"}
	for _, c := range []struct {
		q    Query
		want string
	}{
		{Query{Select: sel, DropDuplicates: []string{"x"}}, `--drop-duplicates "x": not a column of the query (columns: k, a, headers)`},
		{Query{Select: sel, DropDuplicates: []string{"a"}}, "type is not known"},
		{Query{Select: sel, DropDuplicates: []string{"headers"}}, "by headers is not supported"},
		{Query{Select: sel, DropDuplicates: []string{"k, k"}}, `column "k" given twice`},
		{Query{Select: sel, DropDuplicates: []string{" , "}}, "needs at least one column"},
		{Query{Select: sel, DropDuplicates: []string{"k"}, OutputMode: "complete"}, SparkCompleteStateless4},
		{Query{Select: sel, DropDuplicates: []string{"k"}, OutputMode: "update", Sink: "json", SinkOptions: map[string]string{"path": "/o"}}, "Data source json does not support Update output mode"},
		{Query{DropDuplicates: []string{"key"}, GroupBy: []string{"topic"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "--drop-duplicates with --group-by"},
		{Query{DropDuplicates: []string{"key"}, SinkOptions: map[string]string{"asyncProgressTrackingEnabled": "true"}}, "async progress tracking with a stateful query"},
		{Query{Select: wsel, DropDuplicatesWithinWatermark: []string{"k"}}, "--drop-duplicates-within-watermark needs --watermark"},
		{Query{Select: wsel, DropDuplicates: []string{"k"}, Watermark: "timestamp=10 seconds"}, "--drop-duplicates not naming timestamp: not supported yet"},
		{Query{Select: sel, DropDuplicatesWithinWatermark: []string{"k"}, Watermark: "timestamp=10 seconds"}, "select the Kafka column timestamp unchanged"},
		{Query{Select: wsel, DropDuplicates: []string{"k"}, DropDuplicatesWithinWatermark: []string{"k"}, Watermark: "timestamp=10 seconds"}, "--drop-duplicates with --drop-duplicates-within-watermark"},
		{Query{Select: wsel, DropDuplicatesWithinWatermark: []string{"x"}, Watermark: "timestamp=10 seconds"}, `--drop-duplicates-within-watermark "x": not a column`},
		{Query{Select: wsel, Watermark: "timestamp=10 seconds"}, "--watermark without --group-by or --drop-duplicates"},
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

// TestDedupWatermarkResolved: the event-time column's place among the dedup columns
// (dropDuplicates with a watermark), none for dropDuplicatesWithinWatermark.
func TestDedupWatermarkResolved(t *testing.T) {
	for _, c := range []struct {
		q         Query
		eventTime int
		within    bool
	}{
		{Query{DropDuplicates: []string{"k, timestamp"}, Watermark: "timestamp=10 seconds"}, 1, false},
		{Query{DropDuplicates: []string{"timestamp"}, Watermark: "timestamp=1 minute"}, 0, false},
		{Query{DropDuplicates: []string{"k"}}, -1, false},
		{Query{DropDuplicatesWithinWatermark: []string{"k"}, Watermark: "timestamp=10 seconds"}, -1, true},
	} {
		c.q.Checkpoint, c.q.Sink, c.q.Select = "/c", "noop", []string{"string(key) AS k", "timestamp", "value"}
		r, err := c.q.Validate()
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		if r.Dedup.EventTime != c.eventTime || r.Dedup.WithinWatermark != c.within {
			t.Errorf("%+v: %+v, want event time %d, within %v", c.q, r.Dedup, c.eventTime, c.within)
		}
	}
}
