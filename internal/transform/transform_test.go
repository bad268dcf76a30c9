package transform

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestProjection(t *testing.T) {
	p, err := Compile(`json(value, "n") > 1 && topic == "t"`, []string{
		"CAST(value AS STRING) AS v",
		`json(value, "user.name") AS user`,
		`get_json_object(value, "$.user") AS raw`,
		"partition",
		`header(headers, "h") AS h`,
		"offset + 1 AS next",
		"CAST(key AS STRING)",
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range p.Columns() {
		names = append(names, c.Name+":"+c.Kind.String())
	}
	if got := strings.Join(names, " "); got != "v:string user:any raw:any partition:int h:any next:bigint col7:string" {
		t.Errorf("columns %s", got)
	}
	ev := p.NewEvaluator()
	row := &Row{Value: []byte(`{"n":2,"user":{"name":"ann"}}`), Topic: "t", Partition: 3, Offset: 9, Timestamp: time.UnixMilli(0),
		Headers: []Header{{Key: "h", Value: []byte("hv")}}}
	keep, err := ev.Keep(row)
	if err != nil || !keep {
		t.Fatalf("keep %v %v", keep, err)
	}
	out, err := ev.Project(row, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{`{"n":2,"user":{"name":"ann"}}`, "ann", `{"name":"ann"}`, int32(3), "hv", int64(10), nil}
	for i := range want {
		if fmt.Sprint(out[i]) != fmt.Sprint(want[i]) {
			t.Errorf("column %d = %#v, want %#v", i, out[i], want[i])
		}
	}
	row.Value = []byte("not json")
	if keep, _ := ev.Keep(row); keep {
		t.Error("malformed JSON must give null, i.e. not kept")
	}
}

func TestIdentityAndErrors(t *testing.T) {
	p, err := Compile("", nil)
	if err != nil || !p.Identity() || len(p.Columns()) != 8 {
		t.Fatalf("identity: %v %v", p, err)
	}
	for _, bad := range [][2]string{{"value +", ""}, {"", "nosuch(value)"}, {"", "value AS a|value AS a"}} {
		var sel []string
		if bad[1] != "" {
			sel = strings.Split(bad[1], "|")
		}
		if _, err := Compile(bad[0], sel); err == nil {
			t.Errorf("Compile(%q, %q): no error", bad[0], sel)
		}
	}
}
