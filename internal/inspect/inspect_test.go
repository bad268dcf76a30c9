package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

var ctx = context.Background()

// kafkaCheckpoint is a three-batch Kafka query: batch 2 planned, not committed; HDFS state.
func kafkaCheckpoint() files {
	return files{
		"metadata":    `{"id":"` + queryID + `"}`,
		"offsets/0":   offsets(1719290664278, 0, conf2, `{"orders":{"1":5,"0":10}}`),
		"offsets/1":   offsets(1719290665278, 1000, conf2, `{"orders":{"0":15,"1":12}}`),
		"offsets/2":   offsets(1719290666278, 2000, conf2, `{"orders":{"1":12,"0":30,"2":4}}`),
		"commits/0":   "v1\n{\"nextBatchWatermarkMs\":0}",
		"commits/1":   "v1\n{\"nextBatchWatermarkMs\":2000}",
		"sources/0/0": kafkaInit(`{"orders":{"0":0,"1":0}}`),
		// HDFS state: operator 0, two partitions, versions 1..3 with a snapshot.
		"state/0/0/1.delta":          "x",
		"state/0/0/2.delta":          "xx",
		"state/0/0/2.snapshot":       "xxx",
		"state/0/1/1.delta":          "x",
		"state/0/1/3.delta":          "x",
		"state/0/0/_metadata/schema": "s",
	}
}

func TestSummaryKafka(t *testing.T) {
	s, err := Summarize(ctx, memStore(t, kafkaCheckpoint()))
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, s)
	eq(t, "kind", get(t, m, "kind"), "checkpoint")
	eq(t, "queryId", get(t, m, "queryId"), queryID)
	eq(t, "metadata.status", get(t, m, "metadata", "status"), "ok")
	eq(t, "offsets.batches", js(t, get(t, m, "offsets", "batches")), "[0,1,2]")
	eq(t, "offsets.latest", get(t, m, "offsets", "latest"), 2)
	eq(t, "offsets.ranges", js(t, get(t, m, "offsets", "ranges")), "[[0,2]]")
	eq(t, "offsets.gaps", js(t, get(t, m, "offsets", "gaps")), "[]")
	eq(t, "commits.latest", get(t, m, "commits", "latest"), 1)
	eq(t, "latestBatch.id", get(t, m, "latestBatch", "id"), 2)
	eq(t, "latestBatch.committed", get(t, m, "latestBatch", "committed"), false)
	eq(t, "latestBatch.watermarkMs", get(t, m, "latestBatch", "watermarkMs"), 2000)
	eq(t, "latestBatch.timestampMs", get(t, m, "latestBatch", "timestampMs"), 1719290666278)
	eq(t, "latestBatch.time", get(t, m, "latestBatch", "time"), "2024-06-25T04:44:26.278Z")
	// Raw offsets are embedded as JSON values, in the file's key order.
	eq(t, "latestBatch.sources", js(t, get(t, m, "latestBatch", "sources")), `[{"orders":{"0":30,"1":12,"2":4}}]`)
	eq(t, "latestCommit.nextBatchWatermarkMs", get(t, m, "latestCommit", "nextBatchWatermarkMs"), 2000)

	// conf keeps the file's key order in the serialized bytes.
	b, _ := json.Marshal(s.LatestBatch.Conf)
	if want := `{"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider","spark.sql.shuffle.partitions":"5"}`; string(b) != want {
		t.Errorf("conf = %s\nwant %s", b, want)
	}

	src := get(t, m, "sources", 0)
	eq(t, "source kind", get(t, src, "kind"), "kafka")
	eq(t, "kafka topics", js(t, get(t, src, "kafka", "topics")),
		`[{"partitions":[{"offset":30,"partition":0},{"offset":12,"partition":1},{"offset":4,"partition":2}],"topic":"orders"}]`)
	eq(t, "kafka partitions", get(t, src, "kafka", "partitions"), 3)
	eq(t, "initial present", get(t, src, "kafka", "initialOffsets", "present"), true)
	eq(t, "initial offsets", js(t, get(t, src, "kafka", "initialOffsets", "offsets")), `{"orders":{"0":0,"1":0}}`)

	ops := get(t, m, "state", "operators").([]any)
	if len(ops) != 1 {
		t.Fatalf("operators = %v", ops)
	}
	op := ops[0]
	eq(t, "provider", get(t, op, "provider"), "hdfs")
	eq(t, "partitions", get(t, op, "partitions"), 2)
	eq(t, "stores", js(t, get(t, op, "stores")), `["default"]`)
	eq(t, "versions", js(t, get(t, op, "versions")), `{"max":3,"min":1}`)
	eq(t, "uniqueIds", get(t, op, "uniqueIds"), false)
	eq(t, "name (no metadata file)", get(t, op, "name"), "")
	eq(t, "problems", js(t, get(t, m, "problems")), "[]")
}

