package lag

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func testEnv() (*cli.Env, *bytes.Buffer) {
	io, _, out, _ := iostreams.Test()
	return &cli.Env{IO: io, Now: time.Now, Getenv: func(string) string { return "" }}, out
}

func TestFlags(t *testing.T) {
	env, _ := testEnv()
	var got *Options
	cmd := NewCmd(env, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"a", "s3://b/c", "--bootstrap-server", "k:9092", "--kafka-option", "kafka.security.protocol=SSL", "-o", "json", "--watch", "--interval", "2s", "--no-time-lag"})
	cmd.SetOut(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Locations, ",") != "a,s3://b/c" || got.Broker.BootstrapServers != "k:9092" || got.Broker.Options[0] != "kafka.security.protocol=SSL" ||
		got.Output != render.FormatJSON || !got.Watch || got.Interval != 2*time.Second || !got.NoTimeLag || got.Cache != DefaultCache ||
		got.Broker.Timeout != topicstate.DefaultTimeout {
		t.Fatalf("options %+v", got)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"a"}, "needs the broker: give --bootstrap-server"},
		{[]string{"a", "--bootstrap-server", "k:1", "--serve", ":9", "--watch"}, "--serve and --watch do not go together"},
		{[]string{"a", "b", "--bootstrap-server", "k:1", "--commit-group", "g"}, "give one checkpoint, not 2"},
		{[]string{"a", "--bootstrap-server", "k:1", "--interval", "0s"}, "--interval 0s: must be positive"},
		{[]string{"a", "--bootstrap-server", "k:1", "--serve", "9108"}, "want [HOST]:PORT"},
		{[]string{"a", "--bootstrap-server", "k:1", "-o", "yaml"}, "invalid output format"},
		{[]string{"--bootstrap-server", "k:1"}, "expected at least one checkpoint location"},
	} {
		cmd := NewCmd(env, func(*Options) error { t.Fatalf("%v: ran", tc.args); return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: %v (exit %d), want usage error %q", tc.args, err, exitcode.Code(err), tc.want)
		}
	}
}

