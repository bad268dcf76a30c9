package lag

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// scrape GETs /metrics and parses the exposition: series → value, plus the HELP and TYPE lines
// seen per family.
func scrape(t *testing.T, url string) (map[string]float64, map[string]string) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != MetricsContentType {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	body, _ := io.ReadAll(resp.Body)
	series, types := map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if help == "" {
				t.Fatalf("empty help: %q", line)
			}
			types[name] += "help "
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			types[name] += typ
		case strings.HasPrefix(line, "#"), line == "":
		default:
			i := strings.LastIndexByte(line, ' ')
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				t.Fatalf("bad sample %q", line)
			}
			if _, dup := series[line[:i]]; dup {
				t.Fatalf("duplicate series %q", line[:i])
			}
			series[line[:i]] = v
			name, _, _ := strings.Cut(line[:i], "{")
			if types[name] != "help gauge" {
				t.Fatalf("sample %q before its HELP/TYPE lines (%q)", line, types[name])
			}
		}
	}
	return series, types
}

// The endpoint serves two checkpoints; values match the broker and the checkpoints.
func TestMetricsEndpoint(t *testing.T) {
	e := newEnv(t)
	orders, clicks := e.topic("orders", 2), e.topic("clicks", 1)
	base := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	e.produce(orders, 0, 50, func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) })
	e.produce(orders, 1, 20, nil)
	e.produce(clicks, 0, 30, func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) })
	a := newCkpt(t, "a").offsets(0, `{"`+orders+`":{"0":20,"1":20}}`).commit(0).offsets(1, `{"`+orders+`":{"0":45,"1":20}}`)
	b := newCkpt(t, "b").offsets(3, `{"`+clicks+`":{"0":10}}`).commit(3).offsets(4, `{"`+clicks+`":{"0":28}}`).commit(4)

	c := e.collector(a.uri, b.uri)
	c.CacheTTL = time.Hour
	srv := httptest.NewServer(Handler(c))
	defer srv.Close()
	series, types := scrape(t, srv.URL)

	lbl := func(ck, topic string, p int) string {
		return `{checkpoint="` + ck + `",source="0",topic="` + topic + `",partition="` + strconv.Itoa(p) + `"}`
	}
	want := map[string]float64{
		"ckpt_up": 1,
		`ckpt_checkpoint_up{checkpoint="` + a.uri + `"}`:     1,
		`ckpt_checkpoint_up{checkpoint="` + b.uri + `"}`:     1,
		"ckpt_lag_records" + lbl(a.uri, orders, 0):           30,
		"ckpt_lag_records" + lbl(a.uri, orders, 1):           0,
		"ckpt_lag_records" + lbl(b.uri, clicks, 0):           2,
		"ckpt_lag_seconds" + lbl(a.uri, orders, 0):           29, // 49s − 20s
		"ckpt_lag_seconds" + lbl(a.uri, orders, 1):           0,
		"ckpt_lag_seconds" + lbl(b.uri, clicks, 0):           60, // 29min − 28min
		"ckpt_committed_offset" + lbl(a.uri, orders, 0):      20,
		"ckpt_inflight_offset" + lbl(a.uri, orders, 0):       45,
		"ckpt_committed_offset" + lbl(b.uri, clicks, 0):      28,
		"ckpt_latest_offset" + lbl(a.uri, orders, 0):         50,
		"ckpt_latest_offset" + lbl(b.uri, clicks, 0):         30,
		"ckpt_log_start_offset" + lbl(b.uri, clicks, 0):      0,
		`ckpt_last_commit_batch{checkpoint="` + a.uri + `"}`: 0,
		`ckpt_last_commit_batch{checkpoint="` + b.uri + `"}`: 4,
		`ckpt_inflight_batch{checkpoint="` + a.uri + `"}`:    1,
		`ckpt_lag_records_total{checkpoint="` + a.uri + `"}`: 30,
		`ckpt_lag_records_total{checkpoint="` + b.uri + `"}`: 2,
	}
	for k, v := range want {
		got, ok := series[k]
		if !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := series[`ckpt_inflight_batch{checkpoint="`+b.uri+`"}`]; ok {
		t.Error("b has no batch in flight")
	}
	if age, ok := series[`ckpt_last_commit_age_seconds{checkpoint="`+b.uri+`"}`]; !ok || age < 0 || age > 60 {
		t.Errorf("commit age %v %v", age, ok)
	}
	for _, name := range []string{"ckpt_lag_records", "ckpt_lag_seconds", "ckpt_committed_offset", "ckpt_latest_offset", "ckpt_last_commit_batch", "ckpt_last_commit_age_seconds"} {
		if types[name] != "help gauge" {
			t.Errorf("%s: HELP/TYPE %q", name, types[name])
		}
	}

	// Scrapes within the cache TTL reuse the refresh; a new refresh sees new records.
	e.produce(clicks, 0, 3, nil)
	if s2, _ := scrape(t, srv.URL); s2["ckpt_lag_records"+lbl(b.uri, clicks, 0)] != 2 {
		t.Fatalf("cached scrape: %v", s2["ckpt_lag_records"+lbl(b.uri, clicks, 0)])
	}
	c.CacheTTL = 0
	if s3, _ := scrape(t, srv.URL); s3["ckpt_lag_records"+lbl(b.uri, clicks, 0)] != 5 {
		t.Fatalf("fresh scrape: %v", s3["ckpt_lag_records"+lbl(b.uri, clicks, 0)])
	}
}