func TestSummaryGapsAndMissingMetadata(t *testing.T) {
	fs := files{}
	for _, id := range []string{"0", "1", "2", "4", "5", "9"} {
		fs["offsets/"+id] = offsets(1, 0, nil, "7")
	}
	fs["commits/0"] = "v1\n{}"
	fs["commits/1"] = "v1\n{}"
	fs["commits/4"] = "v1\n{}"
	s, err := Summarize(ctx, memStore(t, fs))
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, s)
	eq(t, "queryId", get(t, m, "queryId"), nil)
	eq(t, "metadata.status", get(t, m, "metadata", "status"), "missing")
	eq(t, "ranges", js(t, get(t, m, "offsets", "ranges")), "[[0,2],[4,5],[9,9]]")
	eq(t, "gaps", js(t, get(t, m, "offsets", "gaps")), "[[3,3],[6,8]]")
	eq(t, "commit gaps", js(t, get(t, m, "commits", "gaps")), "[[2,3]]")
	eq(t, "FormatRanges", FormatRanges(s.Offsets.Ranges), "0-2, 4-5, 9")
	eq(t, "source kind", get(t, m, "sources", 0, "kind"), "long")
	eq(t, "commit watermark unset", get(t, m, "latestCommit", "nextBatchWatermarkMs"), nil)
	eq(t, "no state", js(t, get(t, m, "state", "operators")), "[]")
}

func TestSummaryFileAndMultiSource(t *testing.T) {
	fs := files{
		"metadata": `{"id":"` + queryID + `"}`,
		// source 0: Kafka; 1: file source; 2: no offset yet; 3: Delta-like, unknown.
		"offsets/0": offsets(5, 0, nil, `{"t":{"0":1}}`, `{"logOffset":3}`, "-", `{"sourceVersion":1,"reservoirVersion":7}`),
		"offsets/1": offsets(6, 0, nil, `{"t":{"0":2}}`, `{"logOffset":4}`, "-", `{"sourceVersion":1,"reservoirVersion":8}`),
		// the file source's seen-files log
		"sources/1/2.compact": "v1\n{\"path\":\"/a\",\"timestamp\":1,\"batchId\":0}",
		"sources/1/3":         "v1\n{\"path\":\"/b\",\"timestamp\":1,\"batchId\":3}",
		"sources/1/4":         "v1\n{\"path\":\"/c\",\"timestamp\":1,\"batchId\":4}",
		// a source directory with no offset line: the query lost a source
		"sources/4/0": "v1\n{}",
	}
	s, err := Summarize(ctx, memStore(t, fs))
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, s)
	srcs := get(t, m, "sources").([]any)
	if len(srcs) != 5 {
		t.Fatalf("sources = %s", js(t, srcs))
	}
	eq(t, "0 kind", get(t, srcs[0], "kind"), "kafka")
	eq(t, "0 initial absent", get(t, srcs[0], "kafka", "initialOffsets", "present"), false)
	eq(t, "1 kind", get(t, srcs[1], "kind"), "file")
	eq(t, "1 logOffset", get(t, srcs[1], "file", "logOffset"), 4)
	eq(t, "1 log ranges", js(t, get(t, srcs[1], "file", "log", "ranges")), "[[2,4]]")
	eq(t, "1 compacts", js(t, get(t, srcs[1], "file", "compacts")), "[2]")
	eq(t, "2 kind", get(t, srcs[2], "kind"), "none")
	eq(t, "2 offset", get(t, srcs[2], "offset"), nil)
	eq(t, "3 kind", get(t, srcs[3], "kind"), "unknown")
	eq(t, "3 offset", js(t, get(t, srcs[3], "offset")), `{"reservoirVersion":8,"sourceVersion":1}`)
	eq(t, "4 kind", get(t, srcs[4], "kind"), "missing")
	eq(t, "latestBatch.sources", js(t, get(t, m, "latestBatch", "sources")),
		`[{"t":{"0":2}},{"logOffset":4},null,{"reservoirVersion":8,"sourceVersion":1}]`)
}

