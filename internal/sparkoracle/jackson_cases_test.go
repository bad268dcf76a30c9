package sparkoracle

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/scenario"
)

// jacksonCases truncate a JSON document of the checkpoint at the points where Jackson's parser
// says different things at the end of input: in a field name, before or after a colon, after a
// value, after a comma, in a number, in a string, in a nested object, past Jackson's 500-char
// source snippet. The offsets file's metadata line and the commit are parsed from a String (3.5
// quotes it in the location), the metadata file from a Reader. Each is batches 0..7 of offsets
// and 0..6 of commits with one file cut.
func jacksonCases() []oracleCase {
	var out []oracleCase
	add := func(name string, cut func(b *scenario.Builder)) {
		b := scenario.NewBuilder("jackson-" + name)
		b.Metadata()
		b.KafkaInitial(0, scenario.KafkaOffsets("events", 0, 0, 0))
		for id := int64(0); id <= 7; id++ {
			b.Offsets(id, scenario.Kafka("events", id, 3))
		}
		for id := int64(0); id <= 6; id++ {
			b.Commit(id)
		}
		cut(b)
		out = append(out, oracleCase{name: "jackson-" + name, mode: "sync", checkpoint: "jackson:" + name,
			sink: "console", trigger: "availableNow", build: b})
	}
	// offsets/7: "v1\n" and a prefix of its metadata line, nothing after it.
	offsetsCut := func(name string, prefix func(meta string) string) {
		add("offsets-"+name, func(b *scenario.Builder) {
			full := b.OffsetsJSON(7, scenario.Kafka("events", 7, 3))
			meta := strings.Split(full, "\n")[1]
			b.Raw("offsets/7", "v1\n"+prefix(meta))
		})
	}
	upTo := func(s string) func(string) string {
		return func(meta string) string {
			i := strings.Index(meta, s)
			if i < 0 {
				panic(fmt.Sprintf("%q not in %s", s, meta))
			}
			return meta[:i+len(s)]
		}
	}
	offsetsCut("open", upTo(`{`))
	offsetsCut("name-open", upTo(`{"`))
	offsetsCut("name", upTo(`{"batchWatermarkMs"`))
	offsetsCut("colon", upTo(`{"batchWatermarkMs":`))
	offsetsCut("value", upTo(`{"batchWatermarkMs":0`))
	offsetsCut("comma", upTo(`{"batchWatermarkMs":0,`))
	offsetsCut("number", func(meta string) string { return upTo(`"batchTimestampMs":`)(meta) + "17" })
	offsetsCut("nested-open", upTo(`"conf":{`))
	offsetsCut("string", upTo(`"conf":{"spark.sql.streaming.stateStore.providerClass":"org.apa`))
	offsetsCut("long", func(meta string) string { return meta[:520] })
	offsetsCut("nested-value", func(meta string) string { return meta[:len(meta)-1] })
	// commits/6: a prefix of {"nextBatchWatermarkMs":0}.
	for name, prefix := range map[string]string{"name": `{"nextBatchWatermarkMs`, "value": `{"nextBatchWatermarkMs":0`} {
		add("commit-"+name, func(b *scenario.Builder) { b.Raw("commits/6", "v1\n"+prefix) })
	}
	// metadata: a prefix of {"id":"<uuid>"}, read from a Reader.
	add("metadata-open", func(b *scenario.Builder) { b.Raw("metadata", `{`) })
	add("metadata-name", func(b *scenario.Builder) { b.Raw("metadata", `{"id"`) })
	add("metadata-string", func(b *scenario.Builder) { b.Raw("metadata", `{"id":"`+b.QueryID()[:8]) })
	add("metadata-value", func(b *scenario.Builder) { b.Raw("metadata", `{"id":"`+b.QueryID()+`"`) })
	return out
}
