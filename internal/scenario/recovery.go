package scenario

// Scenarios for the recovery planner: every row of the restart decision
// table (spark-semantics.md §5.3), the async gap patterns (§6.2, §6.5,
// §6.6), corrupt and too-new files, sources, leftovers and retention.

const topic = "events"

// kafka3 is the usual single Kafka source with 3 partitions.
func kafka3(batch int64) []string { return []string{Kafka(topic, batch, 3)} }

// std writes metadata, offsets for ids and commits for commitIDs with one
// Kafka source and its initial offsets file.
func std(b *Builder, offsets, commits []int64) {
	b.Metadata()
	b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
	for _, id := range offsets {
		b.Offsets(id, kafka3(id)...)
	}
	for _, id := range commits {
		b.Commit(id)
	}
}

func ids(from, to int64) []int64 {
	var out []int64
	for id := from; id <= to; id++ {
		out = append(out, id)
	}
	return out
}

func join(parts ...[]int64) []int64 {
	var out []int64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func init() {
	Register(
		// --- §5.3 decision table -------------------------------------------
		Scenario{
			Name:  "fresh-empty",
			Doc:   "An empty checkpoint directory: a new query starts at batch 0.",
			Tags:  []string{"recovery", "table"},
			Build: func(*Builder) {},
		},
		Scenario{
			Name: "fresh-offsets-temp",
			Doc:  "The query died while writing its first offsets file: metadata and offsets/.0.<uuid>.tmp, no batch. Batch 0 is new; Spark 4.1 first requires offsets/ to be empty and refuses the leftover.",
			Tags: []string{"recovery", "table", "leftovers"},
			Build: func(b *Builder) {
				b.Metadata()
				b.Raw("offsets/.0.2b0c7f5e-8d1a-4e3b-9c6f-5a4d3e2f1b0a.tmp", "v1\n")
			},
			Variants: []string{"sync@4.0", "sync@4.1"},
		},
		Scenario{
			Name: "fresh-metadata-only",
			Doc:  "Only the metadata file: the query was started but wrote no batch. Batch 0 is new.",
			Tags: []string{"recovery", "table"},
			Build: func(b *Builder) {
				b.Metadata()
			},
		},
		Scenario{
			Name:       "committed",
			Doc:        "C == L: batch 7 finished. The restart runs batch 8 from O[7] with the commit's watermark.",
			Tags:       []string{"recovery", "table"},
			SinkLatest: i64(7),
			Variants:   []string{"sync@4.1", "sync@4.2"},
			Build: func(b *Builder) {
				b.Watermark = func(batch int64) int64 { return batch * 1000 }
				std(b, ids(0, 7), ids(0, 7))
			},
		},
		Scenario{
			Name:       "rerun-last",
			Doc:        "C == L-1: batch 7's offsets were written, its commit was not. Batch 7 re-runs over (O[6], O[7]].",
			Tags:       []string{"recovery", "table"},
			SinkLatest: i64(6),
			// 4.1.1 and 4.1.0 fail after the re-run (SPARK-55271); 4.1.2 is predicted without it.
			Variants: []string{"sync@4.1.1", "sync@4.1.0", "sync@4.1.2", "async@4.1.1"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
			},
		},
		Scenario{
			Name:       "rerun-last-sink-has-batch",
			Doc:        "C == L-1 with a file sink that already logged batch 7: the sink skips the re-run, no duplicates.",
			Tags:       []string{"recovery", "table", "sink"},
			SinkLatest: i64(7),
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
			},
		},
		Scenario{
			Name: "commits-behind",
			Doc:  "C < L-1: commits stop at 4, offsets at 7. Spark warns, re-runs only batch 7; batches 5 and 6 are never replayed.",
			Tags: []string{"recovery", "table"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 4))
			},
		},
		Scenario{
			Name: "no-commits",
			Doc:  "No commit log at all: Spark logs 'no commit log present' and re-runs batch 3 over (O[2], O[3]].",
			Tags: []string{"recovery", "table"},
			Build: func(b *Builder) {
				std(b, ids(0, 3), nil)
			},
		},
		Scenario{
			Name: "first-batch-uncommitted",
			Doc:  "Only offsets/0, no commit: batch 0 re-runs from the Kafka initial offsets in sources/0/0.",
			Tags: []string{"recovery", "table", "kafka"},
			Build: func(b *Builder) {
				std(b, []int64{0}, nil)
			},
		},
		Scenario{
			Name: "first-batch-committed",
			Doc:  "offsets/0 and commits/0: batch 0 finished, the restart runs batch 1.",
			Tags: []string{"recovery", "table"},
			Build: func(b *Builder) {
				std(b, []int64{0}, []int64{0})
			},
		},
		Scenario{
			Name:     "commits-ahead",
			Doc:      "C > L: commits reach 7 but offsets only 5 (offsets deleted by hand). Batch 5 re-runs, then commitLog.add(5) finds commits/5: CONCURRENT_STREAM_LOG_UPDATE (3.0+); 2.x ignores it.",
			Tags:     []string{"recovery", "table"},
			Variants: []string{"sync@2.4", "sync@3.3", "sync@4.0", "async@3.4"},
			Build: func(b *Builder) {
				std(b, ids(0, 5), ids(0, 7))
			},
		},
		Scenario{
			Name: "commits-ahead-gap",
			Doc:  "C > L with commits/5 and commits/6 missing: batch 5 re-runs, 6 and 7 run as new batches, and commits/7 conflicts.",
			Tags: []string{"recovery", "table"},
			Build: func(b *Builder) {
				std(b, ids(0, 5), join(ids(0, 4), []int64{7}))
			},
		},
		Scenario{
			Name:     "commits-without-offsets",
			Doc:      "offsets/ empty, commits/0..2 present: ≤4.0 start fresh and conflict on commits/0; master asserts at start.",
			Tags:     []string{"recovery", "table"},
			Variants: []string{"sync@4.0", "sync@4.1", "sync@4.2", "sync@2.4"},
			Build: func(b *Builder) {
				b.Metadata()
				b.Commits(0, 2)
			},
		},
		Scenario{
			Name:     "missing-previous-offsets",
			Doc:      "offsets 0..3 and 5 (4 deleted), commits 0..3: sync fails 'batch 4 doesn't exist'; async re-runs 5 over (O[3], O[5]].",
			Tags:     []string{"recovery", "table", "async"},
			Variants: []string{"sync@3.2"},
			Build: func(b *Builder) {
				std(b, join(ids(0, 3), []int64{5}), ids(0, 3))
			},
		},
		Scenario{
			Name: "missing-previous-offsets-committed",
			Doc:  "C == L = 7 but offsets/6 is gone: the sync engine checks offsets/L-1 before the commit log, so it fails although batch 7 committed.",
			Tags: []string{"recovery", "table"},
			Build: func(b *Builder) {
				std(b, []int64{5, 7}, []int64{5, 7})
			},
		},

		// --- async progress tracking (§6.2, §6.5, §6.6) ---------------------
		Scenario{
			Name: "async-interval-0-3",
			Doc:  "Async suite 'interval commits and recovery': offsets = commits = [0, 3]. Async resumes at 4; sync fails 'batch 2 doesn't exist'.",
			Tags: []string{"recovery", "async"},
			Build: func(b *Builder) {
				std(b, []int64{0, 3}, []int64{0, 3})
			},
		},
		Scenario{
			Name: "async-rerun-0-2-5",
			Doc:  "offsets [0, 2, 5], commits [0, 2]: async re-runs 5 over (O[2], O[5]] (data 3, 4, 5) after the not-trailing warning.",
			Tags: []string{"recovery", "async"},
			Build: func(b *Builder) {
				std(b, []int64{0, 2, 5}, []int64{0, 2})
			},
		},
		Scenario{
			Name: "async-behind-0-2",
			Doc:  "offsets [0, 2], commits [0]: async warns and re-runs 2 over (O[0], O[2]].",
			Tags: []string{"recovery", "async"},
			Build: func(b *Builder) {
				std(b, []int64{0, 2}, []int64{0})
			},
		},
		Scenario{
			Name: "async-only-2",
			Doc:  "offsets [2], no commits: async re-runs 2 from the initial offsets (replays 0, 1, 2).",
			Tags: []string{"recovery", "async", "kafka"},
			Build: func(b *Builder) {
				std(b, []int64{2}, nil)
			},
		},
		Scenario{
			Name: "async-commit-lost-0-3",
			Doc:  "offsets [0, 3], commits [0] (commits/3 and .3.crc deleted, as the async suite does): async re-runs 3 over (O[0], O[3]].",
			Tags: []string{"recovery", "async"},
			Build: func(b *Builder) {
				std(b, []int64{0, 3}, []int64{0})
			},
		},
		Scenario{
			Name: "async-trap-0-3-7",
			Doc:  "§6.6: async with gaps (offsets = commits = [0, 3, 7]) then async switched off: sync fails 'batch 6 doesn't exist' although commits/7 exists.",
			Tags: []string{"recovery", "async"},
			Build: func(b *Builder) {
				std(b, []int64{0, 3, 7}, []int64{0, 3, 7})
			},
		},
		Scenario{
			Name: "async-fixture-1-2-4",
			Doc:  "The shape of Spark's checkpoint-test-offsetId-commitId-inconsistent fixture (offsets 1, 2, 4, memory source): sync fails 'batch 3 doesn't exist'; async re-runs 4 over (O[2], O[4]].",
			Tags: []string{"recovery", "async"},
			Build: func(b *Builder) {
				b.Metadata()
				b.Watermark = func(int64) int64 { return 5000 }
				for _, id := range []int64{1, 2, 4} {
					b.Offsets(id, Long(id))
				}
			},
		},

		// --- corrupt and too-new files ---------------------------------------
		Scenario{
			Name:     "corrupt-latest-offsets-empty",
			Doc:      "offsets/7 is 0 bytes (a non-atomic copy): Spark fails reading it and never falls back to offsets/6.",
			Tags:     []string{"recovery", "corrupt"},
			Variants: []string{"sync@4.0"},
			Build: func(b *Builder) {
				std(b, ids(0, 6), ids(0, 6))
				b.Raw("offsets/7", "")
			},
		},
		Scenario{
			Name: "corrupt-latest-offsets-truncated",
			Doc:  "offsets/7 is cut in the middle of its metadata JSON: the JSON parser fails the start.",
			Tags: []string{"recovery", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				full := b.OffsetsJSON(7, kafka3(7)...)
				b.Raw("offsets/7", full[:40])
			},
		},
		Scenario{
			Name: "corrupt-latest-offsets-header-only",
			Doc:  "offsets/7 holds only 'v1': lines.next() fails with NoSuchElementException, unwrapped.",
			Tags: []string{"recovery", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 6), ids(0, 6))
				b.Raw("offsets/7", "v1")
			},
		},
		Scenario{
			Name:     "corrupt-latest-offsets-bad-header",
			Doc:      "offsets/7 starts with 'x1': malformed log version (MALFORMED_LOG_FILE in 4.x).",
			Tags:     []string{"recovery", "corrupt"},
			Variants: []string{"sync@4.0"},
			Build: func(b *Builder) {
				std(b, ids(0, 6), ids(0, 6))
				b.Raw("offsets/7", "x"+b.OffsetsJSON(7, kafka3(7)...)[1:])
			},
		},
		Scenario{
			Name:     "offsets-v2-latest",
			Doc:      "offsets/7 in master's v2 OffsetMap format (written by Spark master): every release up to 4.0 fails with the too-new error; master re-runs it.",
			Tags:     []string{"recovery", "version"},
			Variants: []string{"sync@4.0", "sync@4.1", "sync@4.2", "sync@master"},
			Build: func(b *Builder) {
				std(b, ids(0, 6), ids(0, 6))
				v1 := b.OffsetsJSON(7, kafka3(7)...)
				b.Raw("offsets/7", "v2"+v1[2:len(v1)-len(kafka3(7)[0])]+"0:"+kafka3(7)[0])
			},
		},
		Scenario{
			Name: "corrupt-previous-offsets",
			Doc:  "offsets/6 (L-1) is 0 bytes: Spark reads it for the start offsets and fails.",
			Tags: []string{"recovery", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("offsets/6", "")
			},
		},
		Scenario{
			Name: "corrupt-older-offsets",
			Doc:  "offsets/3 is 0 bytes, far behind the latest: Spark never reads it on restart, and doctor finds it with --deep (the listing has no sizes).",
			Tags: []string{"recovery", "corrupt", "deep"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("offsets/3", "")
			},
		},
		Scenario{
			Name: "corrupt-latest-commit-empty",
			Doc:  "commits/7 is 0 bytes: 'Incomplete log file in the offset commit log'.",
			Tags: []string{"recovery", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("commits/7", "")
			},
		},
		Scenario{
			Name: "latest-commit-header-only",
			Doc:  "commits/7 holds only 'v1': Spark reads it as {} (watermark 0) and resumes at 8.",
			Tags: []string{"recovery", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("commits/7", "v1")
			},
		},
		Scenario{
			Name:     "commit-v2-latest",
			Doc:      "Checkpoint format v2 commits (Spark 4.0 with checkpointFormatVersion=2): 3.5 fails too-new; 4.0 needs the conf set to 2 (exact match); master reads v1-v3.",
			Tags:     []string{"recovery", "version"},
			Variants: []string{"sync@4.0", "sync@4.0/cf2", "sync@4.1", "sync@4.1/cf2", "sync@4.2"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), nil)
				for id := int64(0); id <= 7; id++ {
					b.CommitV2(id, 5)
				}
			},
		},
		Scenario{
			Name:     "commit-v1-under-cf2",
			Doc:      "Ordinary v1 commits read by Spark 4.0 with checkpointFormatVersion=2: the exact-match rule refuses v1.",
			Tags:     []string{"recovery", "version"},
			Variants: []string{"sync@4.0/cf2", "sync@4.1/cf2", "sync@4.2"},
			Build: func(b *Builder) {
				std(b, ids(0, 3), ids(0, 3))
			},
		},
		Scenario{
			Name:     "commit-v3-latest",
			Doc:      "commits/7 in master's v3 format (sinkMetadataMap): only master reads it.",
			Tags:     []string{"recovery", "version"},
			Variants: []string{"sync@4.0", "sync@4.1", "sync@4.2", "sync@master"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("commits/7", `v3`+"\n"+`{"nextBatchWatermarkMs":0,"sinkMetadataMap":{"default":{"sinkName":"default","commitOffset":"-","providerName":"org.apache.spark.sql.kafka010.KafkaSourceProvider","isActive":true}}}`)
			},
		},

		// --- sources -----------------------------------------------------------
		Scenario{
			Name: "kafka-initial-missing",
			Doc:  "offsets/0 only and sources/0/0 deleted: the re-run of batch 0 resolves startingOffsets again (default latest) and can skip records.",
			Tags: []string{"recovery", "kafka"},
			Build: func(b *Builder) {
				std(b, []int64{0}, nil)
				b.Remove("sources/0/0")
			},
		},
		Scenario{
			Name: "kafka-initial-empty",
			Doc:  "offsets/0 only and sources/0/0 is 0 bytes: the Kafka source's require(content.nonEmpty) fails the re-run.",
			Tags: []string{"recovery", "kafka", "corrupt"},
			Build: func(b *Builder) {
				std(b, []int64{0}, nil)
				b.Raw("sources/0/0", "")
			},
		},
		Scenario{
			Name:     "kafka-initial-future-version",
			Doc:      "sources/0/0 written by a future Spark (v99999, as Spark's own fixture): the re-run of batch 0 fails with the too-new error.",
			Tags:     []string{"recovery", "kafka", "version"},
			Variants: []string{"sync@4.0"},
			Build: func(b *Builder) {
				std(b, []int64{0}, nil)
				b.Raw("sources/0/0", "0v99999\n"+KafkaOffsets(topic, 0, 0, 0)+"\n")
			},
		},
		Scenario{
			Name: "kafka-new-partition",
			Doc:  "The topic grew from 2 to 3 partitions between batch 6 and 7: the re-run reads partition 2 from its earliest offset.",
			Tags: []string{"recovery", "kafka"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0))
				for id := int64(0); id <= 6; id++ {
					b.Offsets(id, Kafka(topic, id, 2))
				}
				b.Offsets(7, kafka3(7)...)
				b.Commits(0, 6)
			},
		},
		Scenario{
			Name:     "kafka-range-backwards",
			Doc:      "The topic was recreated with 2 partitions between batch 6 and 7: offsets/7 records lower offsets than offsets/6 and no partition 2, so the re-run of batch 7 goes backwards and loses a partition. Spark checks the lost partition first and fails while planning the batch (failOnDataLoss=true), no broker needed: 3.5 'Set(events-2) are gone', 4.x KAFKA_DATA_LOSS.PARTITIONS_DELETED.",
			Tags:     []string{"recovery", "kafka"},
			Variants: []string{"sync@4.0", "sync@4.1", "sync@4.0.0+availableNow"},
			Build: func(b *Builder) {
				std(b, ids(0, 6), ids(0, 6))
				b.Offsets(7, Kafka(topic, 1, 2))
			},
		},
		Scenario{
			Name: "kafka-and-file-source",
			Doc:  "Two sources (Kafka, then a file source): the re-run covers both, one line each.",
			Tags: []string{"recovery", "kafka", "file-source"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
				for id := int64(0); id <= 4; id++ {
					b.Offsets(id, Kafka(topic, id, 3), FileSource(id*2))
				}
				b.Commits(0, 3)
			},
		},
		Scenario{
			Name: "file-source",
			Doc:  "A file source only ({\"logOffset\":n}): batch 4 re-runs over logOffset 3 → 4.",
			Tags: []string{"recovery", "file-source"},
			Build: func(b *Builder) {
				b.Metadata()
				for id := int64(0); id <= 4; id++ {
					b.Offsets(id, FileSource(id))
				}
				b.Commits(0, 3)
			},
		},
		Scenario{
			Name: "source-added",
			Doc:  "offsets/7 lists two sources (Kafka, then a file source), offsets/6 one: Spark asserts both files against the query's sources, so one of them fails for any query. ckpt takes the query to be offsets/7's, so offsets/6 fails the source-count assertion.",
			Tags: []string{"recovery", "kafka"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
				for id := int64(0); id <= 6; id++ {
					b.Offsets(id, kafka3(id)...)
				}
				b.Offsets(7, Kafka(topic, 7, 3), FileSource(0))
				b.Commits(0, 6)
			},
		},
		Scenario{
			Name: "source-void-start",
			Doc:  "offsets/6 records source 1 as '-' (no offset yet): the re-run of 7 starts that source from its initial offsets.",
			Tags: []string{"recovery", "file-source"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
				for id := int64(0); id <= 6; id++ {
					b.Offsets(id, Kafka(topic, id, 3), Void)
				}
				b.Offsets(7, Kafka(topic, 7, 3), FileSource(0))
				b.Commits(0, 6)
			},
		},
		Scenario{
			Name: "blank-source-line",
			Doc:  "offsets/7 ends with an empty line: Spark reads it as a second source, so offsets/7 fails the source-count assertion of the one-source query.",
			Tags: []string{"recovery", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				b.Raw("offsets/7", b.OffsetsJSON(7, kafka3(7)...)+"\n\n")
			},
		},
		Scenario{
			Name: "previous-offsets-blank-source",
			Doc:  "offsets/6's Kafka line was emptied by an edit by hand that kept the line: the source count still matches, so the re-run of batch 7 hands the Kafka source an empty start offset, which it cannot parse.",
			Tags: []string{"recovery", "corrupt", "kafka"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 6))
				full := b.OffsetsJSON(6, kafka3(6)...)
				b.Raw("offsets/6", full[:len(full)-len(kafka3(6)[0])]+"\n")
			},
		},
		Scenario{
			Name: "committed-offsets-truncated",
			Doc:  "The latest committed batch's Kafka line in offsets/7 is truncated mid-JSON: the file parses as a log, but the resumed query hands the Kafka source that offset before planning batch 8, and it cannot read it.",
			Tags: []string{"recovery", "corrupt", "kafka"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 7))
				full := b.OffsetsJSON(7, kafka3(7)...)
				line := kafka3(7)[0]
				b.Raw("offsets/7", full[:len(full)-len(line)]+line[:len(line)-2])
			},
		},
		Scenario{
			Name: "committed-offsets-not-json",
			Doc:  "The latest committed batch's Kafka line in offsets/7 is not JSON (hello): the resumed query hands it to the Kafka source before planning batch 8, and the source cannot read it.",
			Tags: []string{"recovery", "corrupt", "kafka"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 7))
				full := b.OffsetsJSON(7, kafka3(7)...)
				b.Raw("offsets/7", full[:len(full)-len(kafka3(7)[0])]+"hello")
			},
		},
		Scenario{
			Name: "sources-reordered",
			Doc:  "The query's two sources swapped places between batch 6 (Kafka, file) and batch 7 (file, Kafka): the counts match, but the re-run of batch 7 hands each source the other's start offset.",
			Tags: []string{"recovery", "kafka", "file-source"},
			Build: func(b *Builder) {
				b.Metadata()
				b.KafkaInitial(0, KafkaOffsets(topic, 0, 0, 0))
				for id := int64(0); id <= 6; id++ {
					b.Offsets(id, Kafka(topic, id, 3), FileSource(id))
				}
				b.Offsets(7, FileSource(7), Kafka(topic, 7, 3))
				b.Commits(0, 6)
			},
		},
		Scenario{
			Name: "spark-2.1-memory-source",
			Doc:  "The shape of Spark's checkpoint-version-2.1.0 fixture: offsets 0 and 1 without conf, memory source, no commit log.",
			Tags: []string{"recovery", "spark-2.1"},
			Build: func(b *Builder) {
				b.NoConf()
				b.Metadata()
				b.Offsets(0, Long(2))
				b.Offsets(1, Long(2))
			},
		},

		// --- metadata, leftovers, retention ------------------------------------
		Scenario{
			Name:     "missing-metadata",
			Doc:      "metadata deleted while offsets and commits have data: ≤4.0 write a new query id silently; master refuses (MISSING_METADATA_FILE).",
			Tags:     []string{"recovery", "metadata"},
			Variants: []string{"sync@4.1", "sync@4.2", "sync@master"},
			Build: func(b *Builder) {
				std(b, ids(0, 3), ids(0, 3))
				b.Remove("metadata")
			},
		},
		Scenario{
			Name: "corrupt-metadata",
			Doc:  "metadata is truncated JSON: reading the query id fails before the engine starts.",
			Tags: []string{"recovery", "metadata", "corrupt"},
			Build: func(b *Builder) {
				std(b, ids(0, 3), ids(0, 3))
				b.Raw("metadata", `{"id":"`)
			},
		},
		Scenario{
			Name: "leftovers",
			Doc:  "An interrupted write left offsets/.8.<uuid>.tmp and an orphan commits/.8.crc next to a committed batch 7. The .tmp is ignored; the orphan .crc sits where the restart writes commits/8.",
			Tags: []string{"recovery", "leftovers"},
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 7))
				b.Raw("offsets/.7.crc", "crc\x00\x00\x02\x00\x00\x00\x00")
				b.Raw("offsets/.8.3f0c2a9e-1b7d-4c55-9e61-0a2b4c6d8e10.tmp", b.OffsetsJSON(8, kafka3(8)...)[:30])
				b.Raw("commits/.8.crc", "crc\x00\x00\x02\x00\x00\x00\x00")
			},
		},
		Scenario{
			Name: "retention",
			Doc:  "A long-running query after purge (minBatchesToRetain=100): offsets 100..200, commits purged further, 150..199. Batch 200 re-runs; nothing below matters.",
			Tags: []string{"recovery", "retention"},
			Build: func(b *Builder) {
				std(b, ids(100, 200), ids(150, 199))
			},
		},
		Scenario{
			Name:       "committed-sink-behind",
			Doc:        "C == L = 7 but the file sink's log stops at 5: batches 6 and 7 are committed yet missing from the sink, and no restart writes them.",
			Tags:       []string{"recovery", "sink"},
			SinkLatest: i64(5),
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 7))
			},
		},
		Scenario{
			Name:       "committed-sink-ahead",
			Doc:        "C == L = 7 but the file sink logged up to 9 (offsets 8, 9 deleted by hand): new batches 8 and 9 are skipped by the sink, their data lost.",
			Tags:       []string{"recovery", "sink"},
			SinkLatest: i64(9),
			Build: func(b *Builder) {
				std(b, ids(0, 7), ids(0, 7))
			},
		},
	)
}