func TestSummaryLeftovers(t *testing.T) {
	fs := files{
		"metadata":       `{"id":"` + queryID + `"}`,
		".metadata.crc":  "c",
		"offsets/0":      offsets(1, 0, nil, "1"),
		"offsets/.0.crc": "c",
		"offsets/.1.crc": "c", // orphan: offsets/1 was deleted without its checksum
		"offsets/.1.8c2a5c3c-9a2b-4e77-bb8f-0f4f5e2a7b11.tmp": "partial",
		"commits/.0.crc":              "c", // orphan
		"sources/0/.0.crc":            "c", // orphan
		"state/0/0/1.delta":           "d",
		"state/0/0/.1.delta.crc":      "c",
		"state/0/0/.2.delta.crc":      "c", // orphan
		"state/0/0/.2.delta.1d1c.tmp": "t",
		".something.tmp":              "t",
	}
	s, err := Summarize(ctx, memStore(t, fs))
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, s)
	eq(t, "tmp", js(t, get(t, m, "leftovers", "tmp")),
		`[{"path":".something.tmp","size":1},{"path":"offsets/.1.8c2a5c3c-9a2b-4e77-bb8f-0f4f5e2a7b11.tmp","size":7},{"path":"state/0/0/.2.delta.1d1c.tmp","size":1}]`)
	eq(t, "orphanCrc", js(t, get(t, m, "leftovers", "orphanCrc")),
		`[{"path":"commits/.0.crc","size":1},{"path":"offsets/.1.crc","size":1},{"path":"sources/0/.0.crc","size":1},{"path":"state/0/0/.2.delta.crc","size":1}]`)
	// Leftovers do not count as state versions.
	eq(t, "versions", js(t, get(t, m, "state", "operators", 0, "versions")), `{"max":1,"min":1}`)
}

