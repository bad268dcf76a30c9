package logformat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// conformanceDir is the directory of real Spark-written files; tests fail
// (never skip) when it is missing, because they are the ground truth.
func conformanceDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "testdata", "spark")
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		tb.Fatalf("conformance directory %s is missing: %v", dir, err)
	}
	return dir
}

// minConformanceFiles is the number of files saved in
// testdata/spark (the 23 listed in docs/spark-semantics.md §10.3); a
// smaller count means files went missing.
const minConformanceFiles = 23

type conformanceFile struct {
	rel  string // slash-separated, relative to the conformance dir
	data []byte
}

func conformanceFiles(tb testing.TB) []conformanceFile {
	tb.Helper()
	dir := conformanceDir(tb)
	var out []conformanceFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, conformanceFile{rel: filepath.ToSlash(rel), data: data})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// formatOf dispatches a conformance file to its parser by path.
func formatOf(rel string) string {
	base := rel[strings.LastIndex(rel, "/")+1:]
	switch {
	case strings.Contains(rel, "/offsets/"):
		return "offsets"
	case strings.Contains(rel, "/commits/"):
		return "commits"
	case strings.Contains(rel, "/state/") && strings.Contains(rel, "/_metadata/") &&
		(base == "metadata" || strings.Contains(rel, "/_metadata/v2/") || strings.Contains(rel, "/metadata/v2/")):
		return "operator"
	case base == "metadata":
		return "stream-metadata"
	case strings.Contains(rel, "file-sink-log"):
		return "sink-log"
	case strings.Contains(rel, "file-source-log"):
		return "file-source-log"
	case strings.HasPrefix(base, "kafka-source-initial-offset") && strings.HasSuffix(base, ".bin"):
		return "kafka-initial"
	case strings.HasPrefix(base, "kafka-source-offset") && strings.HasSuffix(base, ".txt"):
		return "kafka-offsets"
	}
	return ""
}

