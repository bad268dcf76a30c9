package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

func startBroker(t testing.TB, topics ...embedkafka.TopicSpec) *embedkafka.Broker {
	t.Helper()
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// produce writes n records to topic/partition with values "topic/partition/i" for i in
// [from, from+n).
func produce(t testing.TB, addr, topic string, partition int32, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := from; i < from+n; i++ {
		wg.Add(1)
		r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s/%d/%d", topic, partition, i))}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

func resolve(t testing.TB, q *query.Query) *query.Resolved {
	t.Helper()
	if q.Checkpoint == "" {
		q.Checkpoint = "mem://unused"
	}
	r, err := q.Validate()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func kafkaQuery(addr string, opts ...string) *query.Query {
	q := &query.Query{Options: map[string]string{"kafka.bootstrap.servers": addr, "startingOffsets": "earliest"}, Sink: "noop"}
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		q.Options[k] = v
	}
	return q
}

// collectSink records every batch it gets.
type collectSink struct {
	mu      sync.Mutex
	batches []*Batch
	skipped []int64
	done    map[int64]bool
}

func (c *collectSink) Description() string { return "collect" }
func (c *collectSink) Close() error        { return nil }
func (c *collectSink) AddBatch(_ context.Context, b *Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = map[int64]bool{}
	}
	if c.done[b.ID] {
		c.skipped = append(c.skipped, b.ID)
		return nil
	}
	c.done[b.ID] = true
	c.batches = append(c.batches, b)
	return nil
}

func (c *collectSink) values() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, b := range c.batches {
		for _, p := range b.Parts {
			var buf []any
			for i := 0; i < p.Len(); i++ {
				buf = p.Row(i, buf[:0])
				out = append(out, string(buf[1].([]byte)))
			}
		}
	}
	return out
}

func (c *collectSink) sizes() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for _, b := range c.batches {
		out = append(out, b.InputRows)
	}
	return out
}

type runOpts struct {
	sink     Sink
	clock    Clock
	max      int
	progress func(*Progress)
	log      io.Writer
}

func runQuery(t testing.TB, ctx context.Context, r *query.Resolved, store storage.Store, o runOpts) (Stats, error) {
	t.Helper()
	var logBuf bytes.Buffer
	if o.log == nil {
		o.log = &logBuf
	}
	e, err := New(ctx, Options{Query: r, Store: store, Sink: o.sink, Clock: o.clock, MaxBatches: o.max, Log: o.log, OnProgress: o.progress,
		Console: io.Discard, PollingDelay: time.Millisecond})
	if err != nil {
		return Stats{}, err
	}
	st, err := e.Run(ctx)
	if err != nil && testing.Verbose() {
		t.Logf("driver log:\n%s", logBuf.String())
	}
	return st, err
}

var spark351Offsets = func() *logformat.OffsetSeq {
	data, err := os.ReadFile("testdata/spark-3.5.1-offsets-0")
	if err != nil {
		panic(err)
	}
	seq, err := logformat.ParseOffsets("spark-3.5.1-offsets-0", data)
	if err != nil {
		panic(err)
	}
	return seq
}()

func confKeys(kvs []logformat.KV) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