func TestStateInventoryJoinAndRocksDBv2(t *testing.T) {
	joinMeta := `v1
{"operatorInfo":{"operatorId":0,"operatorName":"symmetricHashJoin"},"stateStoreInfo":[{"storeName":"left-keyToNumValues","numColsPrefixKey":0,"numPartitions":2},{"storeName":"left-keyWithIndexToValue","numColsPrefixKey":0,"numPartitions":2},{"storeName":"right-keyToNumValues","numColsPrefixKey":0,"numPartitions":2},{"storeName":"right-keyWithIndexToValue","numColsPrefixKey":0,"numPartitions":2}]}`
	fs := files{
		"offsets/0":                  offsets(1, 0, nil, "1", "1"),
		"state/0/_metadata/metadata": joinMeta,
	}
	for _, p := range []string{"0", "1"} {
		for _, st := range []string{"left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"} {
			fs["state/0/"+p+"/"+st+"/1.delta"] = "d"
			fs["state/0/"+p+"/"+st+"/2.delta"] = "d"
		}
	}
	// Operator 1: RocksDB with checkpoint format v2 unique ids, versions 3..4, SSTs.
	fs["state/1/0/3_bf826c41-d5f6-4abb-bf56-379167c045cd.zip"] = "zip"
	fs["state/1/0/4_e2a4feae-a4e3-4183-b07b-db9b8e0794a5.changelog"] = "cl"
	fs["state/1/0/SSTs/000008-3f1cbbbe-6b1c-4a0b-9c0b-4fb2a4b9e1ea.sst"] = "sst"
	fs["state/1/1/4_64a2a298-f3f7-4670-9629-c36cd3fac1ea.zip"] = "zip"
	fs["state/1/0/_metadata/schema"] = "schema"
	fs["state/1/_metadata/metadata"] = `v1
{"operatorInfo":{"operatorId":1,"operatorName":"dedupe"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":2}]}`
	// Operator 2: RocksDB format v1.
	fs["state/2/0/1.zip"] = "z"
	fs["state/2/0/2.changelog"] = "c"
	// Operator 3: corrupt metadata.
	fs["state/3/0/1.delta"] = "d"
	fs["state/3/_metadata/metadata"] = "v9\n{}"

	s, err := Summarize(ctx, memStore(t, fs))
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, s)
	ops := get(t, m, "state", "operators").([]any)
	if len(ops) != 4 {
		t.Fatalf("operators: %s", js(t, ops))
	}
	eq(t, "join name", get(t, ops[0], "name"), "symmetricHashJoin")
	eq(t, "join stores", js(t, get(t, ops[0], "stores")), `["left-keyToNumValues","left-keyWithIndexToValue","right-keyToNumValues","right-keyWithIndexToValue"]`)
	eq(t, "join partitions", get(t, ops[0], "partitions"), 2)
	eq(t, "join provider", get(t, ops[0], "provider"), "hdfs")
	eq(t, "join versions", js(t, get(t, ops[0], "versions")), `{"max":2,"min":1}`)
	eq(t, "join metadata stores", len(get(t, ops[0], "metadata", "stores").([]any)), 4)

	eq(t, "rocksdb name", get(t, ops[1], "name"), "dedupe")
	eq(t, "rocksdb provider", get(t, ops[1], "provider"), "rocksdb")
	eq(t, "rocksdb uniqueIds", get(t, ops[1], "uniqueIds"), true)
	eq(t, "rocksdb versions", js(t, get(t, ops[1], "versions")), `{"max":4,"min":3}`)
	eq(t, "rocksdb partitions", get(t, ops[1], "partitions"), 2)
	eq(t, "rocksdb ssts", get(t, ops[1], "ssts"), 1)
	eq(t, "rocksdb stores", js(t, get(t, ops[1], "stores")), `["default"]`)

	eq(t, "rocksdb v1 provider", get(t, ops[2], "provider"), "rocksdb")
	eq(t, "rocksdb v1 uniqueIds", get(t, ops[2], "uniqueIds"), false)

	eq(t, "corrupt metadata name", get(t, ops[3], "name"), "")
	eq(t, "corrupt metadata kind", get(t, ops[3], "metadata", "problem", "kind"), "unsupported-version")
	eq(t, "problem listed", get(t, m, "problems", 0, "file"), "state/3/_metadata/metadata")
}