// roundTrip parses data with the parser for format and returns Marshal of
// the result.
func roundTrip(format, file string, data []byte) (any, []byte, error) {
	switch format {
	case "offsets":
		v, err := ParseOffsets(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "commits":
		v, err := ParseCommit(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "operator":
		v, err := ParseOperatorMetadata(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "stream-metadata":
		v, err := ParseStreamMetadata(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "sink-log":
		v, err := ParseSinkLog(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "file-source-log":
		v, err := ParseFileSourceLog(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "kafka-initial":
		v, err := ParseKafkaInitialOffsets(file, data)
		if err != nil {
			return nil, nil, err
		}
		return v, v.Marshal(), nil
	case "kafka-offsets":
		v, err := ParseKafkaOffsets(file, string(data))
		if err != nil {
			return nil, nil, err
		}
		out := v.JSON()
		if bytes.HasSuffix(data, []byte("\n")) {
			out += "\n"
		}
		return v, []byte(out), nil
	}
	return nil, nil, errors.New("no parser for " + format)
}

func TestConformance(t *testing.T) {
	files := conformanceFiles(t)
	if len(files) < minConformanceFiles {
		t.Fatalf("found %d conformance files, want at least %d", len(files), minConformanceFiles)
	}
	parsed := map[string]any{}
	visited := 0
	for _, f := range files {
		format := formatOf(f.rel)
		if format == "" {
			t.Errorf("%s: no parser dispatches this file; extend formatOf", f.rel)
			continue
		}
		visited++
		v, out, err := roundTrip(format, f.rel, f.data)
		if strings.Contains(f.rel, "future-version") {
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%s: want *Error for a future version, got %v", f.rel, err)
				continue
			}
			want := "UnsupportedLogVersion: maximum supported log version is v1, but encountered v99999. " +
				"The log file was produced by a newer version of Spark and cannot be read by this version. Please upgrade."
			if e.Kind != KindUnsupportedVersion || e.File != f.rel || e.Line != 1 || e.Spark != want ||
				e.Version != 99999 || e.MaxVersion != 1 {
				t.Errorf("%s: got %#v", f.rel, e)
			}
			if !strings.Contains(e.Error(), f.rel) || !strings.Contains(e.Error(), want) {
				t.Errorf("%s: message %q must name the file and Spark's text", f.rel, e.Error())
			}
			continue
		}
		if err != nil {
			t.Errorf("%s (%s): %v", f.rel, format, err)
			continue
		}
		if !bytes.Equal(out, f.data) {
			t.Errorf("%s (%s): Marshal differs from the file\n got: %q\nwant: %q", f.rel, format, out, f.data)
		}
		parsed[f.rel] = v
		if format == "sink-log" || format == "file-source-log" {
			checkStreamingMatches(t, format, f.rel, f.data, v)
		}
	}
	if visited != len(files) {
		t.Errorf("dispatched %d of %d files", visited, len(files))
	}
	checkConformanceValues(t, parsed)
}

// checkStreamingMatches reads the file again through the streaming reader,
// which must agree with the whole-file parser.
func checkStreamingMatches(t *testing.T, format, rel string, data []byte, whole any) {
	t.Helper()
	switch format {
	case "sink-log":
		r, err := NewSinkLogReader(rel, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var got []SinkFileStatus
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		w := whole.(*SinkLog)
		if !reflect.DeepEqual(got, w.Entries) || r.TrailingNewline() != w.TrailingNewline || r.Version() != w.Version {
			t.Errorf("%s: streaming reader disagrees with ParseSinkLog", rel)
		}
	case "file-source-log":
		r, err := NewFileSourceLogReader(rel, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var got []FileEntry
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		w := whole.(*FileSourceLog)
		if !reflect.DeepEqual(got, w.Entries) || r.TrailingNewline() != w.TrailingNewline {
			t.Errorf("%s: streaming reader disagrees with ParseFileSourceLog", rel)
		}
	}
}

func checkConformanceValues(t *testing.T, parsed map[string]any) {
	t.Helper()
	get := func(rel string) any {
		v, ok := parsed[rel]
		if !ok {
			t.Fatalf("%s was not parsed", rel)
		}
		return v
	}

	// Spark 2.1.0 offsets: no conf, a LongOffset from the memory source.
	o := get("structured-streaming/checkpoint-version-2.1.0/offsets/0").(*OffsetSeq)
	if o.Version != 1 || o.Metadata == nil || o.Metadata.BatchTimestampMs != 1489085905815 ||
		o.Metadata.Conf != nil || len(o.Sources) != 1 || o.Sources[0].JSON != "2" || o.TrailingNewline {
		t.Errorf("2.1.0 offsets/0: %+v %+v", o, o.Metadata)
	}
	if n, err := ParseLongOffset("x", o.Sources[0].JSON); err != nil || n != 2 {
		t.Errorf("LongOffset: %d %v", n, err)
	}

	// 2.4.3 Kafka offsets: Scala 2.12 HashMap order 2,4,1,3,0.
	o = get("structured-streaming/checkpoint-version-2.4.3-kafka-include-headers-default/offsets/0").(*OffsetSeq)
	if v, ok := o.ConfValue("spark.sql.shuffle.partitions"); !ok || v != "5" {
		t.Errorf("shuffle partitions: %q %v", v, ok)
	}
	k, err := ParseKafkaOffsets("x", o.Sources[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	const topic = "spark-test-topic-2b8619f5-d3c4-4c2d-b5d1-8d9d9458aa62"
	if len(k.Topics) != 1 || k.Topics[0].Topic != topic {
		t.Fatalf("kafka topics: %+v", k)
	}
	var order []int32
	for _, p := range k.Topics[0].Partitions {
		order = append(order, p.Partition)
		if p.Offset != 3 {
			t.Errorf("partition %d offset %d, want 3", p.Partition, p.Offset)
		}
	}
	if !reflect.DeepEqual(order, []int32{2, 4, 1, 3, 0}) {
		t.Errorf("partition order %v", order)
	}
	if got := NewKafkaOffsets(k.Map()).JSON(); got != o.Sources[0].JSON {
		t.Errorf("NewKafkaOffsets order:\n got %s\nwant %s", got, o.Sources[0].JSON)
	}

	// 4.0.0 agg offsets: conf keys in the file's (Scala immutable Map) order.
	o = get("structured-streaming/checkpoint-version-4.0.0/hdfs/agg/offsets/3").(*OffsetSeq)
	var keys []string
	for _, kv := range o.Metadata.Conf {
		keys = append(keys, strings.TrimPrefix(kv.Key, "spark.sql.streaming."))
	}
	wantKeys := []string{"stateStore.providerClass", "stateStore.rocksdb.formatVersion",
		"statefulOperator.useStrictDistribution", "flatMapGroupsWithState.stateFormatVersion",
		"multipleWatermarkPolicy", "aggregation.stateFormatVersion", "spark.sql.shuffle.partitions",
		"join.stateFormatVersion", "stateStore.compression.codec"}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Errorf("4.0.0 conf key order:\n got %v\nwant %v", keys, wantKeys)
	}
	if o.Metadata.BatchTimestampMs != 1719290664278 || o.Sources[0].JSON != "3" {
		t.Errorf("4.0.0 agg offsets: %+v", o)
	}

	// Commits: v1 "{}" (2.3.1), v1 watermark (4.0.0), v2 stateUniqueIds.
	c := get("structured-streaming/checkpoint-version-2.3.1-flatMapGroupsWithState-state-format-1/commits/1").(*Commit)
	if c.Version != 1 || c.HasNextBatchWatermark || c.HeaderOnly || c.NextBatchWatermarkMs != 0 {
		t.Errorf("2.3.1 commit: %+v", c)
	}
	c = get("structured-streaming/checkpoint-version-4.0.0/hdfs/join1/commits/1").(*Commit)
	if c.Version != 1 || !c.HasNextBatchWatermark || c.NextBatchWatermarkMs != 5000 {
		t.Errorf("4.0.0 commit: %+v", c)
	}
	c = get("structured-streaming/checkpoint-version-4.0.0-checkpoint-v2/rocksdb/dedup/commits/3").(*Commit)
	ids, err := c.StateIDs()
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := map[int64][][]string{0: {
		{"bf826c41-d5f6-4abb-bf56-379167c045cd"}, {"e2a4feae-a4e3-4183-b07b-db9b8e0794a5"},
		{"64a2a298-f3f7-4670-9629-c36cd3fac1ea"}, {"bfdda7d9-f699-4e2b-acbd-8cf1687fd017"},
		{"54731796-ed79-463f-a4ee-fbd027dc3374"}}}
	if c.Version != 2 || !reflect.DeepEqual(ids, wantIDs) {
		t.Errorf("v2 commit: version %d ids %v", c.Version, ids)
	}
	if !json.Valid(c.StateUniqueIDs) {
		t.Errorf("StateUniqueIDs is not valid JSON")
	}

	// Root metadata.
	m := get("structured-streaming/checkpoint-version-2.1.0/metadata").(*StreamMetadata)
	if m.ID != "dddc5e7f-1e71-454c-8362-de184444fb5a" || m.Extra != nil {
		t.Errorf("metadata: %+v", m)
	}

	// Operator metadata of a stream-stream join.
	op := get("structured-streaming/checkpoint-version-4.0.0/hdfs/join2/state/0/_metadata/metadata").(*OperatorMetadata)
	if op.Version != 1 || op.OperatorID != 0 || op.OperatorName != "symmetricHashJoin" || len(op.Stores) != 4 ||
		op.Stores[3] != (StoreMetadata{StoreName: "right-keyWithIndexToValue", NumPartitions: 5}) {
		t.Errorf("operator metadata: %+v", op)
	}
	raw := op.Raw
	op.Raw = nil
	if got, want := op.Marshal(), append([]byte("v1\n"), raw...); !bytes.Equal(got, want) {
		t.Errorf("operator metadata re-serialised from typed fields:\n got %s\nwant %s", got, want)
	}

	// File sink log: 7.compact holds 8 entries /a/b/0../a/b/7.
	sl := get("structured-streaming/file-sink-log-version-2.1.0/7.compact").(*SinkLog)
	if len(sl.Entries) != 8 || !sl.TrailingNewline {
		t.Fatalf("7.compact: %d entries", len(sl.Entries))
	}
	for i, e := range sl.Entries {
		size := int64(i * 100)
		if i == 0 {
			size = 1
		}
		want := SinkFileStatus{Path: "/a/b/" + string(rune('0'+i)), Size: size, ModificationTime: size,
			BlockReplication: 1, BlockSize: 100, Action: "add"}
		if e != want {
			t.Errorf("7.compact entry %d: %+v, want %+v", i, e, want)
		}
	}
	sl = get("structured-streaming/file-sink-log-version-2.1.0/8").(*SinkLog)
	if len(sl.Entries) != 2 || sl.Entries[1].Action != "delete" {
		t.Errorf("sink log 8: %+v", sl.Entries)
	}
	fl := get("structured-streaming/file-source-log-version-2.1.0/2.compact").(*FileSourceLog)
	if len(fl.Entries) != 3 || fl.Entries[2] != (FileEntry{Path: "/a/b/2", Timestamp: 1480730950000, BatchID: 2}) {
		t.Errorf("file source 2.compact: %+v", fl.Entries)
	}

	// Kafka initial offsets, Spark 2.1.0 form: a length byte, no header.
	ki := get("kafka-source-initial-offset-version-2.1.0.bin").(*KafkaInitialOffsets)
	if ki.Lead != 0x32 || ki.Version != 0 || !ki.TrailingNewline ||
		ki.JSON != `{"kafka-initial-offset-2-1-0":{"2":2,"1":1,"0":0}}` {
		t.Errorf("2.1.0 initial offsets: %+v", ki)
	}
	if off, ok := ki.Offsets.Get("kafka-initial-offset-2-1-0", 1); !ok || off != 1 {
		t.Errorf("Get: %d %v", off, ok)
	}
	if got := NewKafkaOffsets(ki.Offsets.Map()).JSON(); got != ki.JSON {
		t.Errorf("NewKafkaOffsets on the 2.1.0 file: %s", got)
	}
	ko := get("kafka-source-offset-version-2.1.0.txt").(KafkaOffsets)
	if got := ko.Map(); !reflect.DeepEqual(got, map[TopicPartition]int64{
		{"topic1", 0}: 456, {"topic1", 1}: 789, {"topic2", 0}: 0}) {
		t.Errorf("kafka offsets txt: %v", got)
	}
}
