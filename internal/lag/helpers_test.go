package lag

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/embedkafka/kafkatest"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// env is an embedded broker (internal/embedkafka/kafkatest) plus in-memory checkpoints
// (mem://<test>/<name>).
type env struct {
	*kafkatest.Env
	t   *testing.T
	ctx context.Context
	b   *embedkafka.Broker
	adm *kadm.Client
	cl  *kgo.Client // the reading client, as ckpt lag makes it
}

func newEnv(t *testing.T) *env {
	t.Helper()
	be := kafkatest.New(t)
	// The client settings cli.BrokerFlags.KgoClient uses (cli imports lag: not from here).
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(be.Addr)}, topicstate.ClientOpts()...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &env{Env: be, t: t, ctx: be.Ctx, b: be.B, adm: be.Adm, cl: cl}
}

// topic creates a topic unique to the test and returns its name.
func (e *env) topic(suffix string, partitions int32) string {
	e.t.Helper()
	return e.Topic(suffix, partitions)
}

// produce writes n records to a partition; record i is stamped ts(i).
func (e *env) produce(topic string, partition int32, n int, ts func(i int) time.Time) {
	e.t.Helper()
	e.Produce(topic, partition, n, ts)
}

func (e *env) collector(locations ...string) *Collector {
	return &Collector{Locations: locations, Open: open, Client: e.cl, TimestampWait: time.Second}
}

func open(ctx context.Context, uri string) (storage.Store, error) {
	return storage.Open(ctx, uri, storage.Options{})
}

// ckpt writes checkpoint files into mem://<name>: offsets/N with the given source lines, and
// commits/N.
type ckpt struct {
	t   *testing.T
	uri string
	s   storage.Store
}

func newCkpt(t *testing.T, name string) *ckpt {
	uri := "mem://" + strings.NewReplacer("/", "-").Replace(t.Name()) + "-" + name
	s, err := storage.Open(context.Background(), uri, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { storage.ForgetMem(strings.TrimPrefix(uri, "mem://")) })
	return &ckpt{t: t, uri: uri, s: s}
}

func (c *ckpt) write(path, data string) *ckpt {
	c.t.Helper()
	if err := c.s.WriteFile(context.Background(), path, []byte(data)); err != nil {
		c.t.Fatal(err)
	}
	return c
}

func (c *ckpt) offsets(id int, sources ...string) *ckpt {
	return c.write(fmt.Sprintf("offsets/%d", id), "v1\n"+`{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}`+"\n"+strings.Join(sources, "\n"))
}

func (c *ckpt) commit(id int) *ckpt {
	return c.write(fmt.Sprintf("commits/%d", id), "v1\n{\"nextBatchWatermarkMs\":0}")
}

// kafkaInitial writes sources/<i>/0 as Spark does.
func (c *ckpt) kafkaInitial(i int, json string) *ckpt {
	return c.write(fmt.Sprintf("sources/%d/0", i), "\x00v1\n"+json)
}

func i64(v int64) *int64 { return &v }

func eq(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(v *int64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatInt(*v, 10)
}
