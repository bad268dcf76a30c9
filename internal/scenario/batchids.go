package scenario

import "math"

// Scenarios of batch ids Spark's normal run never writes (issue 13 §3, issue 15): a gap that
// skips data, ids near 2^63, and names that are not an id's canonical spelling.

func init() {
	Register(
		Scenario{
			Name: "offsets-gap-uncommitted",
			Doc:  "offsets 0..3, 5, 6 and commits 0..3 (offsets/4 and commits 4, 5 deleted): sync fails 'batch 4 doesn't exist' only if offsets/5 is missing; here offsets/5 exists, so batch 6 re-runs from O[5] and batches 4..5 (66 Kafka records from O[3]) are never run again.",
			Tags: []string{"recovery", "doctor", "skipped"},
			Build: func(b *Builder) {
				std(b, join(ids(0, 3), []int64{5, 6}), ids(0, 3))
			},
		},
		Scenario{
			Name:     "huge-batch-id",
			Doc:      "offsets/9000000000000000000 copied in next to offsets 0..7 (commits 0..4): Spark 3.4+ lists every id between 0 and 9e18 and fails with 'More than Int.MaxValue elements.'; 3.3 and older fail 'batch 8999999999999999999 doesn't exist'. ckpt must plan it in constant memory.",
			Tags:     []string{"recovery", "doctor", "batch-ids"},
			Variants: []string{"sync@3.3"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 4))
				b.Raw("offsets/9000000000000000000", string(b.Files()["offsets/7"]))
			},
		},
		Scenario{
			Name: "max-batch-id",
			Doc:  "offsets/9223372036854775807 and commits/9223372036854775807 only (2^63-1, renamed by hand): the restart's next batch id is latest + 1 on a Scala Long, which wraps to -9223372036854775808.",
			Tags: []string{"recovery", "doctor", "batch-ids"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
				b.Offsets(7, kafka3(7)...)
				b.Commit(7)
				b.Raw("offsets/"+Long(math.MaxInt64), string(b.Files()["offsets/7"]))
				b.Raw("commits/"+Long(math.MaxInt64), string(b.Files()["commits/7"]))
				b.Remove("offsets/7")
				b.Remove("commits/7")
			},
		},
		Scenario{
			Name:     "max-batch-id-committed",
			Doc:      "offsets/9223372036854775806 and 9223372036854775807, commits/9223372036854775807 (2^63-2 and 2^63-1): the sync restart runs batch -9223372036854775808 (offsets, output and commit written), then Spark 3.4 and 3.5 list offsets/ as every id from -2^63 to 2^63-1 and stop with 'More than Int.MaxValue elements.'; 4.0.0 and 4.1.1 run the batch and end an availableNow query cleanly; 3.3 and older take the listing's max and go on.",
			Tags:     []string{"recovery", "batch-ids"},
			Variants: []string{"sync@3.3"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
				b.Offsets(6, kafka3(6)...)
				b.Offsets(7, kafka3(7)...)
				b.Commit(7)
				b.Raw("offsets/"+Long(math.MaxInt64-1), string(b.Files()["offsets/6"]))
				b.Raw("offsets/"+Long(math.MaxInt64), string(b.Files()["offsets/7"]))
				b.Raw("commits/"+Long(math.MaxInt64), string(b.Files()["commits/7"]))
				b.Remove("offsets/6")
				b.Remove("offsets/7")
				b.Remove("commits/7")
			},
		},
	)
}

func init() {
	Register(
		Scenario{
			Name:     "kafka-offset-backwards",
			Doc:      "offsets/7 records partition 1 below its offset in offsets/6 (an edit by hand): the re-run of batch 7 goes backwards, and Spark fails while planning it (failOnDataLoss=true), no broker needed: 3.5 'Partition events-1's offset was changed from 77 to 5', 4.x KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED.",
			Tags:     []string{"recovery", "kafka"},
			Variants: []string{"sync@4.0"},
			Build: func(b *Builder) {
				std(b, ids(0, 6), ids(0, 6))
				b.Offsets(7, KafkaOffsets(topic, 80, 5, 96))
			},
		},
	)
}

func init() {
	Register(
		Scenario{
			Name:     "offsets-name-padded",
			Doc:      "The latest offsets file is named 007 (copied in by hand): Spark lists it as batch 7 ('007'.toLong) and opens offsets/7, which does not exist. 3.4+ fail with a FileNotFoundException from getLatest; 3.3 and older with 'failed to read log file for batch 7'.",
			Tags:     []string{"recovery", "doctor", "batch-ids"},
			Variants: []string{"sync@3.3"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("offsets/007", string(b.Files()["offsets/7"]))
				b.Remove("offsets/7")
			},
		},
		Scenario{
			Name: "offsets-name-plus-previous",
			Doc:  "offsets/6 is named +6: Spark lists it as batch 6 but get(6) opens offsets/6, finds nothing and returns None, so the sync restart fails 'batch 6 doesn't exist'.",
			Tags: []string{"recovery", "doctor", "batch-ids"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("offsets/+6", string(b.Files()["offsets/6"]))
				b.Remove("offsets/6")
			},
		},
		Scenario{
			Name:     "offsets-numeric-directory",
			Doc:      "A directory offsets/8/ next to offsets 0..7 (commits 0..7): Spark 3.5 lists it as batch 8, its newest, and fails reading it; 4.0 and later list files only (SPARK-46339) and resume at batch 8.",
			Tags:     []string{"recovery", "doctor", "batch-ids"},
			Variants: []string{"sync@3.3", "sync@4.0"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 7))
				b.Raw("offsets/8/part-0", "x")
			},
		},
	)
}

func init() {
	Register(
		Scenario{
			Name: "metadata-id-not-uuid",
			Doc:  "metadata holds {\"id\":\"orders-query\"}, not a UUID (written by hand): StreamExecution's UUID.fromString fails when the query is created, 'Invalid UUID string: orders-query'.",
			Tags: []string{"recovery", "doctor", "metadata"},
			Build: func(b *Builder) {
				std(b, ids(0, 3), ids(0, 3))
				b.Raw("metadata", `{"id":"orders-query"}`)
			},
		},
	)
}

func init() {
	Register(
		Scenario{
			Name:     "kafka-initial-ahead",
			Doc:      "sources/0/0 records partition 0 at 13 while offsets/0 ends it at 10 (the initial offsets file was rewritten by hand): the re-run of batch 0 reads from sources/0/0 to offsets/0, goes backwards, and Spark fails while planning it: 'Partition events-0's offset was changed from 13 to 10' (observed on Spark 3.5).",
			Tags:     []string{"recovery", "kafka"},
			Variants: []string{"sync@4.0"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 13, 0, 0))
				b.Offsets(0, KafkaOffsets(topic, 10, 11, 12))
			},
		},
	)
}
