package sparkoracle

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/query"
)

// TestSparkLiveRocksDBEngineHandOver is the aggregation hand-over (`ckpt run` 2 batches →
// Spark 2 → `ckpt run` 1; the last output of every key equals a Spark-only run's, Spark's
// statestore reader reads ckpt's state as Spark's) with the state in other providers' files:
//
//   - rocksdb: the RocksDB provider (changelog checkpointing off): ckpt writes N.zip and an SST
//     file per version and partition, Spark loads them and continues, ckpt loads Spark's; the
//     offsets log records the conf Spark records for the same query.
//   - rocksdb-changelog (not in CI): changelog checkpointing, minDeltasForSnapshot=5: ckpt
//     writes 1.changelog and 2.changelog and no zip, so Spark loads version 2 by replaying
//     ckpt's changelogs; ckpt's last run writes 5.changelog and 5.zip.
//   - hdfs-snapshots (in CI too): the HDFS-backed provider with minDeltasForSnapshot=1: ckpt's first run
//     writes 2.snapshot, which Spark loads for version 2 (loadMap reads the version's
//     snapshot before any delta) when it continues and when its reader reads batch 1.
//
// In CI: the oldest release only (ciRelease).
func TestSparkLiveRocksDBEngineHandOver(t *testing.T) {
	rels := ciRelease(t, true)
	statefulReleases(t, rels, func(t *testing.T, rel string) {
		t.Run("rocksdb", func(t *testing.T) {
			aggHandOver(t, rel, aggVariant{conf: map[string]string{query.ConfStateProvider: query.RocksDBStateProvider},
				afterFirst: func(t *testing.T, ck string) {
					for p := range 2 {
						for _, f := range []string{"1.zip", "2.zip"} {
							if _, err := os.Stat(filepath.Join(ck, "state", "0", strconv.Itoa(p), f)); err != nil {
								t.Errorf("ckpt run with the RocksDB provider: %v", err)
							}
						}
						if ssts, _ := filepath.Glob(filepath.Join(ck, "state", "0", strconv.Itoa(p), "SSTs", "*.sst")); len(ssts) == 0 {
							t.Errorf("partition %d: no SST file", p)
						}
					}
				},
				atEnd: func(t *testing.T, ck, ref string) { sameRecordedConf(t, rel, ck, ref) }})
		})
		t.Run("rocksdb-changelog", func(t *testing.T) {
			if os.Getenv("CKPT_SPARK_LIVE") == "ci" {
				t.Skip("CI's time budget: scripts/spark-suite.sh runs it")
			}
			conf := map[string]string{query.ConfStateProvider: query.RocksDBStateProvider, query.ConfRocksDBChangelog: "true",
				query.ConfMinDeltasForSnapshot: "5"}
			aggHandOver(t, rel, aggVariant{conf: conf,
				afterFirst: func(t *testing.T, ck string) {
					for p := range 2 {
						dir := filepath.Join(ck, "state", "0", strconv.Itoa(p))
						for _, f := range []string{"1.changelog", "2.changelog"} {
							if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
								t.Errorf("ckpt run with changelog checkpointing: %v", err)
							}
						}
						if zips, _ := filepath.Glob(filepath.Join(dir, "*.zip")); len(zips) > 0 {
							t.Errorf("a snapshot before minDeltasForSnapshot versions: %v", zips)
						}
					}
				}})
		})
		t.Run("hdfs-snapshots", func(t *testing.T) {
			if os.Getenv("CKPT_SPARK_LIVE") == "ci" && rel != rels[len(rels)-1] {
				t.Skip("CI's time budget: on one release only; scripts/spark-suite.sh runs every one")
			}
			aggHandOver(t, rel, aggVariant{conf: map[string]string{query.ConfMinDeltasForSnapshot: "1"},
				afterFirst: func(t *testing.T, ck string) {
					for p := range 2 {
						if _, err := os.Stat(filepath.Join(ck, "state", "0", strconv.Itoa(p), "2.snapshot")); err != nil {
							t.Errorf("ckpt run with minDeltasForSnapshot=1 wrote no snapshot of version 2: %v", err)
						}
					}
				}})
		})
	})
}

// sameRecordedConf checks that ckpt's offsets/0 records, for every conf key it writes, the value
// Spark's offsets/0 records for the same query, and logs the keys only Spark records.
func sameRecordedConf(t *testing.T, rel, ck, ref string) {
	t.Helper()
	conf := func(dir string) map[string]string {
		data, err := os.ReadFile(filepath.Join(dir, "offsets", "0"))
		if err != nil {
			t.Fatal(err)
		}
		seq, err := logformat.ParseOffsets("offsets/0", data)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, kv := range seq.Metadata.Conf {
			m[kv.Key] = kv.Value
		}
		return m
	}
	got, want := conf(ck), conf(ref)
	for k, v := range got {
		if want[k] != v {
			t.Errorf("offsets/0 conf %s: ckpt records %q, Spark %q", k, v, want[k])
		}
	}
	var more []string
	for k := range want {
		if _, ok := got[k]; !ok {
			more = append(more, k)
		}
	}
	if len(more) > 0 {
		// 3.5.7 records pruneFiltersCanPruneStreamingSubplan, which 3.5.1 (ckpt's conf) did not.
		t.Logf("offsets/0: Spark %s also records %v", rel, more)
	}
	if got[query.ConfStateProvider] != query.RocksDBStateProvider {
		t.Errorf("offsets/0 records provider %q", got[query.ConfStateProvider])
	}
}
