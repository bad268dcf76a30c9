package engine

import (
	"fmt"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// The conf the engine records is Spark 3.5.1's own, key for key and in its order: with the
// fixture's spark.sql.shuffle.partitions=5 the metadata line is byte-identical.
func TestSparkConf35MatchesSpark351(t *testing.T) {
	m := &logformat.OffsetMetadata{BatchWatermarkMs: 0, BatchTimestampMs: 1719278977158, Conf: SparkConf35(5)}
	if got, want := m.JSON(), spark351Offsets.Metadata.JSON(); got != want {
		t.Errorf("metadata\n got %s\nwant %s", got, want)
	}
	if got := SparkConf35(200)[8]; got.Key != "spark.sql.shuffle.partitions" || got.Value != "200" {
		t.Errorf("default shuffle partitions: %v", got)
	}
}

func TestRestoredConf(t *testing.T) {
	// A Spark 2.4-era file: five keys recorded; the missing ones take 3.5's legacy defaults or
	// keep the session value.
	old := &logformat.OffsetMetadata{Conf: []logformat.KV{
		{Key: "spark.sql.streaming.stateStore.providerClass", Value: "X"},
		{Key: "spark.sql.shuffle.partitions", Value: "5"},
	}}
	got := map[string]string{}
	for _, kv := range restoredConf(SparkConf35(200), old) {
		got[kv.Key] = kv.Value
	}
	want := map[string]string{
		"spark.sql.streaming.stateStore.providerClass":                  "X",
		"spark.sql.shuffle.partitions":                                  "5",
		"spark.sql.streaming.join.stateFormatVersion":                   "1",
		"spark.sql.streaming.stateStore.compression.codec":              "lz4",
		"spark.sql.streaming.stateStore.rocksdb.formatVersion":          "5",
		"spark.sql.streaming.statefulOperator.useStrictDistribution":    "false",
		"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "1",
		"spark.sql.streaming.multipleWatermarkPolicy":                   "min",
		"spark.sql.streaming.aggregation.stateFormatVersion":            "1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}
