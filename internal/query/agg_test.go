package query

import (
	"strings"
	"testing"
)

func TestAggregationQuery(t *testing.T) {
	file := []byte("checkpoint: /c\nsink: noop\ngroupBy: [\"string(key) AS k\"]\nagg: [\"count(*) AS n, sum(int(string(value))) AS s\"]\noutputMode: update\n")
	q, err := Parse("q.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	q.Merge(&Query{OutputMode: "complete"})
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputMode != OutputComplete || r.Grouping == nil {
		t.Fatalf("resolved %q %v", r.OutputMode, r.Grouping)
	}
	var names []string
	for _, c := range r.Grouping.Columns() {
		names = append(names, c.Name+":"+c.Kind.String())
	}
	if got := strings.Join(names, ","); got != "k:string,n:bigint,s:bigint" {
		t.Errorf("columns %s", got)
	}
}

func TestAggregationRefusals(t *testing.T) {
	for _, c := range []struct {
		q    Query
		want string
	}{
		{Query{GroupBy: []string{"string(key) AS k"}, Agg: []string{"count(*)"}}, SparkAppendAggregation},
		{Query{GroupBy: []string{"string(key) AS k"}, Agg: []string{"count(*)"}, OutputMode: "append"}, SparkAppendAggregation},
		{Query{OutputMode: "complete"}, SparkCompleteStateless},
		{Query{OutputMode: "sideways"}, `unknown output mode "sideways"`},
		{Query{Sink: "json", SinkOptions: map[string]string{"path": "/o"}, GroupBy: []string{"topic"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "Data source json does not support Update output mode"},
		{Query{GroupBy: []string{"topic"}, Agg: []string{"count(*)"}, Select: []string{"value"}, OutputMode: "update"}, "--select with --group-by"},
		{Query{Agg: []string{"count(*)"}, OutputMode: "update"}, "global aggregation"},
		{Query{GroupBy: []string{"topic"}, OutputMode: "update"}, "at least one aggregate"},
		{Query{GroupBy: []string{"json(value, \"a\") AS a"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "type is not known"},
		{Query{GroupBy: []string{"session_window(timestamp, '1 minute') AS w"}, Agg: []string{"count(*)"}, OutputMode: "update"}, "session_window() grouping"},
		{Query{GroupBy: []string{"topic"}, Agg: []string{"sum(string(value)) AS s"}, OutputMode: "update"}, "want a number"},
		{Query{GroupBy: []string{"topic"}, Agg: []string{"median(offset)"}, OutputMode: "update"}, `unknown function "median"`},
		{Query{GroupBy: []string{"topic"}, Agg: []string{"count(*) AS topic"}, OutputMode: "update"}, `"topic" appears twice`},
		{Query{GroupBy: []string{"topic"}, Agg: []string{"count(*)"}, OutputMode: "update", Sink: "kafka"}, "needs a column named value"},
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
