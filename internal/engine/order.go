// The key order of the Kafka offset JSON the engine writes.

package engine

import (
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Spark writes a Kafka offset as its Scala build's mutable.HashMap iterates (JsonUtils
// .partitionOffsets): Scala 2.12 for 3.x (`{"t":{"2":5,"1":5,"0":5}}`), 2.13 for 4.x
// (`{"t":{"0":5,"1":5,"2":5}}`). Spark compares offsets by their JSON text (Offset.equals), so a
// restart on a release whose order differs from the checkpoint's sees "new data" where there is
// none and runs one empty batch. The engine therefore writes the order of the release that will
// read the checkpoint.

// scala213 says whether release (valid for recovery.ValidateSparkVersion, or "") writes Scala
// 2.13's order: 4.0 and later, and master. 3.x's "_2.13" builds are not the default build.
func scala213(release string) bool {
	v := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(release)), "v")
	if v == "master" {
		return true
	}
	major, err := strconv.Atoi(strings.Split(v, ".")[0])
	return err == nil && major >= 4
}

// checkOrderVersion validates Options.SparkVersion.
func checkOrderVersion(v string) error {
	if v == "" {
		return nil
	}
	return recovery.ValidateSparkVersion(v)
}

// orderOf tells which order a Kafka offset JSON of a checkpoint was written in: scala213 and
// known; not known when both orders give the same text (one partition per topic, one topic) or
// neither does (not Spark's writing).
func orderOf(k logformat.KafkaOffsets) (scala213, known bool) {
	m := k.Map()
	text := k.JSON()
	is212 := logformat.NewKafkaOffsets(m).JSON() == text
	is213 := logformat.NewKafkaOffsetsScala213(m).JSON() == text
	if is212 == is213 {
		return false, false
	}
	return is213, true
}

// ordered is k in the key order the engine writes.
func (e *Engine) ordered(k logformat.KafkaOffsets) logformat.KafkaOffsets {
	if !e.scala213 || len(k.Topics) == 0 {
		return k
	}
	return logformat.NewKafkaOffsetsScala213(k.Map())
}
