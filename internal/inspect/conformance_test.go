package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// backends open a copy of a local fixture directory: the directory itself (local disk) and a
// copy in a fresh S3 bucket, so every conformance assertion holds on both.
var backends = []struct {
	name string
	open func(t *testing.T, dir string) storage.Store
}{
	{"local", func(t *testing.T, dir string) storage.Store {
		s, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"s3", func(t *testing.T, dir string) storage.Store {
		s := storetest.S3(t)
		copyDir(t, dir, s, "")
		return s
	}},
}

func fixture(t *testing.T, rel string) string {
	return filepath.Join(conformanceDir(t), "structured-streaming", filepath.FromSlash(rel))
}

func TestConformanceCheckpoints(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Run("4.0.0-agg", func(t *testing.T) {
				s := be.open(t, fixture(t, "checkpoint-version-4.0.0/hdfs/agg"))
				sum, err := Summarize(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				m := toJSON(t, sum)
				eq(t, "queryId", get(t, m, "queryId"), "ab7bcd9a-4146-45d3-933d-a615b381c3be")
				eq(t, "offsets.batches", js(t, get(t, m, "offsets", "batches")), "[3]")
				eq(t, "offsets.latest", get(t, m, "offsets", "latest"), 3)
				eq(t, "commits.latest", get(t, m, "commits", "latest"), nil)
				eq(t, "latestBatch.timestampMs", get(t, m, "latestBatch", "timestampMs"), 1719290664278)
				eq(t, "latestBatch.time", get(t, m, "latestBatch", "time"), "2024-06-25T04:44:24.278Z")
				eq(t, "latestBatch.watermarkMs", get(t, m, "latestBatch", "watermarkMs"), 0)
				eq(t, "latestBatch.sources", js(t, get(t, m, "latestBatch", "sources")), "[3]")
				eq(t, "source kind", get(t, m, "sources", 0, "kind"), "long")
				// The conf object keeps the file's key order: compare the bytes.
				b, _ := json.Marshal(sum.LatestBatch.Conf)
				raw, _ := os.ReadFile(fixture(t, "checkpoint-version-4.0.0/hdfs/agg/offsets/3"))
				if !bytes.Contains(raw, b) {
					t.Errorf("conf %s is not the file's conf", b)
				}
				eq(t, "conf keys", len(sum.LatestBatch.Conf), 9)
				eq(t, "problems", js(t, get(t, m, "problems")), "[]")
			})
			t.Run("offsetId-commitId-inconsistent", func(t *testing.T) {
				s := be.open(t, fixture(t, "checkpoint-test-offsetId-commitId-inconsistent"))
				sum, err := Summarize(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				m := toJSON(t, sum)
				eq(t, "queryId", get(t, m, "queryId"), "d4358946-170c-49a7-823b-d8e4e9126616")
				eq(t, "batches", js(t, get(t, m, "offsets", "batches")), "[2,4]")
				eq(t, "ranges", js(t, get(t, m, "offsets", "ranges")), "[[2,2],[4,4]]")
				eq(t, "gaps", js(t, get(t, m, "offsets", "gaps")), "[[3,3]]")
				eq(t, "latestBatch.id", get(t, m, "latestBatch", "id"), 4)
				eq(t, "latestBatch.watermarkMs", get(t, m, "latestBatch", "watermarkMs"), 5000)
				eq(t, "latestBatch.time", get(t, m, "latestBatch", "time"), "2018-07-11T06:53:50.005Z")
				eq(t, "conf", js(t, get(t, m, "latestBatch", "conf")),
					`{"spark.sql.shuffle.partitions":"5","spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}`)

				l, err := Batches(ctx, s, BatchesOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Batches) != 2 || l.Batches[0].ID != 2 || l.Batches[1].ID != 4 || l.Batches[1].Committed {
					t.Errorf("batches = %+v", l.Batches)
				}
			})
			t.Run("4.0.0-checkpoint-v2-dedup", func(t *testing.T) {
				s := be.open(t, fixture(t, "checkpoint-version-4.0.0-checkpoint-v2/rocksdb/dedup"))
				sum, err := Summarize(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				m := toJSON(t, sum)
				eq(t, "metadata", get(t, m, "metadata", "status"), "missing")
				eq(t, "latestBatch.committed", get(t, m, "latestBatch", "committed"), true)
				eq(t, "latestCommit.version", get(t, m, "latestCommit", "version"), 2)
				ids := get(t, m, "latestCommit", "stateUniqueIds", "0").([]any)
				eq(t, "stateUniqueIds partitions", len(ids), 5)
				eq(t, "stateUniqueIds[0][0]", get(t, ids, 0, 0), "bf826c41-d5f6-4abb-bf56-379167c045cd")
				v, _ := sum.LatestBatch.Conf.Get("spark.sql.streaming.stateStore.providerClass")
				eq(t, "provider conf", v, "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")

				d, err := Batch(ctx, s, 3)
				if err != nil {
					t.Fatal(err)
				}
				if d.Commit == nil || d.Commit.Version != 2 || d.Offsets == nil || len(d.Offsets.Conf) != 11 {
					t.Errorf("batch 3 = %+v", d)
				}
			})
			t.Run("2.4.3-kafka", func(t *testing.T) {
				s := be.open(t, fixture(t, "checkpoint-version-2.4.3-kafka-include-headers-default"))
				sum, err := Summarize(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				m := toJSON(t, sum)
				src := get(t, m, "sources", 0)
				eq(t, "kind", get(t, src, "kind"), "kafka")
				eq(t, "topic", get(t, src, "kafka", "topics", 0, "topic"), "spark-test-topic-2b8619f5-d3c4-4c2d-b5d1-8d9d9458aa62")
				eq(t, "partitions", get(t, src, "kafka", "partitions"), 5)
				eq(t, "partition order", js(t, get(t, src, "kafka", "topics", 0, "partitions", 0)), `{"offset":3,"partition":0}`)
				eq(t, "initial offsets (binary file not saved)", get(t, src, "kafka", "initialOffsets", "present"), false)
				// The raw offset keeps Spark's hash-map key order.
				eq(t, "raw", js(t, sum.LatestBatch.Sources[0]), `{"spark-test-topic-2b8619f5-d3c4-4c2d-b5d1-8d9d9458aa62":{"2":3,"4":3,"1":3,"3":3,"0":3}}`)
			})
			t.Run("join2-operator-metadata", func(t *testing.T) {
				s := be.open(t, fixture(t, "checkpoint-version-4.0.0/hdfs/join2"))
				sum, err := Summarize(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				if len(sum.State.Operators) != 1 {
					t.Fatalf("operators = %+v", sum.State.Operators)
				}
				op := sum.State.Operators[0]
				if op.Name != "symmetricHashJoin" || op.Metadata == nil || len(op.Metadata.Stores) != 4 || op.Metadata.Stores[0].Partitions != 5 {
					t.Errorf("operator = %+v metadata %+v", op, op.Metadata)
				}
			})
		})
	}
}

// sinkTruth computes the live files of a sink log the simple way, with encoding/json over whole
// files, as an independent check of the streaming summary.
func sinkTruth(t *testing.T, dir string, batches ...string) (files, bytes int64) {
	t.Helper()
	type entry struct {
		Path   string `json:"path"`
		Size   int64  `json:"size"`
		Action string `json:"action"`
	}
	var all []entry
	deleted := map[string]bool{}
	for _, b := range batches {
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		sc.Scan() // v1
		for sc.Scan() {
			if sc.Text() == "" {
				continue
			}
			var e entry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			all = append(all, e)
			if e.Action == "delete" {
				deleted[e.Path] = true
			}
		}
	}
	for _, e := range all {
		if !deleted[e.Path] {
			files++
			bytes += e.Size
		}
	}
	return files, bytes
}

func TestConformanceSinkLog(t *testing.T) {
	dir := fixture(t, "file-sink-log-version-2.1.0")
	wantFiles, wantBytes := sinkTruth(t, dir, "7.compact", "8", "9")
	if wantFiles != 9 || wantBytes != 4500 {
		t.Fatalf("fixture truth: %d files, %d bytes; want 9 and 4500 (/a/b/1..9: 100+...+900)", wantFiles, wantBytes)
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			s := be.open(t, dir)
			target, err := Detect(ctx, s, false)
			if err != nil {
				t.Fatal(err)
			}
			if target.Kind != KindFileSinkLog || target.Dir != "" {
				t.Fatalf("Detect = %+v", target)
			}
			r, err := SinkLogSummary(ctx, s, target.Dir)
			if err != nil {
				t.Fatal(err)
			}
			m := toJSON(t, r)
			eq(t, "kind", get(t, m, "kind"), "file-sink-log")
			eq(t, "latest", get(t, m, "sinkLog", "latest"), 9)
			eq(t, "batches", js(t, get(t, m, "sinkLog", "batches")), "[7,8,9]")
			eq(t, "compacts", js(t, get(t, m, "sinkLog", "compacts")), "[7]")
			// One compact file, default 10: deriveCompactInterval(10, 7) = 8.
			eq(t, "compactInterval", get(t, m, "sinkLog", "compactInterval"), 8)
			eq(t, "validBatches", js(t, get(t, m, "sinkLog", "validBatches")), "[[7,9]]")
			eq(t, "files", get(t, m, "sinkLog", "files"), wantFiles)
			eq(t, "bytes", get(t, m, "sinkLog", "bytes"), wantBytes)
			eq(t, "entries", get(t, m, "sinkLog", "entries"), 11)
			eq(t, "deletes", get(t, m, "sinkLog", "deletes"), 1)
			eq(t, "problems", js(t, get(t, m, "problems")), "[]")
		})
	}
}

// TestS3SameAsMem runs the in-memory scenarios on S3 and requires byte-identical JSON (but for
// the location), so nothing in inspect depends on the backend's listing quirks.
func TestS3SameAsMem(t *testing.T) {
	s3 := storetest.S3(t)
	fs := kafkaCheckpoint()
	fs["offsets/.3.8c2a5c3c-9a2b-4e77-bb8f-0f4f5e2a7b11.tmp"] = "partial"
	fs["commits/.7.crc"] = "c"
	fs["state/1/0/3_bf826c41-d5f6-4abb-bf56-379167c045cd.zip"] = "zip"
	fs["state/1/0/SSTs/000008-3f1cbbbe-6b1c-4a0b-9c0b-4fb2a4b9e1ea.sst"] = "sst"
	write(t, s3, fs)
	mem := memStore(t, fs)
	same := func(what string, a, b any) {
		t.Helper()
		ja, jb := toJSON(t, a), toJSON(t, b)
		ja["uri"], jb["uri"] = "", ""
		if x, y := js(t, ja), js(t, jb); x != y {
			t.Errorf("%s differs:\nmem %s\ns3  %s", what, x, y)
		}
	}
	for _, st := range []storage.Store{mem, s3} {
		if tg, err := Detect(ctx, st, false); err != nil || tg.Kind != KindCheckpoint {
			t.Fatalf("Detect = %+v, %v", tg, err)
		}
	}
	a, err := Summarize(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Summarize(ctx, s3)
	if err != nil {
		t.Fatal(err)
	}
	same("summary", a, b)
	if len(b.Leftovers.Temps) != 1 || len(b.Leftovers.OrphanCRCs) != 1 || len(b.State.Operators) != 2 {
		t.Errorf("s3 summary: leftovers %+v, operators %+v", b.Leftovers, b.State.Operators)
	}
	la, err := Batches(ctx, mem, BatchesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := Batches(ctx, s3, BatchesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	same("batches", la, lb)
	da, err := Batch(ctx, mem, 1)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Batch(ctx, s3, 1)
	if err != nil {
		t.Fatal(err)
	}
	same("batch 1", da, db)
}

// TestConformanceKafkaInitialOffsets puts Spark's saved sources/<i>/0 fixtures under a checkpoint:
// the 2.1.0 form (a length byte, no header) parses; the future version is a Problem, not a failure.
func TestConformanceKafkaInitialOffsets(t *testing.T) {
	dir := conformanceDir(t)
	for _, tc := range []struct {
		file, topic, problem string
	}{
		{"kafka-source-initial-offset-version-2.1.0.bin", "kafka-initial-offset-2-1-0", ""},
		{"kafka-source-initial-offset-future-version.bin", "", "unsupported-version"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			fs := files{
				"offsets/0":   offsets(1, 0, nil, `{"kafka-initial-offset-2-1-0":{"0":5,"1":5,"2":5}}`),
				"sources/0/0": string(data),
			}
			sum, err := Summarize(ctx, memStore(t, fs))
			if err != nil {
				t.Fatal(err)
			}
			init := sum.Sources[0].Kafka.InitialOffsets
			if !init.Present {
				t.Fatal("initial offsets not seen")
			}
			if tc.problem != "" {
				if init.Problem == nil || init.Problem.Kind != tc.problem || len(sum.Problems) != 1 {
					t.Errorf("problem = %+v, summary problems %+v", init.Problem, sum.Problems)
				}
				return
			}
			if init.Problem != nil || len(init.Topics) != 1 || init.Topics[0].Topic != tc.topic || len(init.Topics[0].Partitions) != 3 {
				t.Errorf("initial offsets = %+v", init)
			}
			l, err := Batches(ctx, memStore(t, fs), BatchesOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// partition p starts at p and ends at 5.
			if r := l.Batches[0].Records; r == nil || *r != 5+4+3 {
				t.Errorf("batch 0 records = %v", r)
			}
		})
	}
}
