package scenario

// Scenarios for ckpt doctor: conditions the restart decision table does not cover but doctor
// reports (gaps further back, leftovers of purged batches, retention, damage only --deep finds),
// so that every doctor code has a checkpoint that produces it.

func init() {
	Register(
		Scenario{
			Name: "doctor-async-gaps-behind",
			Doc:  "Async progress tracking once left gaps (offsets = commits = [0, 3, 7]), then batch 8 ran with every batch persisted: the latest two offsets files are consecutive, so either engine restarts.",
			Tags: []string{"doctor", "async"},
			Build: func(b *Builder) {
				std(b, []int64{0, 3, 7, 8}, []int64{0, 3, 7, 8})
			},
		},
		Scenario{
			Name: "doctor-purged-leftovers",
			Doc:  "Batches 0..2 were purged by a tool that ignores Hadoop checksums: .0.crc..2.crc stay in offsets/ and commits/, and commits/ has two temporary files of interrupted writes.",
			Tags: []string{"doctor", "leftovers"},
			Build: func(b *Builder) {
				std(b, ids(3, 9), ids(3, 9))
				for _, dir := range []string{"offsets", "commits"} {
					for _, id := range []string{"0", "1", "2"} {
						b.Raw(dir+"/."+id+".crc", "crc\x00\x00\x02\x00\x00\x00\x00")
					}
				}
				b.Raw("commits/.5.0c9d6e2f-5a41-4b8e-9f3a-7d2c1b0a9e8f.tmp", "v1\n")
				b.Raw("commits/.6.1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b.tmp", "")
			},
		},
		Scenario{
			Name: "doctor-metadata-crc",
			Doc:  "metadata was deleted but its Hadoop checksum .metadata.crc was not: Spark 3.5 writes a new metadata file on start, where the orphan checksum is in the way.",
			Tags: []string{"doctor", "metadata", "leftovers"},
			Build: func(b *Builder) {
				std(b, ids(0, 3), ids(0, 3))
				b.Remove("metadata")
				b.Raw(".metadata.crc", "crc\x00\x00\x02\x00\x00\x00\x00")
			},
		},
		Scenario{
			Name:  "doctor-retention-unpurged",
			Doc:   "1,200 batches of offsets and commits kept (minBatchesToRetain raised, or purging fails): listings get slow on object stores.",
			Tags:  []string{"doctor", "retention"},
			Large: true, // 2,400 files: built in memory only
			Build: func(b *Builder) {
				std(b, ids(0, 1199), ids(0, 1199))
			},
		},
		Scenario{
			Name: "doctor-retention-short",
			Doc:  "A query at batch 500 keeps only batches 480..500: minBatchesToRetain lowered or files deleted; rollback and replay reach back only 20 batches.",
			Tags: []string{"doctor", "retention"},
			Build: func(b *Builder) {
				std(b, ids(480, 500), ids(480, 500))
			},
		},
		Scenario{
			Name: "doctor-holes",
			Doc:  "Files deleted in the middle of the logs: offsets 4 and 5 and commits 8 and 9 are gone, the latest batches are intact.",
			Tags: []string{"doctor", "retention"},
			Build: func(b *Builder) {
				std(b, join(ids(0, 3), ids(6, 12)), join(ids(0, 7), ids(10, 12)))
			},
		},
		Scenario{
			Name: "doctor-deep-old-commit-v2",
			Doc:  "commits/0..3 are checkpoint format v2 (Spark master with checkpointFormatVersion=2), commits/4..7 v1: Spark 3.5 restarts from the latest files, but --deep finds the older v2 commits it cannot read.",
			Tags: []string{"doctor", "deep", "version"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(4, 7))
				for id := int64(0); id <= 3; id++ {
					b.CommitV2(id, 5)
				}
			},
		},
		Scenario{
			Name: "doctor-deep-damage",
			Doc:  "Damage only reading every file finds: offsets/3 truncated, offsets/5 with a future version header, commits/2 not JSON, and offsets 0..1 written by a query with two sources.",
			Tags: []string{"doctor", "deep", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 9), ids(0, 9))
				for _, id := range []int64{0, 1} {
					b.Offsets(id, Kafka(topic, id, 3), FileSource(id))
				}
				b.Raw("offsets/3", b.OffsetsJSON(3, kafka3(3)...)[:50])
				b.Raw("offsets/5", "v9"+b.OffsetsJSON(5, kafka3(5)...)[2:])
				b.Raw("commits/2", "v1\n{nextBatchWatermarkMs:0}")
			},
		},
	)
}