func TestWriteMetricsEdgeCases(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMetrics(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "# HELP ckpt_up 1 when the last refresh could read the broker, 0 when it could not.\n# TYPE ckpt_up gauge\nckpt_up 0\n" {
		t.Fatalf("broker down:\n%s", buf.String())
	}
	buf.Reset()
	r := &Report{Checkpoints: []CheckpointLag{
		{Checkpoint: "s3://b/a\"b\\c\nd", Error: "boom"},
		{Checkpoint: "x", LagRecords: 12345678, Partitions: []PartitionLag{
			{Topic: "t", Partition: 0, LagRecords: i64(12345678)},
			{Topic: "t", Partition: 0, LagRecords: i64(1)}, // a duplicate series is dropped
		}},
	}}
	if err := WriteMetrics(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`ckpt_checkpoint_up{checkpoint="s3://b/a\"b\\c\nd"} 0`,
		`ckpt_lag_records{checkpoint="x",source="0",topic="t",partition="0"} 12345678` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in\n%s", want, out)
		}
	}
	if strings.Count(out, "ckpt_lag_records{") != 1 {
		t.Fatalf("duplicate series kept:\n%s", out)
	}
}

// The mirrored consumer group, read back with a franz-go admin client, holds the checkpoint's
// committed offsets, and follows new commits.
func TestCommitGroup(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("in", 3)
	for p := range int32(3) {
		e.produce(topic, p, 30, nil)
	}
	ck := newCkpt(t, "q").offsets(0, `{"`+topic+`":{"0":10,"1":11,"2":12}}`).commit(0).offsets(1, `{"`+topic+`":{"0":20,"1":21,"2":22}}`)
	group := topic + "-mirror"
	c := e.collector(ck.uri)
	c.CommitGroup, c.NoTimeLag = group, true

	fetch := func() map[int32]int64 {
		t.Helper()
		resp, err := kadm.NewClient(e.cl).FetchOffsets(e.ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Error(); err != nil {
			t.Fatal(err)
		}
		got := map[int32]int64{}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic != topic || o.Metadata != MirrorMetadata {
				t.Fatalf("offset %+v", o)
			}
			got[o.Partition] = o.At
		})
		return got
	}
	check := func(rep *Report, committed int, want map[int32]int64) {
		t.Helper()
		if g := rep.CommitGroup; g == nil || g.Group != group || g.Error != "" || g.Partitions != 3 || g.Committed != committed {
			t.Fatalf("mirror %+v", rep.CommitGroup)
		}
		got := fetch()
		if len(got) != len(want) {
			t.Fatalf("group offsets %v, want %v", got, want)
		}
		for p, o := range want {
			if got[p] != o {
				t.Fatalf("group offsets %v, want %v", got, want)
			}
		}
	}
	rep, err := c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The committed offsets (offsets/0), not the in-flight batch's.
	check(rep, 3, map[int32]int64{0: 10, 1: 11, 2: 12})

	// Unchanged: nothing written.
	rep, err = c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(rep, 0, map[int32]int64{0: 10, 1: 11, 2: 12})

	// Batch 1 commits: the group follows.
	ck.commit(1)
	rep, err = c.Collect(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(rep, 3, map[int32]int64{0: 20, 1: 21, 2: 22})

	// The group's lag, as kafka-consumer-groups computes it, equals ckpt's.
	lags, err := kadm.NewClient(e.cl).Lag(e.ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	lags.Each(func(l kadm.DescribedGroupLag) { total += l.Lag.Total() })
	if total != rep.Checkpoints[0].LagRecords || total != 3*30-(20+21+22) {
		t.Fatalf("group lag %d, ckpt lag %d", total, rep.Checkpoints[0].LagRecords)
	}
}
