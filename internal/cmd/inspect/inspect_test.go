package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

func testEnv() *cli.Env {
	ios, _, _, _ := iostreams.Test()
	return &cli.Env{IO: ios, Version: "test"}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want Options
	}{
		{args: []string{"ck"}, want: Options{Location: "ck", Output: render.FormatTable}},
		{args: []string{"ck", "-o", "json", "--batches", "--parallelism", "4"}, want: Options{Location: "ck", Output: render.FormatJSON, Batches: true, Parallelism: 4}},
		{args: []string{"ck", "--batch", "7"}, want: Options{Location: "ck", Output: render.FormatTable, Batch: 7, HasBatch: true}},
		{args: []string{"ck", "--batch", "0"}, want: Options{Location: "ck", Output: render.FormatTable, Batch: 0, HasBatch: true}},
		{args: []string{"ck", "--bootstrap-server", "k:9092", "--kafka-option", "kafka.client.id=x"},
			want: Options{Location: "ck", Output: render.FormatTable, Broker: cli.BrokerFlags{BootstrapServers: "k:9092", Options: []string{"kafka.client.id=x"}}}},
		{args: []string{"ck", "--batches", "--from", "3", "--to", "9", "--last", "2"},
			want: Options{Location: "ck", Output: render.FormatTable, Batches: true, From: 3, To: 9, HasFrom: true, HasTo: true, Last: 2}},
		{args: []string{"ck", "--batches", "--from", "0"}, want: Options{Location: "ck", Output: render.FormatTable, Batches: true, HasFrom: true}},
		{args: []string{"ck", "--from", "3"}, code: exitcode.Usage},
		{args: []string{"ck", "--last", "3"}, code: exitcode.Usage},
		{args: []string{"ck", "--batches", "--from", "9", "--to", "3"}, code: exitcode.Usage},
		{args: []string{"ck", "--batches", "--to", "-1"}, code: exitcode.Usage},
		{args: []string{"ck", "--batches", "--last", "0"}, code: exitcode.Usage},
		{args: []string{"ck", "--bootstrap-server", "k:9092", "--batches"}, code: exitcode.Usage},
		{args: []string{"ck", "--batch", "1", "--batches"}, code: exitcode.Usage},
		{args: []string{"ck", "--batch", "-1"}, code: exitcode.Usage},
		{args: []string{"ck", "-o", "yaml"}, code: exitcode.Usage},
		{args: []string{}, code: exitcode.Usage},
		{args: []string{"a", "b"}, code: exitcode.Usage},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *Options
			cmd := NewCmd(testEnv(), func(o *Options) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if c := exitcode.Code(err); c != tc.code {
				t.Fatalf("exit code %d (%v), want %d", c, err, tc.code)
			}
			if tc.code != 0 {
				return
			}
			got.IO, got.OpenStore = nil, nil
			if tc.want.Broker.Timeout == 0 {
				tc.want.Broker.Timeout = topicstate.DefaultTimeout
			}
			if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("options = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	cmd := NewCmd(testEnv(), nil)
	for _, want := range []string{"Exit codes:", "0  inspected", "1  the location could not be read", "2  usage error"} {
		if !strings.Contains(cmd.Long, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// run runs runInspect over an in-memory store holding files.
func run(t *testing.T, files map[string]string, mod func(*Options)) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	s := storage.NewMem()
	for p, c := range files {
		if err := s.WriteFile(context.Background(), p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	opts := &Options{
		IO:        ios,
		OpenStore: func(context.Context, string) (storage.Store, error) { return s, nil },
		Location:  "mem://ck",
		Output:    render.FormatTable,
	}
	if mod != nil {
		mod(opts)
	}
	err := runInspect(context.Background(), opts)
	return out.String(), err
}

var kafkaFiles = map[string]string{
	"metadata":    `{"id":"11111111-2222-3333-4444-555555555555"}`,
	"offsets/0":   "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1719290664278,\"conf\":{\"spark.sql.shuffle.partitions\":\"5\"}}\n{\"orders\":{\"0\":10,\"1\":5}}",
	"offsets/1":   "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1719290665278,\"conf\":{\"spark.sql.shuffle.partitions\":\"5\"}}\n{\"orders\":{\"0\":15,\"1\":12}}",
	"commits/0":   "v1\n{\"nextBatchWatermarkMs\":0}",
	"sources/0/0": "\x00v1\n{\"orders\":{\"0\":0,\"1\":0}}",
}

func TestRunSummaryTable(t *testing.T) {
	out, err := run(t, kafkaFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Query id:       11111111-2222-3333-4444-555555555555",
		"Offsets:        0-1 (2 files, latest 1)",
		"Latest batch:   1 (not committed: a restart re-runs it)",
		"Batch time:     2024-06-25T04:44:25.278Z",
		"spark.sql.shuffle.partitions  5",
		"0       kafka  topics orders (2); 2 partitions; initial offsets sources/0/0",
		"0       orders  0          15           0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunJSON(t *testing.T) {
	out, err := run(t, kafkaFiles, func(o *Options) { o.Output = render.FormatJSON })
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m["kind"] != "checkpoint" || m["queryId"] != "11111111-2222-3333-4444-555555555555" {
		t.Errorf("json = %s", out)
	}
}

func TestRunBatches(t *testing.T) {
	out, err := run(t, kafkaFiles, func(o *Options) { o.Batches = true })
	if err != nil {
		t.Fatal(err)
	}
	want := `Kafka end offsets (+records read) of orders
BATCH  COMMITTED  TIME                      WATERMARK  P0        P1       RECORDS
0      yes        2024-06-25T04:44:24.278Z  0          10 (+10)  5 (+5)   15
1      no         2024-06-25T04:44:25.278Z  0          15 (+5)   12 (+7)  12
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestRunErrors(t *testing.T) {
	_, err := run(t, map[string]string{"x": "1"}, nil)
	if exitcode.Code(err) != exitcode.Failure || !strings.Contains(err.Error(), "no checkpoint at mem://") {
		t.Errorf("not a checkpoint: %v", err)
	}
	_, err = run(t, kafkaFiles, func(o *Options) { o.Batch, o.HasBatch = 9, true })
	if exitcode.Code(err) != exitcode.Failure || err.Error() != "batch 9 not found: offsets/ has 0-1, commits/ has 0" {
		t.Errorf("missing batch: %v", err)
	}
	sink := map[string]string{"_spark_metadata/0": "v1\n" + `{"path":"/a","size":1,"isDir":false,"modificationTime":1,"blockReplication":1,"blockSize":1,"action":"add"}`}
	_, err = run(t, sink, func(o *Options) { o.Batches = true })
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("--batches on a sink log: %v", err)
	}
}

// TestRunTerminal renders every view as a terminal would (bordered, coloured tables).
func TestRunTerminal(t *testing.T) {
	files := map[string]string{}
	for k, v := range kafkaFiles {
		files[k] = v
	}
	files["offsets/2"] = "v1\n{oops"
	files["state/0/0/1.delta"] = "d"
	files["offsets/.5.crc"] = "c"
	for _, mod := range []func(*Options){
		nil,
		func(o *Options) { o.Batches = true },
		func(o *Options) { o.Batch, o.HasBatch = 1, true },
	} {
		out, err := run(t, files, func(o *Options) {
			o.IO.SetStdoutTTY(true)
			o.IO.SetColorEnabled(true)
			if mod != nil {
				mod(o)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "╭") || !strings.Contains(out, "\x1b[") {
			t.Errorf("not a styled table:\n%s", out)
		}
	}
}

// TestBatchesJSONStreamed: the streamed --batches -o json is byte for byte what render.JSON prints
// for inspect.Batches' document, with problems, commit-only ids, gaps and a range selection.
func TestBatchesJSONStreamed(t *testing.T) {
	files := map[string]string{}
	for k, v := range kafkaFiles {
		files[k] = v
	}
	files["offsets/2"] = "v1\n{oops"
	files["offsets/4"] = strings.Replace(kafkaFiles["offsets/1"], `"0":15`, `"0":30`, 1)
	files["commits/1"] = "v1\n{}"
	files["commits/3"] = "v1\n{}"
	files["commits/7"] = "v1\n{}"
	for _, sel := range []func(*Options){
		nil,
		func(o *Options) { o.Last = 3 },
		func(o *Options) { o.From, o.HasFrom = 1, true },
		func(o *Options) { o.From, o.HasFrom, o.To, o.HasTo = 2, true, 3, true },
		func(o *Options) { o.From, o.HasFrom, o.To, o.HasTo = 5, true, 6, true }, // nothing there
	} {
		got, err := run(t, files, func(o *Options) {
			o.Batches, o.Output = true, render.FormatJSON
			if sel != nil {
				sel(o)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		var opts Options
		if sel != nil {
			sel(&opts)
		}
		s := storage.NewMem()
		for p, c := range files {
			if err := s.WriteFile(context.Background(), p, []byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		doc, err := inspect.Batches(context.Background(), s, batchesOptions(&opts, nil))
		if err != nil {
			t.Fatal(err)
		}
		doc.URI = "mem://ck"
		var want bytes.Buffer
		if err := render.JSON(&want, doc); err != nil {
			t.Fatal(err)
		}
		// Each run has its own anonymous mem store.
		got = regexp.MustCompile(`mem://anon-\d+`).ReplaceAllString(got, "mem://ck")
		if got != want.String() {
			t.Errorf("streamed JSON differs:\n got %s\nwant %s", got, want.String())
		}
	}
}

// A source file holding a window-title sequence and a screen clear, and a leftover whose name
// holds one: inspect prints them escaped (before, the terminal received them raw).
func TestRunEscapesFileStrings(t *testing.T) {
	files := map[string]string{}
	for k, v := range kafkaFiles {
		files[k] = v
	}
	files["sources/0/0"] = "v1\n{\"path\":\"\x1b]0;pwned\x07\x1b[2Jfile\",\"timestamp\":1,\"batchId\":0}\n"
	files["offsets/.7.\x1b[2Jx.tmp"] = ""
	for _, mod := range []func(*Options){nil, func(o *Options) { o.Batches = true }, func(o *Options) { o.Batch, o.HasBatch = 0, true }} {
		out, err := run(t, files, mod)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("raw control characters in:\n%q", out)
		}
	}
	out, _ := run(t, files, nil)
	if !strings.Contains(out, `offsets/.7.\x1b[2Jx.tmp`) || !strings.Contains(out, `\x1b]0;pwned\x07\x1b[2Jfile`) {
		t.Errorf("escaped strings missing:\n%s", out)
	}
}

// inspect --batches at 80 columns with many partitions keeps BATCH and TIME whole (TIME was cut
// to "2026-12-0…") and drops columns by priority, saying which.
func TestBatchesAt80Columns(t *testing.T) {
	files := map[string]string{"metadata": kafkaFiles["metadata"]}
	parts := func(base int) string {
		var p []string
		for i := range 6 {
			p = append(p, fmt.Sprintf(`"%d":%d`, i, base+i*100000003))
		}
		return strings.Join(p, ",")
	}
	for b := range 3 {
		files[fmt.Sprintf("offsets/%d", b)] = fmt.Sprintf("v1\n{\"batchWatermarkMs\":1719290664000,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"orders\":{%s}}", 1719290664278+b*1000, parts(b*100))
		files[fmt.Sprintf("commits/%d", b)] = "v1\n{\"nextBatchWatermarkMs\":0}"
	}
	out, err := run(t, files, func(o *Options) {
		o.Batches = true
		o.IO.SetStdoutTTY(true)
		o.IO.SetTerminalWidth(80)
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, render.Ellipsis) || !strings.Contains(out, "2024-06-25T04:44:24.278Z") || !strings.Contains(out, "hidden to fit 80 columns") {
		t.Errorf("at 80 columns:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if w := lipgloss.Width(line); w > 80 {
			t.Errorf("line of %d cells:\n%s", w, out)
		}
	}
}