func TestSummaryCorruptFilesKeepGoing(t *testing.T) {
	fs := kafkaCheckpoint()
	fs["offsets/3"] = "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n{\"orders\":{\"0\":oops}}"
	fs["offsets/4"] = "v1\n{\"batchWatermarkMs\":0,"
	fs["commits/2"] = ""
	fs["metadata"] = `{"di":"x"}`
	s, err := Summarize(ctx, memStore(t, fs))
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, s)
	eq(t, "metadata.status", get(t, m, "metadata", "status"), "corrupt")
	eq(t, "queryId", get(t, m, "queryId"), nil)
	eq(t, "latestBatch.id", get(t, m, "latestBatch", "id"), 4)
	p := get(t, m, "latestBatch", "problem")
	eq(t, "problem file", get(t, p, "file"), "offsets/4")
	eq(t, "problem line", get(t, p, "line"), 2)
	eq(t, "problem kind", get(t, p, "kind"), "bad-json")
	if get(t, p, "expected") == "" || !strings.Contains(get(t, p, "message").(string), "offsets/4") {
		t.Errorf("problem = %s", js(t, p))
	}
	eq(t, "latestCommit problem", get(t, m, "latestCommit", "problem", "kind"), "empty")
	eq(t, "latestCommit problem spark", get(t, m, "latestCommit", "problem", "spark"), "Incomplete log file in the offset commit log")
	// offsets/3 is a valid offsets file whose Kafka offset is not Kafka JSON: an "unknown"
	// source; sources then come from batch 3, the newest readable file.
	eq(t, "sourcesBatch", get(t, m, "sourcesBatch"), 3)
	files := []string{}
	for _, p := range get(t, m, "problems").([]any) {
		files = append(files, get(t, p, "file").(string))
	}
	eq(t, "problem files", strings.Join(files, ","), "metadata,offsets/4,commits/2")
}