// checkConformance checks what the engine wrote: every log file re-parses and re-marshals to
// the same bytes, the conf keys are Spark 3.5's in Spark 3.5's order, the planner resumes with
// no warnings and doctor (deep, with the sink) finds nothing but temp files of killed writes.
func checkConformance(t testing.TB, store storage.Store, sink storage.Store) {
	t.Helper()
	ctx := context.Background()
	files, err := store.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := confKeys(spark351Offsets.Metadata.Conf)
	for _, f := range files {
		if strings.HasPrefix(f.Path, "_ckpt/") {
			continue // ckpt's own directory (the liveness record of ckpt run); Spark never reads it
		}
		if n := logformat.ParseName(path.Base(f.Path)); n.Kind == logformat.NameTemp {
			continue // a write killed mid-way: left in place, as Spark does; doctor reports it
		}
		data, err := store.ReadFile(ctx, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		switch {
		case f.Path == checkpoint.FileMetadata:
			m, err := logformat.ParseStreamMetadata(f.Path, data)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			got = m.Marshal()
		case strings.HasPrefix(f.Path, "offsets/"):
			seq, err := logformat.ParseOffsets(f.Path, data)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			got = seq.Marshal()
			if k := confKeys(seq.Metadata.Conf); !slices.Equal(k, want) {
				t.Errorf("%s: conf keys\n got %v\nwant %v (Spark 3.5.1)", f.Path, k, want)
			}
			if seq.Version != 1 || len(seq.Sources) != 1 {
				t.Errorf("%s: version %d, %d sources", f.Path, seq.Version, len(seq.Sources))
			}
		case strings.HasPrefix(f.Path, "commits/"):
			c, err := logformat.ParseCommit(f.Path, data)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			got = c.Marshal()
			if string(data) != "v1\n{\"nextBatchWatermarkMs\":0}" {
				t.Errorf("%s = %q", f.Path, data)
			}
		case f.Path == "sources/0/0":
			k, err := logformat.ParseKafkaInitialOffsets(f.Path, data)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			got = logformat.MarshalKafkaInitialOffsets(k.Offsets)
		default:
			t.Errorf("unexpected file %s in the checkpoint", f.Path)
			continue
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: re-marshal differs\n got %q\nwant %q", f.Path, got, data)
		}
	}
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := recovery.Plan(ctx, cp, recovery.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Outcome != recovery.OutcomeResume || len(plan.Warnings) > 0 {
		t.Errorf("planner: %s, warnings %v", plan.Verdict(), plan.Warnings)
	}
	rep, err := doctor.Run(ctx, cp, doctor.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion, Sink: sink, Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeLeftoverTempFile {
			continue // a write killed mid-way leaves its temp file, with Spark too; the engine keeps it
		}
		if f.Code == doctor.CodeSinkFileExtra && sink != nil {
			// A batch killed after some of its data files were written leaves them unlisted, with
			// Spark too (docs/doctor.md#sink-file-extra); the re-run writes the same rows under new
			// names. Only such leftovers pass: every row of every extra file must be in a live file.
			checkSinkExtrasRerun(t, sink)
			continue
		}
		t.Errorf("doctor: %s %s %s", f.Code, f.Severity, f.Message)
	}
}

// checkSinkExtrasRerun fails unless every data file of the file sink output in sink that no live
// log entry lists (sinklog.Verify's sink-file-extra) is a JSON lines file whose every row is also
// in a live data file: the leftover of an interrupted attempt whose batch was run again.
func checkSinkExtrasRerun(t testing.TB, sink storage.Store) {
	t.Helper()
	ctx := context.Background()
	v, err := sinklog.Verify(ctx, sink, sinklog.VerifyOptions{MaxProblems: math.MaxInt32})
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]bool{}
	for _, p := range v.Problems {
		if p.Code == sinklog.CodeFileExtra {
			extra[p.Path] = true
		}
	}
	if int64(len(extra)) != v.Counts[sinklog.CodeFileExtra] {
		t.Fatalf("sink verify listed %d of %d extra files", len(extra), v.Counts[sinklog.CodeFileExtra])
	}
	files, err := sink.Walk(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, f := range files {
		if f.IsDir || sinklog.Hidden(f.Path) || extra[f.Path] {
			continue
		}
		data, err := sink.ReadFile(ctx, f.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			live[l] = true
		}
	}
	for p := range extra {
		if !strings.HasSuffix(p, ".json") {
			t.Errorf("sink-file-extra %s: not a JSON lines file, cannot check it is a re-run leftover", p)
			continue
		}
		data, err := sink.ReadFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if !live[l] {
				t.Errorf("sink-file-extra %s: row %s is in no live file: not the leftover of a batch run again", p, l)
				break
			}
		}
	}
}

var _ = transform.KafkaColumns
