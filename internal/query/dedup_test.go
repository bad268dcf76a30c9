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
}

func TestDedupRefusals(t *testing.T) {
	sel := []string{"string(key) AS k", "json(value, \"a\") AS a", "headers"}
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
