package repair

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/repair"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate/brokertest"
)

// planJSON runs the plan (no --execute) and returns its JSON document.
func planJSON(t *testing.T, e *brokertest.Env, dir string, broker bool, mutate func(*Options)) (document, string) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	opts := &Options{
		IO: ios,
		OpenStore: func(ctx context.Context, uri string) (storage.Store, error) {
			return storage.Open(ctx, uri, storage.Options{})
		},
		Now:        func() time.Time { return now },
		Version:    "test",
		Checkpoint: dir,
		Output:     render.FormatJSON,
	}
	if broker {
		opts.Broker = cli.BrokerFlags{BootstrapServers: e.Addr, Timeout: brokertest.Timeout}
	}
	if mutate != nil {
		mutate(opts)
	}
	if err := runRepair(context.Background(), opts); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var d document
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return d, out.String()
}

// With a broker the predicted re-run counts the records that still exist there, and the plan
// warns about what the restart after it meets on the broker.
func TestRepairBrokerRerunCount(t *testing.T) {
	e := brokertest.New(t)
	c, topic, _ := brokertest.Scene(e, brokertest.SceneDeleteRecords)
	c.Write("offsets/.3.0f8fad5b-d9cb-469f-a165-70867728950e.tmp", "v1")

	plain, _ := planJSON(t, e, c.Dir, false, nil)
	if len(plain.Actions) != 1 || *plain.Replay.RerunRecords != 17 || plain.Replay.BrokerCounts {
		t.Fatalf("without a broker: %+v", plain.Replay)
	}
	d, _ := planJSON(t, e, c.Dir, true, nil)
	if *d.Replay.RerunBatch != 2 || *d.Replay.RerunRecords != 14 || !d.Replay.BrokerCounts {
		t.Fatalf("with the broker: %+v", d.Replay)
	}
	found := false
	for _, w := range d.Warnings {
		if strings.HasPrefix(w, "after the plan, offsets-out-of-range: Kafka, re-run of batch 2: "+topic+"-0: the re-run reads offsets [5, 15) but the log starts at 8") {
			found = true
		}
	}
	if !found {
		t.Fatalf("warnings %q", d.Warnings)
	}
	if got := replayText(d.Replay); got != "batch 2 re-runs (14 records) (Kafka records counted on the broker)" {
		t.Fatalf("replay text %q", got)
	}
}

// A repair that goes back to older offsets replays delivered records: counted on the broker,
// the ones retention deleted are not read again.
func TestRepairBrokerReplayedRecords(t *testing.T) {
	e := brokertest.New(t)
	topic := e.Topic("in", 2)
	e.Produce(topic, 0, 20)
	e.Produce(topic, 1, 20)
	c := brokertest.NewCheckpoint(t, "ck").
		Offsets(0, brokertest.Kafka(topic, 0, 0)).Commit(0).
		Offsets(1, brokertest.Kafka(topic, 5, 5)).Commit(1).
		Offsets(3, brokertest.Kafka(topic, 15, 12)).Commit(3) // offsets/2 is missing
	e.DeleteRecords(topic, 0, 8)

	plain, _ := planJSON(t, e, c.Dir, false, func(o *Options) { o.Strategy = repair.StrategyDelete })
	d, out := planJSON(t, e, c.Dir, true, func(o *Options) { o.Strategy = repair.StrategyDelete })
	if *plain.Replay.ReplayedRecords != 17 || *d.Replay.ReplayedRecords != 14 || *d.Replay.LostRecords != 0 || !d.Replay.BrokerCounts {
		t.Fatalf("replayed: %d without, %+v with the broker\n%s", *plain.Replay.ReplayedRecords, d.Replay, out)
	}
	if d.Recommended != repair.StrategyCopyPrevious {
		t.Fatalf("recommended %s", d.Recommended)
	}
	for _, ch := range d.Choices {
		if ch.Strategy == repair.StrategyDelete && (*ch.Replay.ReplayedRecords != 14 || !ch.Replay.BrokerCounts) {
			t.Fatalf("choice %+v", ch.Replay)
		}
	}
}
