package sparkoracle

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/migrate"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// migrateGoldens holds what Spark did with checkpoints ckpt migrated:
// <from>/<fixture>/orig.jsonl is the restart of the fixture on the release that wrote it (its
// session conf from conf.json) over restartBatches; to-<release>/unmigrated.error the older
// release's failure on the fixture as it is ("<checkpoint>" for its path);
// to-<release>/output.jsonl its restart after `ckpt migrate --to-spark`; plan.json what the plan
// found and the files it changed.
const migrateGoldens = "../../testdata/spark-migrate"

// migrateFixtures are the testdata/spark-state fixtures migrated to every older release.
var migrateFixtures = []string{"agg-rocksdb-changelog-v2", "agg-rocksdb-fv6-zstd", "agg-hdfs"}

// TestSparkLiveMigrate: a checkpoint a newer release wrote (checkpoint format v2, SST format 6,
// a plain HDFS-backed aggregation) fails to restart on an older release (and a v2 one on its own
// release with the default setting) where the plan rewrites it; after ckpt's migration the older release restarts it over three more input files and
// emits exactly what the newer release emits from the checkpoint as it wrote it; undo restores
// every byte. UPDATE_SPARK=1 writes the goldens (TestMigrateGoldens checks ckpt's predictions
// against them in every CI run). CKPT_SPARK_MIGRATE=ci is CI's one case: the 4.2.0 v2
// checkpoint migrated to the oldest release, one JVM (the newer release's output is the golden).
func TestSparkLiveMigrate(t *testing.T) {
	update := os.Getenv("UPDATE_SPARK") == "1"
	ci := os.Getenv("CKPT_SPARK_MIGRATE") == "ci"
	releases := releasesFromEnv(t)
	fixtures := migrateFixtures
	if ci {
		if update {
			t.Fatal("CKPT_SPARK_MIGRATE=ci runs a part of the cases: it cannot write the goldens")
		}
		releases = ciReleases(t)
		fixtures = fixtures[:1]
	}
	for _, rel := range releases {
		if _, err := os.Stat(filepath.Join(sparkCache(), rel, "jars", ".complete")); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("Spark %s is not installed in %s", rel, sparkCache())
			}
			t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
		}
	}
	work := t.TempDir()
	// The newer releases' own restarts (with the fixture's conf, checkpoint format v2 included)
	// run in JVMs of their own: after a v2 query, Spark 4.0.0 failed on a v1 RocksDB checkpoint
	// in the same JVM ("Cannot read RocksDB checkpoint metadata. Expected v2, but found v1"),
	// which a fresh JVM restarts.
	reqs, origReqs := map[string][]string{}, map[string][]string{}
	type pair struct{ from, fixture, to, dir string }
	var pairs []pair
	for i, from := range releases {
		if ci && i != len(releases)-1 {
			continue
		}
		for _, fx := range fixtures {
			fxs, _ := filepath.Glob(filepath.Join("../../testdata/spark-state", Line(from)+".*", fx))
			if len(fxs) == 0 || strings.HasPrefix(from, "3.") {
				continue
			}
			src := fxs[0]
			input := filepath.Join(os.TempDir(), "h8-input-"+filepath.Base(filepath.Dir(src))+"-"+fx)
			_ = os.RemoveAll(input)
			t.Cleanup(func() { _ = os.RemoveAll(input) })
			writeRestartInput(t, input, "agg", restartBatches)
			orderInput(t, input)
			base := filepath.Join(work, from, fx)
			if !ci {
				ck := filepath.Join(base, "orig", "checkpoint")
				copyTree(t, filepath.Join(src, "checkpoint"), ck)
				origReqs[from] = append(origReqs[from], strings.Join([]string{"agg", ck, input, filepath.Join(base, "orig.jsonl"), fixtureConf(t, src)}, "\t"))
			}
			for _, to := range releases {
				// Older releases; and, for checkpoint format v2, the release itself with its
				// default setting (1), which fails on the v2 file names until migrated.
				if j := slices.Index(releases, to); j > i || (j == i && !strings.HasSuffix(fx, "-v2")) || (ci && to != releases[0]) {
					continue
				}
				dir := filepath.Join(base, "to-"+to)
				un, mg := filepath.Join(dir, "unmigrated"), filepath.Join(dir, "migrated")
				copyTree(t, filepath.Join(src, "checkpoint"), un)
				copyTree(t, filepath.Join(src, "checkpoint"), mg)
				p := applyMigrate(t, mg, Line(to))
				writeJSON(t, filepath.Join(dir, "plan.json"), planSummary(p))
				if !p.Nothing {
					reqs[to] = append(reqs[to], strings.Join([]string{"agg", un, input, filepath.Join(dir, "unmigrated.jsonl")}, "\t"))
				}
				reqs[to] = append(reqs[to], strings.Join([]string{"agg", mg, input, filepath.Join(dir, "output.jsonl")}, "\t"))
				pairs = append(pairs, pair{from, fx, to, dir})
				undoRestores(t, filepath.Join(src, "checkpoint"), filepath.Join(work, "undo-"+from+"-"+fx+"-"+to), Line(to))
			}
		}
	}
	if len(pairs) == 0 {
		t.Skipf("no release of %v wrote a fixture to migrate (4.0 or later)", releases)
	}
	for _, rel := range releases {
		for _, rs := range [][]string{reqs[rel], origReqs[rel]} {
			if len(rs) > 0 {
				runJava(t, rel, "RepartitionRestart", rs)
			}
		}
	}
	for _, pr := range pairs {
		name := pr.from + " " + pr.fixture + " to " + pr.to
		base := filepath.Dir(pr.dir)
		golden := filepath.Join(migrateGoldens, pr.from, pr.fixture)
		origFile := filepath.Join(base, "orig.jsonl")
		if ci {
			origFile = filepath.Join(golden, "orig.jsonl")
		}
		if e, err := os.ReadFile(origFile + ".error"); err == nil {
			t.Fatalf("%s: the newer release's own restart failed: %s", name, e)
		}
		want, err := os.ReadFile(origFile)
		if err != nil || len(bytes.TrimSpace(want)) == 0 {
			t.Fatalf("%s: the newer release's restart emitted nothing (%v)", name, err)
		}
		if e, err := os.ReadFile(filepath.Join(pr.dir, "output.jsonl.error")); err == nil {
			t.Errorf("%s: the restart after the migration failed: %s", name, e)
			continue
		}
		got, _ := os.ReadFile(filepath.Join(pr.dir, "output.jsonl"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: after the migration Spark %s emitted\n%s\nSpark %s from the checkpoint it wrote\n%s", name, pr.to, got, pr.from, want)
		}
		var p struct{ Nothing bool }
		readJSON(t, filepath.Join(pr.dir, "plan.json"), &p)
		un := filepath.Join(pr.dir, "unmigrated.jsonl.error")
		if data, err := os.ReadFile(un); err == nil {
			normalized := strings.ReplaceAll(string(data), "file:"+filepath.Join(pr.dir, "unmigrated"), "<checkpoint>")
			normalized = uuidRe.ReplaceAllString(cleanRun(normalized), "<uuid>")
			if err := os.WriteFile(filepath.Join(pr.dir, "unmigrated.error"), []byte(normalized), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if !p.Nothing {
			t.Errorf("%s: Spark %s restarted the checkpoint as it is, where the plan rewrites it", name, pr.to)
		}
	}
	for _, rel := range releases {
		for _, fx := range fixtures {
			base := filepath.Join(work, rel, fx)
			if _, err := os.Stat(base); err != nil {
				continue
			}
			keep := filepath.Join(work, "goldens", rel, fx)
			if !ci {
				copyFile(t, filepath.Join(base, "orig.jsonl"), filepath.Join(keep, "orig.jsonl"))
			}
			dirs, _ := filepath.Glob(filepath.Join(base, "to-*"))
			for _, d := range dirs {
				for _, f := range []string{"plan.json", "output.jsonl", "unmigrated.error"} {
					if _, err := os.Stat(filepath.Join(d, f)); err == nil {
						copyFile(t, filepath.Join(d, f), filepath.Join(keep, filepath.Base(d), f))
					}
				}
			}
			golden := filepath.Join(migrateGoldens, rel, fx)
			if update {
				_ = os.RemoveAll(golden)
				copyTree(t, keep, golden)
				continue
			}
			compareTrees(t, golden, keep)
		}
	}
}

// fixtureConf is the session conf a fixture was written with (its conf.json), as
// RepartitionRestart's CONF field.
func fixtureConf(t *testing.T, src string) string {
	t.Helper()
	var c struct{ Conf map[string]string }
	readJSON(t, filepath.Join(src, "conf.json"), &c)
	var kv []string
	for k, v := range c.Conf {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// applyMigrate plans the migration of ck to release line to and applies it with the journal
// (the copy's files are new, so the liveness check is forced).
func applyMigrate(t *testing.T, ck, to string) *migrate.Plan {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, ck, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := migrate.NewPlan(ctx, st, migrate.Options{To: to})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused != "" {
		t.Fatalf("%s to %s: refused: %s", ck, to, p.Refused)
	}
	if !p.Nothing {
		if _, err := journal.Apply(ctx, st, p.JournalPlan(), journal.Options{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// undoRestores migrates a copy of src and undoes it: every file is as Spark wrote it.
func undoRestores(t *testing.T, src, dir, to string) {
	t.Helper()
	copyTree(t, src, dir)
	ctx := context.Background()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := journaltest.Snapshot(t, st)
	p, err := migrate.NewPlan(ctx, st, migrate.Options{To: to})
	if err != nil || p.Nothing {
		return
	}
	j, err := journal.Apply(ctx, st, p.JournalPlan(), journal.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Undo(ctx, st, journal.Location{Store: st, Dir: strings.TrimPrefix(j.Location, dir+"/")}, journal.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, st)); d != "" {
		t.Errorf("%s to %s: after undo the checkpoint differs from Spark's:\n%s", src, to, d)
	}
}

// planSummary is what a golden keeps of a plan: what it found and the files it changed
// (their SHA-256 for the files it wrote).
func planSummary(p *migrate.Plan) map[string]any {
	var files []string
	for _, a := range p.Actions {
		files = append(files, string(a.Op)+" "+a.Path)
	}
	found, _ := json.Marshal(p.Found)
	var f any
	_ = json.Unmarshal(found, &f)
	return map[string]any{"nothing": p.Nothing, "found": f, "files": files}
}