func TestSummaryOnlyCorruptOffsets(t *testing.T) {
	s, err := Summarize(ctx, memStore(t, files{"offsets/0": "v99\n{}\n1"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.LatestBatch == nil || s.LatestBatch.Problem == nil || s.LatestBatch.Problem.Kind != "unsupported-version" {
		t.Fatalf("latestBatch = %+v", s.LatestBatch)
	}
	if s.SourcesBatch != nil || len(s.Sources) != 0 {
		t.Errorf("sources from a corrupt file: %+v", s.Sources)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		uri   string
		fs    files
		want  Kind
		dir   string
		error string
	}{
		{"offsets", "mem://d1", files{"offsets/0": "v1"}, KindCheckpoint, "", ""},
		{"commits", "mem://d2", files{"commits/0": "v1"}, KindCheckpoint, "", ""},
		{"metadata", "mem://d3", files{"metadata": "{}"}, KindCheckpoint, "", ""},
		{"sink output", "mem://d4", files{"_spark_metadata/0": "v1", "part-0.parquet": "x"}, KindFileSinkLog, "_spark_metadata", ""},
		{"sink log by name", "mem://d5/out/_spark_metadata", files{"0": "v1"}, KindFileSinkLog, "", ""},
		{"sink log by content", "mem://d6/copy", files{"9": "v1\n{\"path\":\"/a\",\"size\":1,\"isDir\":false,\"modificationTime\":1,\"blockReplication\":1,\"blockSize\":1,\"action\":\"add\"}"}, KindFileSinkLog, "", ""},
		{"empty", "mem://d7", files{}, "", "", "no checkpoint at mem://d7: the directory is empty"},
		{"other", "mem://d8", files{"x/y": "1"}, "", "", "no checkpoint at mem://d8: it holds x/, but no offsets/, commits/ or metadata"},
		{"offsets dir", "mem://d9/offsets", files{"0": "v1"}, "", "", "this is the offsets/ directory of a checkpoint; pass the directory above it:\n  ckpt inspect mem://d9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := storage.Open(ctx, tc.uri, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			write(t, s, tc.fs)
			got, err := Detect(ctx, s, false)
			if tc.error != "" {
				var nf *checkpoint.NotCheckpointError
				if !errors.As(err, &nf) || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("err = %v, want NotFoundError containing %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tc.want || got.Dir != tc.dir {
				t.Errorf("Detect = %+v, want %s %q", got, tc.want, tc.dir)
			}
		})
	}
}

func TestBatches(t *testing.T) {
	fs := kafkaCheckpoint()
	fs["commits/4"] = "v1\n{}" // a commit with no offsets file
	fs["offsets/5"] = offsets(1719290669278, 0, conf2, `{"orders":{"0":31,"1":12,"2":9}}`)
	fs["offsets/6"] = "garbage"
	s := memStore(t, fs)
	l, err := Batches(ctx, s, BatchesOptions{Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, l)
	eq(t, "kind", get(t, m, "kind"), "batches")
	rows := get(t, m, "batches").([]any)
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, js(t, get(t, r, "id")))
	}
	eq(t, "ids", strings.Join(ids, ","), "0,1,2,4,5,6")
	// batch 0 starts at the initial offsets: 10 + 5 records.
	eq(t, "0 records", get(t, rows[0], "records"), 15)
	eq(t, "0 partitions", js(t, get(t, rows[0], "sources", 0, "partitions")),
		`[{"end":10,"partition":0,"records":10,"start":0,"topic":"orders"},{"end":5,"partition":1,"records":5,"start":0,"topic":"orders"}]`)
	eq(t, "0 committed", get(t, rows[0], "committed"), true)
	eq(t, "0 time", get(t, rows[0], "time"), "2024-06-25T04:44:24.278Z")
	eq(t, "1 records", get(t, rows[1], "records"), 12) // 5 + 7
	// batch 2 adds partition 2: its start is unknown, so the batch total is too.
	eq(t, "2 records", get(t, rows[2], "records"), nil)
	eq(t, "2 source records", get(t, rows[2], "sources", 0, "records"), nil)
	eq(t, "2 p0 records", get(t, rows[2], "sources", 0, "partitions", 0, "records"), 15)
	eq(t, "2 p2 start", get(t, rows[2], "sources", 0, "partitions", 2, "start"), nil)
	eq(t, "2 committed", get(t, rows[2], "committed"), false)
	eq(t, "4 offsets", get(t, rows[3], "offsets"), false)
	eq(t, "4 committed", get(t, rows[3], "committed"), true)
	// batch 5 follows batch 2 across the gap: Spark restarts from the previous file on disk.
	eq(t, "5 records", get(t, rows[4], "records"), 1+0+5)
	eq(t, "6 problem", get(t, rows[5], "problem", "file"), "offsets/6")
	eq(t, "problems", len(get(t, m, "problems").([]any)), 1)
}

func TestBatchesManyChunks(t *testing.T) {
	fs := files{}
	n := batchChunk*2 + 7
	for i := range n {
		fs["offsets/"+strconv.Itoa(i)] = offsets(int64(i), 0, nil, `{"t":{"0":`+strconv.Itoa(i*10)+`}}`)
		if i%2 == 0 {
			fs["commits/"+strconv.Itoa(i)] = "v1\n{}"
		}
	}
	l, err := Batches(ctx, memStore(t, fs), BatchesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Batches) != n {
		t.Fatalf("rows = %d, want %d", len(l.Batches), n)
	}
	for i, r := range l.Batches {
		if r.ID != int64(i) || r.Committed != (i%2 == 0) {
			t.Fatalf("row %d = %+v", i, r)
		}
		if i > 0 && (r.Records == nil || *r.Records != 10) {
			t.Fatalf("row %d records = %v", i, r.Records)
		}
	}
}

func TestBatch(t *testing.T) {
	s := memStore(t, kafkaCheckpoint())
	d, err := Batch(ctx, s, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := toJSON(t, d)
	eq(t, "kind", get(t, m, "kind"), "batch")
	eq(t, "offsets.version", get(t, m, "offsets", "version"), 1)
	eq(t, "offsets.watermarkMs", get(t, m, "offsets", "watermarkMs"), 1000)
	eq(t, "offsets.sources", js(t, get(t, m, "offsets", "sources")), `[{"orders":{"0":15,"1":12}}]`)
	eq(t, "previousBatch", get(t, m, "previousBatch"), 0)
	eq(t, "sources records", get(t, m, "sources", 0, "records"), 12)
	eq(t, "commit", js(t, get(t, m, "commit")), `{"id":1,"nextBatchWatermarkMs":2000,"stateUniqueIds":null,"version":1}`)

	d, err = Batch(ctx, s, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d.Commit != nil {
		t.Errorf("batch 2 commit = %+v", d.Commit)
	}

	_, err = Batch(ctx, s, 42)
	var nf *BatchNotFoundError
	if !errors.As(err, &nf) || err.Error() != "batch 42 not found: offsets/ has 0-2, commits/ has 0-1" {
		t.Errorf("err = %v", err)
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		ids          []int64
		ranges, gaps string
	}{
		{nil, "-", "-"},
		{[]int64{5}, "5", "-"},
		{[]int64{0, 1, 2, 3}, "0-3", "-"},
		{[]int64{0, 1, 3, 7, 8, 9}, "0-1, 3, 7-9", "2, 4-6"},
	} {
		r := Ranges(tc.ids)
		eq(t, "ranges", FormatRanges(r), tc.ranges)
		eq(t, "gaps", FormatRanges(Gaps(r)), tc.gaps)
	}
}

func TestConfRoundTrip(t *testing.T) {
	in := `{"z":"1","a":"<2>","m":"3"}`
	var c Conf
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json re-escapes "<" inside Marshal; the key order is what matters here.
	if !strings.HasPrefix(string(out), `{"z":"1","a":`) || !strings.HasSuffix(string(out), `,"m":"3"}`) {
		t.Errorf("round trip = %s", out)
	}
	if v, ok := c.Get("a"); !ok || v != "<2>" {
		t.Errorf("Get(a) = %q %v", v, ok)
	}
}

func TestRawJSON(t *testing.T) {
	eq(t, "object", string(rawJSON(`{ "a" : 1 }`, false)), `{"a":1}`)
	eq(t, "void", string(rawJSON("", true)), "null")
	eq(t, "not JSON", string(rawJSON(`{oops`, false)), `"{oops"`)
	eq(t, "number", string(rawJSON("42", false)), "42")
}

// TestBatchesRange: --from, --to and --last pick batch ids of either log, and the first row's
// Kafka ranges still start where the offsets file before it ends.
func TestBatchesRange(t *testing.T) {
	fs := kafkaCheckpoint()
	fs["commits/4"] = "v1\n{}" // a commit with no offsets file
	fs["offsets/5"] = offsets(1719290669278, 0, conf2, `{"orders":{"0":31,"1":12,"2":9}}`)
	s := memStore(t, fs)
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		opts BatchesOptions
		want string
	}{
		{"all", BatchesOptions{}, "0,1,2,4,5"},
		{"last 2", BatchesOptions{Last: 2}, "4,5"},
		{"last 10", BatchesOptions{Last: 10}, "0,1,2,4,5"},
		{"from 1", BatchesOptions{From: i64(1)}, "1,2,4,5"},
		{"to 2", BatchesOptions{To: i64(2)}, "0,1,2"},
		{"from 3 to 4", BatchesOptions{From: i64(3), To: i64(4)}, "4"},
		{"to 4 last 2", BatchesOptions{To: i64(4), Last: 2}, "2,4"},
		{"from 1 last 9", BatchesOptions{From: i64(1), Last: 9}, "1,2,4,5"},
		{"from 6", BatchesOptions{From: i64(6)}, ""},
		{"from 3 to 3", BatchesOptions{From: i64(3), To: i64(3)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			var first *BatchRow
			err := EachBatch(ctx, s, tc.opts, func(r *BatchRow) error {
				if first == nil {
					c := *r
					first = &c
				}
				ids = append(ids, fmt.Sprint(r.ID))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "ids", strings.Join(ids, ","), tc.want)
			if tc.name == "from 1" {
				// batch 1 starts where offsets/0 ends: 5 + 7 records.
				eq(t, "1 records", js(t, first.Records), "12")
			}
		})
	}
}
