package engine

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/transform"
)

func fileSinkQuery(t *testing.T, addr, format string, out storage.Store) (*query.Resolved, Sink) {
	q := kafkaQuery(addr, "subscribe=fs", "maxOffsetsPerTrigger=3")
	q.Trigger = "availableNow"
	q.Sink = format
	q.SinkOptions = map[string]string{"path": out.URI()}
	q.Select = []string{"CAST(value AS STRING) AS value", "partition", "offset", "timestamp"}
	r := resolve(t, q)
	return r, NewFileSink(out, r.FileFormat, nil)
}

// The file sink: one part file per partition and batch, _spark_metadata compacted every 10
// batches into N.compact, re-run batches skipped, doctor clean on checkpoint and sink.
func TestFileSinkCompactionAndSkip(t *testing.T) {
	ctx := context.Background()
	b := startBroker(t, embedkafka.TopicSpec{Name: "fs", Partitions: 1})
	produce(t, b.Addr(), "fs", 0, 0, 75) // 25 batches of 3
	out := storage.NewMem()
	r, sink := fileSinkQuery(t, b.Addr(), "json", out)
	store := storage.NewMem()
	if _, err := runQuery(t, ctx, r, store, runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	sum, err := sinklog.Summarize(ctx, out, SinkMetadataDir)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sum.Compacts) != "[9 19]" || sum.Latest != 24 || sum.Files != 25 || len(sum.Errors) > 0 {
		t.Errorf("sink log: compacts %v latest %d files %d errors %v", sum.Compacts, sum.Latest, sum.Files, sum.Errors)
	}
	data, err := out.ReadFile(ctx, SinkMetadataDir+"/20")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `v1`+"\n"+`{"path":"mem://`) || !strings.Contains(string(data), `-c000.json","size":`) ||
		!strings.HasSuffix(string(data), `"blockReplication":1,"blockSize":33554432,"action":"add"}`) {
		t.Errorf("_spark_metadata/20 = %s", data)
	}
	// A re-run of batch 24 (commit lost after the sink wrote it) is skipped by the sink.
	if err := store.Delete(ctx, "commits/24"); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := runQuery(t, ctx, r, store, runOpts{sink: NewFileSink(out, "json", func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }), log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "Skipping already committed batch 24") {
		t.Errorf("log:\n%s", log.String())
	}
	sum2, _ := sinklog.Summarize(ctx, out, SinkMetadataDir)
	if sum2.Files != 25 {
		t.Errorf("files after the re-run: %d", sum2.Files)
	}
	checkConformance(t, store, out)
}

func TestFileSinkParquet(t *testing.T) {
	ctx := context.Background()
	b := startBroker(t, embedkafka.TopicSpec{Name: "fs", Partitions: 1})
	produce(t, b.Addr(), "fs", 0, 0, 3)
	out := storage.NewMem()
	r, sink := fileSinkQuery(t, b.Addr(), "parquet", out)
	if _, err := runQuery(t, ctx, r, storage.NewMem(), runOpts{sink: sink}); err != nil {
		t.Fatal(err)
	}
	files, _ := out.List(ctx, "")
	var name string
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".snappy.parquet") {
			name = f.Path
		}
	}
	if !strings.HasPrefix(name, "part-00000-") || !strings.HasSuffix(name, "-c000.snappy.parquet") {
		t.Fatalf("data file %q", name)
	}
	data, _ := out.ReadFile(ctx, name)
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 3 {
		t.Errorf("rows %d", f.NumRows())
	}
	leaf, ok := f.Schema().Lookup("value")
	if !ok {
		t.Fatalf("no value column in %v", f.Schema())
	}
	pr := parquet.NewReader(f)
	rows := make([]parquet.Row, 3)
	n, _ := pr.ReadRows(rows)
	var vals []string
	for _, row := range rows[:n] {
		for _, v := range row {
			if v.Column() == leaf.ColumnIndex {
				vals = append(vals, v.String())
			}
		}
	}
	if fmt.Sprint(vals) != "[fs/0/0 fs/0/1 fs/0/2]" {
		t.Errorf("values %v", vals)
	}
}

func TestConsoleShowString(t *testing.T) {
	b := &Batch{ID: 3, Columns: []transform.Column{{Name: "key"}, {Name: "value"}}, Parts: []Part{{Values: [][]any{
		{[]byte("k"), "short"}, {nil, "a value longer than twenty characters"}, {[]byte{0xff}, "x"},
	}}}}
	got := ShowString(b, 2, true)
	want := "+----+--------------------+\n" +
		"| key|               value|\n" +
		"+----+--------------------+\n" +
		"|[6B]|               short|\n" +
		"|null|a value longer th...|\n" +
		"+----+--------------------+\n" +
		"only showing top 2 rows\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var w bytes.Buffer
	if err := NewConsoleSink(&w, 20, false).AddBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(w.String(), "-------------------------------------------\nBatch: 3\n-------------------------------------------\n+----+") ||
		!strings.Contains(w.String(), "|a value longer than twenty characters|") {
		t.Errorf("console:\n%s", w.String())
	}
}

