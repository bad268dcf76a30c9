package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
	"github.com/ckpt-dev/ckpt/internal/topicstate/brokertest"
)

func brokerRun(t *testing.T, e *brokertest.Env, c *brokertest.Checkpoint, mutate func(*Options)) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	opts := &Options{
		IO: ios,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Location:       c.Dir,
		Output:         render.FormatJSON,
		Broker:         cli.BrokerFlags{BootstrapServers: e.Addr, Timeout: brokertest.Timeout},
		FailOnDataLoss: true,
	}
	if mutate != nil {
		mutate(opts)
	}
	err := runReplay(context.Background(), opts)
	return out.String(), err
}

// jsonOut is the part of the JSON output the tests read.
type jsonOut struct {
	Outcome   string   `json:"outcome"`
	Error     *string  `json:"error"`
	Exception string   `json:"exception"`
	Warnings  []string `json:"warnings"`
	Kafka     []struct {
		Partition     int32  `json:"partition"`
		Records       *int64 `json:"records"`
		BrokerRecords *int64 `json:"brokerRecords"`
		AgedOut       *int64 `json:"agedOut"`
		BeyondEnd     *int64 `json:"beyondEnd"`
		Exact         bool   `json:"exact"`
	} `json:"kafka"`
	Broker *struct {
		FailOnDataLoss bool                    `json:"failOnDataLoss"`
		PlannerOutcome string                  `json:"plannerOutcome"`
		RerunRecords   *int64                  `json:"rerunRecords"`
		BrokerRecords  *int64                  `json:"brokerRecords"`
		Issues         []recovery.RestartIssue `json:"issues"`
	} `json:"broker"`
}

func parse(t *testing.T, out string) jsonOut {
	t.Helper()
	var j jsonOut
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return j
}

// Every scene: the re-run counted against the broker, and the restart fails with Spark's
// message (failOnDataLoss=true).
func TestRunReplayBroker(t *testing.T) {
	for _, scene := range brokertest.Scenes {
		t.Run(scene, func(t *testing.T) {
			e := brokertest.New(t)
			c, _, want := brokertest.Scene(e, scene)
			out, err := brokerRun(t, e, c, nil)
			if exitcode.Code(err) != exitcode.Findings {
				t.Fatalf("exit %d (%v), want 3\n%s", exitcode.Code(err), err, out)
			}
			j := parse(t, out)
			if len(j.Kafka) != 2 || j.Broker == nil {
				t.Fatalf("output %s", out)
			}
			for p := range 2 {
				k := j.Kafka[p]
				if k.Partition != int32(p) || *k.Records != []int64{10, 7}[p] || *k.BrokerRecords != want.Records[p] || *k.AgedOut != want.AgedOut[p] || *k.BeyondEnd != want.BeyondEnd[p] {
					t.Errorf("partition %d: records %d, broker %d, aged out %d, beyond %d; want broker %d, aged out %d, beyond %d",
						p, *k.Records, *k.BrokerRecords, *k.AgedOut, *k.BeyondEnd, want.Records[p], want.AgedOut[p], want.BeyondEnd[p])
				}
			}
			if *j.Broker.RerunRecords != 17 || *j.Broker.BrokerRecords != want.Records[0]+want.Records[1] || j.Broker.PlannerOutcome != "resume" {
				t.Errorf("broker %+v", j.Broker)
			}
			if j.Outcome != "fail" || strings.TrimSpace(j.Exception+": "+firstLine(*j.Error)) != want.Spark {
				t.Errorf("outcome %s: %s: %q, want %q", j.Outcome, j.Exception, firstLine(*j.Error), want.Spark)
			}
			if len(j.Broker.Issues) != len(want.Codes) {
				t.Errorf("issues %+v, want %v", j.Broker.Issues, want.Codes)
			}
		})
	}
}

