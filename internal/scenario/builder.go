// Package scenario is the corpus of hand-designed checkpoints that ckpt's
// tests run on: every row of the restart decision table, corrupt and
// too-new files, async-progress-tracking gap patterns, Kafka and file
// sources, leftovers and retention.
//
// A Scenario builds its files into any storage.Store, so the same corpus
// runs on Mem, Local and S3. Files are Spark-faithful: offsets files in the
// Spark 3.5 form (conf keys in the order of a real file), Kafka offset JSON,
// commit files as CommitLog writes them.
//
// # Adding scenarios
//
// Scenarios register themselves from an init function, one slice per file,
// so that features add theirs without editing a shared list:
//
//	func init() {
//		scenario.Register(scenario.Scenario{
//			Name: "my-case",
//			Doc:  "what it models and what Spark does with it",
//			Build: func(b *scenario.Builder) {
//				b.Metadata()
//				for id := int64(0); id <= 3; id++ {
//					b.Offsets(id, scenario.Kafka("events", id, 3))
//				}
//				b.Commits(0, 2)            // commits/0..2
//				b.Raw("offsets/4", "")     // any file, exact bytes
//			},
//		})
//	}
//
// `go run ./internal/scenario/gen` writes every scenario to
// testdata/scenarios/<name>/ for the CLI tests.
package scenario

