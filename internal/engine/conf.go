package engine

import (
	"strconv"

	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Spark 3.5's offsets conf. OffsetSeqMetadata.relevantSQLConfs in Spark 3.5
// (sql/core/.../execution/streaming/OffsetSeq.scala, branch-3.5) is
//
//	SHUFFLE_PARTITIONS, STATE_STORE_PROVIDER_CLASS, STREAMING_MULTIPLE_WATERMARK_POLICY,
//	FLATMAPGROUPSWITHSTATE_STATE_FORMAT_VERSION, STREAMING_AGGREGATION_STATE_FORMAT_VERSION,
//	STREAMING_JOIN_STATE_FORMAT_VERSION, STATE_STORE_COMPRESSION_CODEC,
//	STATE_STORE_ROCKSDB_FORMAT_VERSION, STATEFUL_OPERATOR_USE_STRICT_DISTRIBUTION
//
// (nine keys; PRUNE_FILTERS_CAN_PRUNE_STREAMING_SUBPLAN and STREAMING_STATE_STORE_ENCODING_FORMAT
// arrived in 4.0). Every one is recorded for every query, stateless or not, with the session value
// (`relevantSQLConfs.map(c => c.key -> sessionConf.get(c.key)).toMap`). The values below are the
// 3.5 defaults. The key order is the iteration order of the Scala 2.12 immutable Map built by
// .toMap (a HashTrieMap for more than four keys), which depends only on the key set; it is taken
// from Spark 3.5.1's own fixture
// sql/core/src/test/resources/structured-streaming/checkpoint-version-3.5.1-streaming-deduplication/offsets/0
// (saved in testdata/spark-3.5.1-offsets-0 and compared byte for byte in conf_test.go; that
// fixture sets spark.sql.shuffle.partitions=5, the default is 200).
var sparkConf35 = []logformat.KV{
	{Key: "spark.sql.streaming.stateStore.providerClass", Value: "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"},
	{Key: "spark.sql.streaming.join.stateFormatVersion", Value: "2"},
	{Key: "spark.sql.streaming.stateStore.compression.codec", Value: "lz4"},
	{Key: "spark.sql.streaming.stateStore.rocksdb.formatVersion", Value: "5"},
	{Key: "spark.sql.streaming.statefulOperator.useStrictDistribution", Value: "true"},
	{Key: "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion", Value: "2"},
	{Key: "spark.sql.streaming.multipleWatermarkPolicy", Value: "min"},
	{Key: "spark.sql.streaming.aggregation.stateFormatVersion", Value: "2"},
	{Key: "spark.sql.shuffle.partitions", Value: "200"},
}

// legacyConfDefaults35 is 3.5's relevantSQLConfDefaultValues: what setSessionConf uses for a key
// missing from an old checkpoint's offsets file (other missing keys keep the session value).
var legacyConfDefaults35 = map[string]string{
	"spark.sql.streaming.multipleWatermarkPolicy":                   "min",
	"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "1",
	"spark.sql.streaming.aggregation.stateFormatVersion":            "1",
	"spark.sql.streaming.join.stateFormatVersion":                   "1",
	"spark.sql.streaming.stateStore.compression.codec":              "lz4",
	"spark.sql.streaming.statefulOperator.useStrictDistribution":    "false",
}

// SparkConf35 returns the conf a new Spark 3.5 query records, with spark.sql.shuffle.partitions
// set to shufflePartitions.
func SparkConf35(shufflePartitions int) []logformat.KV {
	out := make([]logformat.KV, len(sparkConf35))
	copy(out, sparkConf35)
	for i := range out {
		if out[i].Key == "spark.sql.shuffle.partitions" {
			out[i].Value = strconv.Itoa(shufflePartitions)
		}
	}
	return out
}

// restoredConf is the conf the next offsets files record after a restart from an offsets file
// with metadata m (OffsetSeqMetadata.setSessionConf, then the session values are written again):
// recorded values win, missing keys take 3.5's legacy default or keep the session value.
func restoredConf(session []logformat.KV, m *logformat.OffsetMetadata) []logformat.KV {
	out := make([]logformat.KV, len(session))
	copy(out, session)
	if m == nil {
		return out
	}
	recorded := map[string]string{}
	for _, kv := range m.Conf {
		recorded[kv.Key] = kv.Value
	}
	for i := range out {
		if v, ok := recorded[out[i].Key]; ok {
			out[i].Value = v
		} else if d, ok := legacyConfDefaults35[out[i].Key]; ok {
			out[i].Value = d
		}
	}
	return out
}