// failOnDataLoss=false: the restart runs and Spark only warns; --exact reads the records.
func TestRunReplayBrokerLenientExact(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	out, err := brokerRun(t, e, c, func(o *Options) { o.FailOnDataLoss, o.Exact = false, true })
	if err != nil {
		t.Fatalf("exit %d (%v)\n%s", exitcode.Code(err), err, out)
	}
	j := parse(t, out)
	if j.Outcome != "resume" || j.Error != nil || j.Broker.FailOnDataLoss || !j.Kafka[0].Exact || *j.Kafka[0].BrokerRecords != 7 || *j.Kafka[1].BrokerRecords != 7 {
		t.Fatalf("output %s", out)
	}
	w := j.Warnings[len(j.Warnings)-1]
	if !strings.HasPrefix(w, "Kafka, re-run of batch 2: "+topic+"-0: the re-run reads offsets [5, 15) but the log starts at 8: 3 of them were deleted") ||
		!strings.Contains(w, "Spark logs a warning (failOnDataLoss=false): Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: "+topic+"-0). Spark logs the message as a warning, skips offsets [5, 8)") {
		t.Fatalf("warning %q", w)
	}
	// The JSON keeps every field of recovery.Result.
	for _, key := range []string{`"outcome"`, `"error"`, `"nextBatch"`, `"rerunBatch"`, `"rerunRange"`, `"skipped"`, `"warnings"`, `"watermarkMs"`, `"batchTimestampMs"`, `"mode"`, `"sparkVersion"`, `"latestOffsets"`, `"latestCommit"`, `"start"`, `"end"`, `"records"`} {
		if !strings.Contains(out, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// The table: the verdict with Spark's exception, the ON BROKER column, and the next command.
func TestRunReplayBrokerTable(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	out, err := brokerRun(t, e, c, func(o *Options) { o.Output = render.FormatTable })
	if exitcode.Code(err) != exitcode.Findings {
		t.Fatalf("exit %d (%v)", exitcode.Code(err), err)
	}
	// Column widths depend on the topic name: compare with runs of spaces collapsed.
	squeeze := func(s string) string { return regexp.MustCompile(` {2,}`).ReplaceAllString(s, "  ") }
	out = squeeze(out)
	for _, want := range []string{
		"Restart will FAIL: java.lang.IllegalStateException: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + topic + "-0).",
		"broker:  " + e.Addr + " (failOnDataLoss=true)\n",
		"SOURCE  PARTITION  START  END  RECORDS  ON BROKER  NOTE\n",
		"0  " + topic + "-0  5  15  10  7  3 deleted (the log starts at 8)\n",
		"0  " + topic + "-1  5  12  7  7\n",
		"On the broker: 14 of the 17 records of the re-run still exist on the broker\n",
		"  - Kafka, re-run of batch 2: " + topic + "-0: the re-run reads offsets [5, 15) but the log starts at 8",
		"Next: ckpt doctor " + c.Dir + " --bootstrap-server " + e.Addr + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBrokerFlags(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	env := &cli.Env{IO: ios}
	var got *Options
	cmd := NewCmd(env, func(o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"ck", "--bootstrap-server", "k:9092", "--kafka-option-file", "c.properties", "--fail-on-data-loss=false", "--exact"})
	cmd.SetOut(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Broker.BootstrapServers != "k:9092" || got.Broker.OptionsFile != "c.properties" || got.FailOnDataLoss || !got.Exact || got.Broker.Timeout != topicstate.DefaultTimeout {
		t.Fatalf("options %+v", got)
	}
	for _, args := range [][]string{{"ck", "--exact"}, {"ck", "--fail-on-data-loss=false"}} {
		cmd := NewCmd(env, func(o *Options) error { return nil })
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "need the broker") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// --what-if with a broker: a re-run whose end is not known yet is checked from its start.
func TestRunReplayBrokerWhatIf(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	c.Commit(2) // batch 3 is next; the what-if re-runs it from offsets/2 (15, 12) to an unknown end
	out, err := brokerRun(t, e, c, func(o *Options) { o.WhatIf = "crash-after-offsets" })
	if err != nil {
		t.Fatalf("exit %d (%v)\n%s", exitcode.Code(err), err, out)
	}
	if j := parse(t, out); j.Broker == nil || j.Outcome != "resume" || len(j.Broker.Issues) != 0 {
		t.Fatalf("output %s", out)
	}
	e.DeleteRecords(topic, 0, 18)
	out, err = brokerRun(t, e, c, func(o *Options) { o.WhatIf = "crash-after-offsets" })
	j := parse(t, out)
	if exitcode.Code(err) != exitcode.Findings || len(j.Broker.Issues) != 1 {
		t.Fatalf("exit %d\n%s", exitcode.Code(err), out)
	}
	if is := j.Broker.Issues[0]; is.Code != recovery.ReasonOffsetsOutOfRange || is.Batch != 3 || is.Rerun || is.File != "offsets/2" || is.Records != 3 {
		t.Fatalf("issue %+v", is)
	}
}