import (
	"context"
	"crypto/sha1"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// BaseTimestampMs is the batchTimestampMs of batch 0; batch N is a minute
// later per batch, so files are deterministic.
const BaseTimestampMs int64 = 1733000000000

// Builder accumulates the files of one checkpoint. Methods return the
// Builder so calls chain; later calls replace earlier files of the same
// path.
type Builder struct {
	name  string
	files map[string][]byte
	conf  []confKV
	// Watermark, when set, gives each offsets file's batchWatermarkMs.
	Watermark func(batch int64) int64
}

type confKV struct{ k, v string }

// NewBuilder returns an empty builder. name seeds the query id.
func NewBuilder(name string) *Builder {
	return &Builder{name: name, files: map[string][]byte{}, conf: Spark35Conf}
}

// Spark35Conf is the offset-log conf of a Spark 3.5-era query with the HDFS
// state store, in the key order of a real file
// (checkpoint-version-4.0.0/hdfs/agg/offsets/3, written by a 3.5-era build
// with these 9 keys), with the default 200 shuffle partitions.
var Spark35Conf = []confKV{
	{"spark.sql.streaming.stateStore.providerClass", "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"},
	{"spark.sql.streaming.stateStore.rocksdb.formatVersion", "5"},
	{"spark.sql.streaming.statefulOperator.useStrictDistribution", "true"},
	{"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", "2"},
	{"spark.sql.streaming.multipleWatermarkPolicy", "min"},
	{"spark.sql.streaming.aggregation.stateFormatVersion", "2"},
	{"spark.sql.shuffle.partitions", "200"},
	{"spark.sql.streaming.join.stateFormatVersion", "2"},
	{"spark.sql.streaming.stateStore.compression.codec", "lz4"},
}

// NoConf makes offsets files without "conf", as Spark 2.1 wrote them.
func (b *Builder) NoConf() *Builder { b.conf = nil; return b }

// QueryID is the deterministic query id of the builder's checkpoint.
func (b *Builder) QueryID() string {
	h := sha1.Sum([]byte("ckpt-scenario/" + b.name))
	h[6] = h[6]&0x0f | 0x40 // version 4
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Metadata writes the root metadata file ({"id":"<uuid>"}, no newline).
func (b *Builder) Metadata() *Builder {
	return b.Raw("metadata", `{"id":"`+b.QueryID()+`"}`)
}

// OffsetsJSON renders offsets/N's bytes: v1, the metadata line, one line per
// source, no trailing newline.
func (b *Builder) OffsetsJSON(batch int64, sources ...string) string {
	var sb strings.Builder
	sb.WriteString("v1\n")
	wm := int64(0)
	if b.Watermark != nil {
		wm = b.Watermark(batch)
	}
	fmt.Fprintf(&sb, `{"batchWatermarkMs":%d,"batchTimestampMs":%d`, wm, BaseTimestampMs+batch*60000)
	if b.conf != nil {
		sb.WriteString(`,"conf":{`)
		for i, kv := range b.conf {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "%q:%q", kv.k, kv.v)
		}
		sb.WriteByte('}')
	}
	sb.WriteByte('}')
	for _, s := range sources {
		sb.WriteByte('\n')
		sb.WriteString(s)
	}
	return sb.String()
}

// Offsets writes offsets/batch with one line per source (see Kafka,
// FileSource, Long, Void).
func (b *Builder) Offsets(batch int64, sources ...string) *Builder {
	return b.Raw(fmt.Sprintf("offsets/%d", batch), b.OffsetsJSON(batch, sources...))
}

// OffsetsRange writes offsets/from..to, each from sources(batch).
func (b *Builder) OffsetsRange(from, to int64, sources func(batch int64) []string) *Builder {
	for id := from; id <= to; id++ {
		b.Offsets(id, sources(id)...)
	}
	return b
}

// Commit writes commits/batch as Spark 3.x writes it:
// v1\n{"nextBatchWatermarkMs":<watermark of the next batch>}.
func (b *Builder) Commit(batch int64) *Builder {
	wm := int64(0)
	if b.Watermark != nil {
		wm = b.Watermark(batch + 1)
	}
	return b.Raw(fmt.Sprintf("commits/%d", batch), fmt.Sprintf("v1\n{\"nextBatchWatermarkMs\":%d}", wm))
}

// Commits writes commits/from..to.
func (b *Builder) Commits(from, to int64) *Builder {
	for id := from; id <= to; id++ {
		b.Commit(id)
	}
	return b
}

// CommitV2 writes commits/batch in checkpoint format v2 (Spark 4.0 with
// stateStore.checkpointFormatVersion=2): v2 and the state store unique ids
// of operator 0's partitions.
func (b *Builder) CommitV2(batch int64, partitions int) *Builder {
	return b.Raw(fmt.Sprintf("commits/%d", batch), "v2\n"+commitV2JSON(b, batch, partitions))
}

func commitV2JSON(b *Builder, batch int64, partitions int) string {
	var sb strings.Builder
	sb.WriteString(`{"nextBatchWatermarkMs":0,"stateUniqueIds":{"0":[`)
	for p := 0; p < partitions; p++ {
		if p > 0 {
			sb.WriteByte(',')
		}
		h := sha1.Sum([]byte(fmt.Sprintf("%s/%d/%d", b.name, batch, p)))
		fmt.Fprintf(&sb, `["%x-%x-4%x-8%x-%x"]`, h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	}
	sb.WriteString(`]}}`)
	return sb.String()
}

// KafkaInitial writes sources/<source>/0 as KafkaSourceInitialOffsetWriter
// does: a zero byte, v1, the offsets JSON.
func (b *Builder) KafkaInitial(source int, offsetsJSON string) *Builder {
	return b.Raw(fmt.Sprintf("sources/%d/0", source), "\x00v1\n"+offsetsJSON)
}

// Raw writes path with exactly data.
func (b *Builder) Raw(path, data string) *Builder {
	b.files[path] = []byte(data)
	return b
}

// Remove drops a file added earlier.
func (b *Builder) Remove(path string) *Builder {
	delete(b.files, path)
	return b
}

// Files returns the built files: store-relative path → bytes.
func (b *Builder) Files() map[string][]byte { return b.files }

// Paths returns the file paths, sorted.
func (b *Builder) Paths() []string {
	ps := make([]string, 0, len(b.files))
	for p := range b.files {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// WriteTo writes every file into s.
func (b *Builder) WriteTo(ctx context.Context, s storage.Store) error {
	for _, p := range b.Paths() {
		if err := s.WriteFile(ctx, p, b.files[p]); err != nil {
			return fmt.Errorf("scenario %s: %w", b.name, err)
		}
	}
	return nil
}

// Kafka is a Kafka source offset for topic at batch: partition p's next
// offset is (batch+1)*(10+p), so a batch reads 10+p records from partition
// p. Partitions come out in ascending order, as Spark 4 (Scala 2.13) writes
// small partition numbers.
func Kafka(topic string, batch int64, partitions int) string {
	offs := make([]int64, partitions)
	for p := range offs {
		offs[p] = (batch + 1) * int64(10+p)
	}
	return KafkaOffsets(topic, offs...)
}

// KafkaOffsets is {"topic":{"0":o0,"1":o1,…}}.
func KafkaOffsets(topic string, offsets ...int64) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "{%q:{", topic)
	for p, o := range offsets {
		if p > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"%d":%d`, p, o)
	}
	sb.WriteString("}}")
	return sb.String()
}

// FileSource is a file source offset {"logOffset":n}.
func FileSource(logOffset int64) string {
	return `{"logOffset":` + strconv.FormatInt(logOffset, 10) + "}"
}

// Long is a LongOffset (memory and rate sources): the bare number.
func Long(n int64) string { return strconv.FormatInt(n, 10) }

// Void is the offset of a source that had no offset yet.
const Void = "-"
