package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate/brokertest"
)

func brokerOptions(e *brokertest.Env, c *brokertest.Checkpoint, io *iostreams.IOStreams) *Options {
	return &Options{
		IO: io,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Checkpoint:     c.Dir,
		FailOn:         doctor.Error,
		Output:         render.FormatJSON,
		Broker:         cli.BrokerFlags{BootstrapServers: e.Addr, Timeout: brokertest.Timeout},
		FailOnDataLoss: true,
	}
}

// Every scene gives its doctor codes, records and Spark's message, through runDoctor.
func TestRunDoctorBroker(t *testing.T) {
	for _, scene := range brokertest.Scenes {
		t.Run(scene, func(t *testing.T) {
			e := brokertest.New(t)
			c, _, want := brokertest.Scene(e, scene)
			io, _, out, _ := iostreams.Test()
			err := runDoctor(context.Background(), brokerOptions(e, c, io))
			if exitcode.Code(err) != exitcode.Findings {
				t.Fatalf("exit %d (%v), want 3", exitcode.Code(err), err)
			}
			var rep doctor.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var got []string
			var lost []int64
			for _, f := range rep.Findings {
				if f.Kafka == nil {
					continue
				}
				name := fmt.Sprintf("%s-%d", f.Kafka.Topic, f.Kafka.Partition)
				if f.Kafka.Partition < 0 {
					name = f.Kafka.Topic
				}
				got = append(got, fmt.Sprintf("%s %s batch %d", f.Code, name, *f.Batch))
				lost = append(lost, f.Kafka.Records)
			}
			if fmt.Sprint(got) != fmt.Sprint(want.Codes) || fmt.Sprint(lost) != fmt.Sprint(want.Lost) {
				t.Fatalf("findings %q records %v\nwant %q records %v", got, lost, want.Codes, want.Lost)
			}
			if v := rep.Restart.Verdict(); v != "Restart will FAIL: "+want.Spark+func() string {
				if strings.HasPrefix(want.Spark, "java.") {
					return " " // the instruction text follows on the next line
				}
				return ""
			}() {
				t.Fatalf("verdict %q\nwant %q", v, want.Spark)
			}
		})
	}
}

// The table shows Spark's message, what failOnDataLoss=false does and the command to preview it;
// --fail-on-data-loss=false keeps the error (data is lost) but the restart runs.
func TestRunDoctorBrokerTable(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	io, _, out, _ := iostreams.Test()
	opts := brokerOptions(e, c, io)
	opts.Output = render.FormatTable
	err := runDoctor(context.Background(), opts)
	if exitcode.Code(err) != exitcode.Findings {
		t.Fatalf("exit %d (%v)", exitcode.Code(err), err)
	}
	for _, want := range []string{
		"✗ 1 error, 1 note. Restart will FAIL: java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + topic + "-0).",
		"error    offsets-out-of-range  kafka:" + topic + "-0\n  re-run of batch 2: " + topic + "-0: the re-run reads offsets [5, 15) but the log starts at 8: 3 of them were deleted",
		"  Spark: java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + topic + "-0). \n" +
			"         Some data may have been lost because they are not available in Kafka any more; either the\n",
		"  failOnDataLoss=false: Spark logs the message as a warning, skips offsets [5, 8) (3 records) and reads [8, 15).",
		"  Run:   ckpt replay " + c.Dir + " --bootstrap-server " + e.Addr + " --fail-on-data-loss=false\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	io, _, out, _ = iostreams.Test()
	opts = brokerOptions(e, c, io)
	opts.Output, opts.FailOnDataLoss = render.FormatTable, false
	err = runDoctor(context.Background(), opts)
	if exitcode.Code(err) != exitcode.Findings || !strings.Contains(out.String(), "Restart re-runs batch 2, then continues at batch 3") ||
		!strings.Contains(out.String(), "  Spark: WARN KafkaDataConsumer: Cannot fetch offset 5 (GroupId: ") ||
		!strings.Contains(out.String(), "  failOnDataLoss=false (as given): Spark logs the message as a warning") {
		t.Fatalf("exit %d, table:\n%s", exitcode.Code(err), out)
	}

	// An unreachable broker is ckpt's failure (exit 1), with a message naming it.
	io, _, _, _ = iostreams.Test()
	opts = brokerOptions(e, c, io)
	opts.Broker.BootstrapServers, opts.Broker.Timeout = "127.0.0.1:1", 500e6
	if err := runDoctor(context.Background(), opts); exitcode.Code(err) != exitcode.Failure || !strings.Contains(err.Error(), "refused the connection") {
		t.Fatalf("unreachable broker: %v", err)
	}
}

// Without --bootstrap-server the same checkpoint is no "no problems found" without a word: the
// summary says the Kafka offsets were not checked and -o json lists it (it once printed a bare
// "✓ no problems found" and exit 0, while the broker made the restart fail).
func TestRunDoctorSaysKafkaNotChecked(t *testing.T) {
	e := brokertest.New(t)
	c, _, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	io, _, out, _ := iostreams.Test()
	opts := brokerOptions(e, c, io)
	opts.Broker = cli.BrokerFlags{}
	opts.Output = ""
	if err := runDoctor(context.Background(), opts); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "✓ no problems found") || !strings.Contains(first, "; Kafka offsets not checked: pass --bootstrap-server.") {
		t.Errorf("summary %q", first)
	}
	io, _, out, _ = iostreams.Test()
	opts = brokerOptions(e, c, io)
	opts.Broker = cli.BrokerFlags{}
	if err := runDoctor(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var rep doctor.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.NotChecked) == 0 || rep.NotChecked[0].Check != doctor.CheckKafkaOffsets {
		t.Errorf("notChecked %+v", rep.NotChecked)
	}
	// With the broker the check ran: it is not listed.
	io, _, out, _ = iostreams.Test()
	_ = runDoctor(context.Background(), brokerOptions(e, c, io))
	rep = doctor.Report{}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, n := range rep.NotChecked {
		if n.Check == doctor.CheckKafkaOffsets {
			t.Errorf("kafka-offsets listed as not checked with the broker: %+v", rep.NotChecked)
		}
	}
}