// The file sink deletes expired log files as Spark's CompactibleFileStreamLog does: after batch
// N, with minBatchesToRetain 2 and compactInterval 10, files below the compaction batch at or
// before N-1 go once they are cleanupDelay old; a reader still sees every data file.
func TestFileSinkDeletesExpiredLog(t *testing.T) {
	ctx := context.Background()
	b := startBroker(t, embedkafka.TopicSpec{Name: "fs", Partitions: 1})
	produce(t, b.Addr(), "fs", 0, 0, 75) // 25 batches of 3
	for _, tc := range []struct {
		name  string
		delay time.Duration
		want  string
	}{
		// After batch 24: minBatch 23, compaction batch 19: 0..18 go.
		{"expired", 0, "19.compact 20 21 22 23 24"},
		// The default delay (10 minutes) keeps files written a moment ago.
		{"within the cleanup delay", DefaultFileSinkCleanupDelay, "0 1 2 3 4 5 6 7 8 9.compact 10 11 12 13 14 15 16 17 18 19.compact 20 21 22 23 24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := storage.NewMem()
			r, _ := fileSinkQuery(t, b.Addr(), "json", out)
			var log bytes.Buffer
			sink := NewFileSink(out, "json", func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) })
			sink.MinBatchesToRetain, sink.CleanupDelay = 2, tc.delay
			if _, err := runQuery(t, ctx, r, storage.NewMem(), runOpts{sink: sink}); err != nil {
				t.Fatal(err)
			}
			es, err := out.List(ctx, SinkMetadataDir)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			names := map[int64]string{}
			for _, e := range es {
				n := logformat.ParseName(path.Base(e.Path))
				ids = append(ids, n.Batch)
				names[n.Batch] = path.Base(e.Path)
			}
			slices.Sort(ids)
			var got []string
			for _, id := range ids {
				got = append(got, names[id])
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("_spark_metadata: %s, want %s\nlog:\n%s", strings.Join(got, " "), tc.want, log.String())
			}
			sum, err := sinklog.Summarize(ctx, out, SinkMetadataDir)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Files != 25 || len(sum.Errors) > 0 {
				t.Errorf("files the log says are live: %d, errors %v", sum.Files, sum.Errors)
			}
			if deleted := strings.Contains(log.String(), "expired file sink log files"); deleted != (tc.delay == 0) {
				t.Errorf("log reports deletions: %v\n%s", deleted, log.String())
			}
		})
	}
}

// `ckpt run --conf spark.sql.streaming.fileSink.log.*` reaches the file sink: compactInterval
// 4 compacts at batches 3, 7, ...; deletion=false keeps every log file although they are
// expired (cleanupDelay 0).
func TestFileSinkLogConfs(t *testing.T) {
	ctx := context.Background()
	b := startBroker(t, embedkafka.TopicSpec{Name: "fs", Partitions: 1})
	produce(t, b.Addr(), "fs", 0, 0, 30) // 10 batches of 3
	out := storage.NewMem()
	q := kafkaQuery(b.Addr(), "subscribe=fs", "maxOffsetsPerTrigger=3")
	q.Trigger = "availableNow"
	q.Sink = "json"
	q.SinkOptions = map[string]string{"path": out.URI()}
	q.Conf = map[string]string{query.ConfFileSinkLogCompactInterval: "4", query.ConfFileSinkLogDeletion: "false",
		query.ConfFileSinkLogCleanupDelay: "0", query.ConfMinBatchesToRetain: "2"}
	r := resolve(t, q)
	sink, err := newSink(ctx, r, "id", nil, func(context.Context, string) (storage.Store, error) { return out, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := sink.(*FileSink)
	if fs.CompactInterval != 4 || fs.LogDeletion || fs.CleanupDelay != 0 || fs.MinBatchesToRetain != 2 {
		t.Fatalf("file sink from the confs: %+v", fs)
	}
	if _, err := runQuery(t, ctx, r, storage.NewMem(), runOpts{sink: fs}); err != nil {
		t.Fatal(err)
	}
	sum, err := sinklog.Summarize(ctx, out, SinkMetadataDir)
	if err != nil {
		t.Fatal(err)
	}
	es, _ := out.List(ctx, SinkMetadataDir)
	if fmt.Sprint(sum.Compacts) != "[3 7]" || sum.Latest != 9 || len(es) != 10 {
		t.Errorf("compacts %v latest %d log files %d", sum.Compacts, sum.Latest, len(es))
	}
}
