package transform

import (
	"fmt"
	"testing"
	"time"
)

func TestSplitList(t *testing.T) {
	got := SplitList([]string{`count(*) AS n, sum(int(json(value, "a,b"))) AS s`, "  ", "max(x), min(f(a, b)) AS m,"})
	want := []string{"count(*) AS n", `sum(int(json(value, "a,b"))) AS s`, "max(x)", "min(f(a, b)) AS m"}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestGroupingEval(t *testing.T) {
	g, err := CompileGrouping(`string(value) != "skip"`, []string{"string(key) AS k, partition"},
		[]string{"count(*), count(json(value)) AS c, sum(int(string(value))) AS s, max(timestamp) AS ts, avg(float(string(value))) AS a"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range g.Columns() {
		names = append(names, c.Name+":"+c.Kind.String())
	}
	if fmt.Sprint(names) != "[k:string partition:int count(1):bigint c:bigint s:bigint ts:timestamp a:double]" {
		t.Errorf("columns %v", names)
	}
	if !g.KeyIsExpr(0) || g.KeyIsExpr(1) || !g.KeyNullable[0] || !g.KeyNullable[1] {
		t.Errorf("key 0 an expression, key 1 a plain column, both nullable: %v %v", g.KeyIsExpr(0), g.KeyNullable)
	}
	ev := g.NewEvaluator()
	ts := time.UnixMilli(1700000000123).UTC()
	keep, keys, args, err := ev.Eval(&Row{Key: []byte("a"), Value: []byte("12"), Partition: 3, Timestamp: ts}, nil, nil)
	if err != nil || !keep {
		t.Fatal(keep, err)
	}
	if fmt.Sprintf("%#v", keys) != `[]interface {}{"a", 3}` {
		t.Errorf("keys %#v", keys)
	}
	if fmt.Sprintf("%v", args) != fmt.Sprintf("%v", []any{nil, 12, int64(12), ts, 12.0}) {
		t.Errorf("args %#v", args)
	}
	if keep, _, _, err := ev.Eval(&Row{Value: []byte("skip")}, keys, args); keep || err != nil {
		t.Errorf("filtered row kept: %v %v", keep, err)
	}
	_, keys, _, err = ev.Eval(&Row{Value: []byte("1")}, keys, args)
	if err != nil || keys[0] != nil {
		t.Errorf("null key: %#v %v", keys, err)
	}
}