// fixture is a broker with topic "<test>-in" (2 partitions, 50 and 10 records, one second
// apart) and a local checkpoint committed at 30 and 10, with batch 2 in flight.
type fixture struct {
	b     *embedkafka.Broker
	topic string
	dir   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	topic := strings.ReplaceAll(t.Name(), "/", "-") + "-in"
	b, err := embedkafka.Start(ctx, embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: topic, Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	base := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for p, n := range []int{50, 10} {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meta := `{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`
	write("offsets/0", "v1\n"+meta+"\n"+`{"`+topic+`":{"0":5,"1":5}}`)
	write("commits/0", "v1\n{\"nextBatchWatermarkMs\":0}")
	write("offsets/1", "v1\n"+meta+"\n"+`{"`+topic+`":{"1":10,"0":30}}`)
	write("commits/1", "v1\n{\"nextBatchWatermarkMs\":0}")
	write("offsets/2", "v1\n"+meta+"\n"+`{"`+topic+`":{"0":45,"1":10}}`)
	return &fixture{b: b, topic: topic, dir: dir}
}

func (f *fixture) options(io *iostreams.IOStreams) *Options {
	return &Options{
		IO: io,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Locations: []string{f.dir},
		Broker:    cli.BrokerFlags{BootstrapServers: f.b.Addr(), Timeout: 20 * time.Second},
		Output:    render.FormatTable,
		Interval:  DefaultInterval,
		Cache:     DefaultCache,
	}
}

func TestRunTableAndJSON(t *testing.T) {
	f := newFixture(t)
	ios, _, out, _ := iostreams.Test()
	opts := f.options(ios)
	if err := runLag(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], f.dir+"  last commit: batch 1, ") || !strings.HasSuffix(lines[0], " ago; batch 2 in flight; lag: 20 records, 19s") {
		t.Fatalf("title %q", lines[0])
	}
	table := strings.Join(lines[1:], "\n")
	want := "SOURCE  TOPIC" + strings.Repeat(" ", len(f.topic)-3) + "PARTITION  COMMITTED  IN-FLIGHT  LATEST  LAG  LAG-TIME  STATUS\n" +
		"0       " + f.topic + "  0          30         45         50      20   19s       ok\n" +
		"0       " + f.topic + "  1          10         10         10      0    0s        ok\n"
	if table != want {
		t.Fatalf("table\n%s\nwant\n%s", table, want)
	}

	out.Reset()
	opts.Output = render.FormatJSON
	if err := runLag(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var rep lag.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c := rep.Checkpoints[0]
	if c.LagRecords != 20 || *c.LagSeconds != 19 || *c.LastCommitBatch != 1 || *c.InFlightBatch != 2 || len(c.Partitions) != 2 || *c.Partitions[0].Committed != 30 {
		t.Fatalf("report %+v", c)
	}

	// An unreadable checkpoint is reported, and the exit status is 1.
	out.Reset()
	opts.Output = render.FormatTable
	opts.Locations = []string{f.dir, filepath.Join(f.dir, "offsets", "0")}
	err := runLag(context.Background(), opts)
	if exitcode.Code(err) != exitcode.Failure || !strings.Contains(out.String(), "offsets/0: error: ") {
		t.Fatalf("err %v, output\n%s", err, out)
	}
}

// The group mirror, from the command: the group holds the committed offsets.
func TestRunCommitGroup(t *testing.T) {
	f := newFixture(t)
	ios, _, out, _ := iostreams.Test()
	opts := f.options(ios)
	opts.CommitGroup = f.topic + "-group"
	if err := runLag(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "consumer group "+opts.CommitGroup+": 2 partitions mirrored (2 updated now). Spark never reads this group") {
		t.Fatalf("output\n%s", out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), opts.CommitGroup)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range []int64{30, 10} {
		if o, ok := resp.Lookup(f.topic, int32(p)); !ok || o.At != want {
			t.Fatalf("partition %d: %+v, want %d", p, o, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while runLag writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestWatchAppendsWhenPiped(t *testing.T) {
	f := newFixture(t)
	for _, format := range []render.Format{render.FormatTable, render.FormatJSON} {
		ios, _, _, _ := iostreams.Test()
		out := &syncBuffer{}
		ios.Out = out
		opts := f.options(ios)
		opts.Watch, opts.Interval, opts.Output, opts.NoTimeLag = true, 20*time.Millisecond, format, true
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runLag(ctx, opts) }()
		marker := "Every 20ms: "
		if format == render.FormatJSON {
			marker = `{"time":`
		}
		deadline := time.Now().Add(20 * time.Second)
		for strings.Count(out.String(), marker) < 3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s := out.String()
		if strings.Count(s, marker) < 3 || strings.Contains(s, "\x1b[2J") {
			t.Fatalf("%s output\n%s", format, s)
		}
		if format == render.FormatJSON {
			for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
				var rep lag.Report
				if err := json.Unmarshal([]byte(line), &rep); err != nil || rep.Checkpoints[0].LagRecords != 20 {
					t.Fatalf("line %q: %v", line, err)
				}
			}
		}
	}
}

func TestServe(t *testing.T) {
	f := newFixture(t)
	ios, _, out, _ := iostreams.Test()
	opts := f.options(ios)
	opts.Serve = "127.0.0.1:0"
	ready := make(chan string, 1)
	opts.ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runLag(ctx, opts) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("no server")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `ckpt_lag_records{checkpoint="` + f.dir + `",source="0",topic="` + f.topic + `",partition="0"} 20` + "\n"
	if !strings.Contains(string(body), want) || !strings.Contains(string(body), "# TYPE ckpt_lag_seconds gauge\n") {
		t.Fatalf("metrics\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "serving metrics on http://"+addr+"/metrics\n") {
		t.Fatalf("output %q", out)
	}
}

func TestPrintReport(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	age, ls := 125.4, 0.85
	rep := &lag.Report{Checkpoints: []lag.CheckpointLag{
		{Checkpoint: "ck", LastCommitBatch: ptr(int64(7)), LastCommitAgeSeconds: &age, LagRecords: 3, LagSeconds: &ls,
			Partitions: []lag.PartitionLag{
				{Topic: "t", Partition: 0, Committed: ptr(int64(12)), LogStart: ptr(int64(15)), Latest: ptr(int64(15)), LagRecords: ptr(int64(3)), LagSeconds: &ls, Status: recovery.ReasonOffsetsOutOfRange},
				{Topic: "t", Partition: 1, Status: recovery.ReasonPartitionsRemoved, Committed: ptr(int64(4))},
			},
			Issues: []recovery.BrokerIssue{{Code: recovery.ReasonOffsetsOutOfRange, Message: "t-0: the log starts at 15", DataLoss: true, SparkMessage: "Cannot fetch offset 12 (…). \nSome data may have been lost"}},
		},
		{Checkpoint: "empty"},
		{Checkpoint: "bad", Error: "no such thing"},
	}}
	printReport(render.New(ios), rep)
	want := `ck  last commit: batch 7, 2m5s ago; lag: 3 records, 850ms
SOURCE  TOPIC  PARTITION  COMMITTED  IN-FLIGHT  LATEST  LAG  LAG-TIME  STATUS
0       t      0          12         -          15      3    850ms     offsets-out-of-range
0       t      1          4          -          -       -    -         partitions-removed
! offsets-out-of-range: t-0: the log starts at 15
  Spark: Cannot fetch offset 12 (…).

empty  no commit yet
no Kafka source: the checkpoint has no batch yet, or its sources are not Kafka

bad: error: no such thing
`
	if out.String() != want {
		t.Fatalf("output\n%s\nwant\n%s", out, want)
	}
}

func ptr[T any](v T) *T { return &v }

// A checkpoint whose restart fails is no "ok" lag: batch 2 in flight lost partition 1 from its
// end offsets, so its re-run fails (Set(<topic>-1) are gone). Every partition says so, the
// verdict follows the table and the exit status is 3; it once showed "ok" twice and exit 0.
func TestRunRestartFails(t *testing.T) {
	f := newFixture(t)
	meta := `{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`
	if err := os.WriteFile(filepath.Join(f.dir, "offsets", "2"), []byte("v1\n"+meta+"\n"+`{"`+f.topic+`":{"0":45}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	opts := f.options(ios)
	err := runLag(context.Background(), opts)
	if exitcode.Code(err) != exitcode.Findings {
		t.Fatalf("exit %d (%v), want 3\n%s", exitcode.Code(err), err, out)
	}
	if strings.Contains(out.String(), " ok\n") || !strings.Contains(out.String(), "restart-fails") ||
		!strings.Contains(out.String(), "Restart will FAIL: java.lang.IllegalStateException: Set("+f.topic+"-1) are gone") {
		t.Fatalf("output\n%s", out)
	}
	out.Reset()
	opts.Output = render.FormatJSON
	_ = runLag(context.Background(), opts)
	var rep lag.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c := rep.Checkpoints[0]
	if c.Restart == nil || !c.Restart.Fails || c.Restart.Reason != "kafka-range-data-loss" {
		t.Fatalf("restart %+v", c.Restart)
	}
	for _, p := range c.Partitions {
		if p.Status != lag.StatusRestartFails {
			t.Errorf("partition %d: status %s", p.Partition, p.Status)
		}
	}
}

// At 80 columns the lag table drops columns by priority instead of cutting its headers and
// statuses (it printed "PARTI… COMMI…" and "parti…"), says which it hid, and -o wide keeps all.
func TestPrintReportAt80Columns(t *testing.T) {
	ls := 0.85
	rep := &lag.Report{Checkpoints: []lag.CheckpointLag{{Checkpoint: "/data/checkpoints/orders", LastCommitBatch: ptr(int64(7)), LagRecords: 3, LagSeconds: &ls,
		Partitions: []lag.PartitionLag{
			{Topic: "orders-eu-west", Partition: 0, Committed: ptr(int64(1200345)), InFlight: ptr(int64(1200400)), Latest: ptr(int64(1200348)), LagRecords: ptr(int64(3)), LagSeconds: &ls, Status: recovery.ReasonOffsetsOutOfRange},
			{Topic: "orders-eu-west", Partition: 1, Status: recovery.ReasonPartitionsRemoved, Committed: ptr(int64(4))},
		}}}}
	for _, wide := range []bool{false, true} {
		ios, _, out, _ := iostreams.Test()
		ios.SetStdoutTTY(true)
		ios.SetTerminalWidth(80)
		ios.SetWide(wide)
		printReport(render.New(ios), rep)
		got := out.String()
		if strings.Contains(got, render.Ellipsis) {
			t.Errorf("wide=%v: a word was cut:\n%s", wide, got)
		}
		for _, w := range []string{"TOPIC", "PARTITION", "LAG", "STATUS", "offsets-out-of-range", "partitions-removed"} {
			if !strings.Contains(got, w) {
				t.Errorf("wide=%v: %q missing:\n%s", wide, w, got)
			}
		}
		for _, line := range strings.Split(got, "\n") {
			if w := lipgloss.Width(line); !wide && w > 80 {
				t.Errorf("line of %d cells:\n%s", w, got)
			}
		}
		if hid := strings.Contains(got, "-o wide shows them"); hid == wide || strings.Contains(got, "│ IN-FLIGHT") != wide {
			t.Errorf("wide=%v: columns hidden or not as expected:\n%s", wide, got)
		}
	}
}

// One record of lag, one partition mirrored and one corrupt commit read in the singular: before,
// "lag: 1 records" and "1 partitions mirrored".
func TestPrintReportSingular(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	rep := &lag.Report{
		Checkpoints: []lag.CheckpointLag{{Checkpoint: "ck", LastCommitBatch: ptr(int64(7)), LagRecords: 1, CorruptCommits: []lag.CommitProblem{{}},
			Partitions: []lag.PartitionLag{{Topic: "t", Committed: ptr(int64(4)), Latest: ptr(int64(5)), LagRecords: ptr(int64(1))}}}},
		CommitGroup: &lag.GroupMirror{Group: "g", Partitions: 1, Committed: 1},
	}
	printReport(render.New(ios), rep)
	for _, want := range []string{"lag: 1 record", "1 newer commit file corrupt", "g: 1 partition mirrored"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, bad := range []string{"1 records", "1 partitions", "file(s)"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("%q in\n%s", bad, out)
		}
	}
}
