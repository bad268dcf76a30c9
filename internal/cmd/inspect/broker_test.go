package inspect

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate/brokertest"
)

func brokerInspect(t *testing.T, e *brokertest.Env, dir string, output render.Format) (string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	err := runInspect(context.Background(), &Options{
		IO: ios,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Location: dir,
		Output:   output,
		Broker:   cli.BrokerFlags{BootstrapServers: e.Addr, Timeout: brokertest.Timeout},
	})
	return out.String(), err
}

// The summary puts each partition's log start and end next to the checkpoint's offsets, with
// the lag and the problem the next batch meets.
func TestInspectBroker(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	out, err := brokerInspect(t, e, c.Dir, render.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kind   string `json:"kind"`
		Broker struct {
			BootstrapServers string `json:"bootstrapServers"`
			lag.CheckpointLag
		} `json:"broker"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b := doc.Broker
	if doc.Kind != "checkpoint" || b.BootstrapServers != e.Addr || b.LagRecords != 30 || *b.LastCommitBatch != 1 || *b.InFlightBatch != 2 || len(b.Partitions) != 2 {
		t.Fatalf("broker view %+v\n%s", b, out)
	}
	p0, p1 := b.Partitions[0], b.Partitions[1]
	if *p0.Committed != 5 || *p0.InFlight != 15 || *p0.LogStart != 8 || *p0.Latest != 20 || *p0.LagRecords != 15 || p0.Status != "offsets-out-of-range" ||
		*p1.LogStart != 0 || *p1.LagRecords != 15 || p1.Status != "ok" {
		t.Fatalf("partitions %+v %+v", p0, p1)
	}
	if len(b.Issues) != 1 || b.Issues[0].Records != 3 {
		t.Fatalf("issues %+v", b.Issues)
	}
	// The summary's own fields are all there.
	for _, key := range []string{`"queryId"`, `"offsets"`, `"commits"`, `"latestBatch"`, `"sources"`, `"state"`, `"leftovers"`, `"problems"`} {
		if !strings.Contains(out, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}

	out, err = brokerInspect(t, e, c.Dir, render.FormatTable)
	if err != nil {
		t.Fatal(err)
	}
	out = regexp.MustCompile(` {2,}`).ReplaceAllString(out, "  ")
	for _, want := range []string{
		"Kafka on the broker (" + e.Addr + ")\nSOURCE  TOPIC  PARTITION  COMMITTED  IN-FLIGHT  LOG START  LATEST  LAG  STATUS\n",
		"0  " + topic + "  0  5  15  8  20  15  offsets-out-of-range\n",
		"0  " + topic + "  1  5  12  0  20  15  ok\n",
		"lag: 30 records\n! offsets-out-of-range: " + topic + "-0: the checkpoint is at offset 5 but the log starts at 8: 3 records were deleted",
		"  Spark: Cannot fetch offset 5 (GroupId: spark-kafka-source-<uuid>-<hash>-executor, TopicPartition: " + topic + "-0).\n",
		"What the restart meets and what to do: ckpt doctor " + c.Dir + " --bootstrap-server " + e.Addr,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A missing topic shows as such; a checkpoint whose position cannot be read still inspects; an
// unreachable broker fails.
func TestInspectBrokerEdges(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneTopicMissing)
	out, err := brokerInspect(t, e, c.Dir, render.FormatTable)
	if err != nil || !regexp.MustCompile(`0 +`+topic+` +0 +5 +15 +- +- +- +topic-missing`).MatchString(out) {
		t.Fatalf("%v\n%s", err, out)
	}

	ios, _, _, _ := iostreams.Test()
	opts := &Options{IO: ios, OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
		return storage.Open(ctx, uri, storage.Options{})
	}, Location: c.Dir, Output: render.FormatTable, Broker: cli.BrokerFlags{BootstrapServers: e.Addr, Timeout: brokertest.Timeout}}
	opts.Broker.BootstrapServers, opts.Broker.Timeout = "127.0.0.1:1", 500e6
	if err := runInspect(context.Background(), opts); exitcode.Code(err) != exitcode.Failure || !strings.Contains(err.Error(), "refused the connection") {
		t.Fatalf("unreachable: %v", err)
	}

	c.Write("commits/2", "v1\n{}").Write("offsets/2", "") // the latest commit's offsets are corrupt
	out, err = brokerInspect(t, e, c.Dir, render.FormatTable)
	if err != nil || !strings.Contains(out, "cannot compare with the broker: ") {
		t.Fatalf("%v\n%s", err, out)
	}
}
