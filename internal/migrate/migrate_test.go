package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func copyFixture(t *testing.T, fx string) (string, storage.Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.CopyFS(dir, os.DirFS("../../testdata/spark-state/"+fx+"/checkpoint")); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

// rows is every row of every store of the checkpoint at version v, as ckpt's reader renders
// them, sorted.
func rows(t *testing.T, st storage.Store, v int64) []string {
	t.Helper()
	ctx := context.Background()
	cp, err := checkpoint.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := state.Scan(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, op := range l.Operators {
		for _, s := range op.Stores {
			r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: op.ID, Store: s.Name, Partition: -1, Version: v})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := r.WriteJSON(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Split(strings.TrimSpace(buf.String()), "\n")...)
		}
	}
	slices.Sort(out)
	return out
}

// TestMigrateV2: the checkpoint format v2 aggregations Spark 4.0.2, 4.1.4 and 4.2.0 wrote,
// migrated to every older release: the planner predicts the older release's failure before
// (UnsupportedLogVersion or the exact-match rule on commits/4) and a resume at batch 6 after;
// applied through the journal, the checkpoint holds no v2 file, a v1 commits/5, and version 6
// holds exactly the rows of version 5; undo restores every byte.
func TestMigrateV2(t *testing.T) {
	for _, c := range []struct {
		fx string
		to []string
	}{
		{"4.0.2/agg-rocksdb-changelog-v2", []string{"3.5"}},
		{"4.1.4/agg-rocksdb-changelog-v2", []string{"3.5", "4.0"}},
		{"4.2.0/agg-rocksdb-changelog-v2", []string{"3.5", "4.0", "4.1"}},
	} {
		for _, to := range c.to {
			t.Run(c.fx+" to "+to, func(t *testing.T) {
				ctx := context.Background()
				dir, st := copyFixture(t, c.fx)
				before := journaltest.Snapshot(t, st)
				want := rows(t, st, 5)
				p, err := NewPlan(ctx, st, Options{To: to})
				if err != nil {
					t.Fatal(err)
				}
				if p.Refused != "" || p.Nothing {
					t.Fatalf("refused %q, nothing %v", p.Refused, p.Nothing)
				}
				if p.Before.Outcome != "fail" || !strings.Contains(*p.Before.Error, "UnsupportedLogVersion") || p.Before.FailedFile != "commits/4" {
					t.Errorf("before: %s", p.Before.Verdict())
				}
				if p.After.Outcome != "resume" || p.After.NextBatch != 6 {
					t.Errorf("after: %s", p.After.Verdict())
				}
				if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, st)); d != "" {
					t.Fatal("planning changed the checkpoint")
				}
				j, err := journal.Apply(ctx, st, p.JournalPlan(), journal.Options{Force: true})
				if err != nil {
					t.Fatal(err)
				}
				after := journaltest.Snapshot(t, st)
				if !strings.HasPrefix(after["commits/5"], "v1\n{\"nextBatchWatermarkMs\":0}") {
					t.Errorf("commits/5 = %q", after["commits/5"])
				}
				if after["offsets/5"] != after["offsets/4"] {
					t.Errorf("offsets/5 is not offsets/4")
				}
				for f := range after {
					if name := filepath.Base(f); strings.Contains(name, "_") && (strings.HasSuffix(name, ".zip") || strings.HasSuffix(name, ".changelog")) {
						t.Errorf("%s: a v2 file is left", f)
					}
				}
				if got := rows(t, st, 6); !slices.Equal(got, want) {
					t.Errorf("version 6 holds\n%s\nversion 5 held\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				// The plan again: nothing left to rewrite.
				again, err := NewPlan(ctx, st, Options{To: to})
				if err != nil || !again.Nothing {
					t.Errorf("after the migration: %v, nothing %v, refused %q", err, again.Nothing, again.Refused)
				}
				if _, err := journal.Undo(ctx, st, journal.Location{Store: st, Dir: strings.TrimPrefix(j.Location, dir+"/")}, journal.Options{}); err != nil {
					t.Fatal(err)
				}
				if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, st)); d != "" {
					t.Errorf("after undo:\n%s", d)
				}
			})
		}
	}
}

// TestMigrateNothing: what a newer release wrote in formats the older one reads (Spark 3.5.7
// restarted 4.2.0's HDFS-backed and RocksDB aggregations as they are: testdata/spark-migrate)
// plans nothing.
func TestMigrateNothing(t *testing.T) {
	for _, fx := range []string{"4.2.0/agg-hdfs", "4.2.0/agg-rocksdb", "4.2.0/agg-rocksdb-changelog", "4.1.4/agg-rocksdb-fv6-zstd"} {
		to := "3.5"
		if strings.Contains(fx, "fv6") {
			to = "4.0"
		}
		_, st := copyFixture(t, fx)
		p, err := NewPlan(context.Background(), st, Options{To: to})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Nothing || len(p.Actions) != 0 || p.Refused != "" {
			t.Errorf("%s to %s: nothing %v, %d actions, refused %q", fx, to, p.Nothing, len(p.Actions), p.Refused)
		}
	}
}

// TestMigrateFormatVersion6: a RocksDB store of SST format 6 (Spark 3.5.7's RocksDB refused it:
// "Unsupported BlockBasedTable format_version") is rewritten for 3.5 in format 5, with
// offsets/L+1 saying 5.
func TestMigrateFormatVersion6(t *testing.T) {
	ctx := context.Background()
	_, st := copyFixture(t, "4.2.0/agg-rocksdb-fv6-zstd")
	want := rows(t, st, 5)
	p, err := NewPlan(ctx, st, Options{To: "3.5"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused != "" || p.Nothing || p.After.NextBatch != 6 {
		t.Fatalf("refused %q, nothing %v, after %s", p.Refused, p.Nothing, p.After.Verdict())
	}
	if _, err := journal.Apply(ctx, st, p.JournalPlan(), journal.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	after := journaltest.Snapshot(t, st)
	if !strings.Contains(after["offsets/5"], `"spark.sql.streaming.stateStore.rocksdb.formatVersion":"5"`) ||
		strings.Replace(after["offsets/5"], `formatVersion":"5"`, `formatVersion":"6"`, 1) != after["offsets/4"] {
		t.Errorf("offsets/5 =\n%s\noffsets/4 =\n%s", after["offsets/5"], after["offsets/4"])
	}
	if got := rows(t, st, 6); !slices.Equal(got, want) {
		t.Errorf("version 6 holds\n%s\nversion 5 held\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMigrateRefusals: what cannot be expressed in the older release's formats is refused,
// with the reason, and nothing is planned.
func TestMigrateRefusals(t *testing.T) {
	edit := func(f, old, repl string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, f)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(old)) {
				t.Fatalf("%s has no %q", f, old)
			}
			if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(repl), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		fx, to string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"4.2.0/tws-changelog-v2", "3.5", nil, "Spark 3.5 has no transformWithState"},
		{"4.2.0/tws-changelog-v2", "4.1", nil, "column-family state is not written by ckpt"},
		{"4.2.0/tws", "3.5", nil, "Spark 3.5 has no transformWithState"},
		{"4.2.0/agg-hdfs", "4.1", edit("offsets/4", `rowChecksum.enabled":"false"`, `rowChecksum.enabled":"true"`), "checksums"},
		{"4.2.0/agg-hdfs", "3.5", edit("offsets/4", `encodingFormat":"unsaferow"`, `encodingFormat":"avro"`), "UnsafeRows only"},
		{"4.2.0/agg-hdfs", "3.5", edit("commits/4", "v1", "v3"), "sinks' metadata"},
		{"4.2.0/agg-rocksdb-changelog-v2", "3.5", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "commits/4")); err != nil {
				t.Fatal(err)
			}
		}, "did not commit"},
	} {
		t.Run(c.fx+" to "+c.to+" "+c.want, func(t *testing.T) {
			dir, st := copyFixture(t, c.fx)
			if c.change != nil {
				c.change(t, dir)
				_ = os.Remove(filepath.Join(dir, "offsets/.4.crc"))
				_ = os.Remove(filepath.Join(dir, "commits/.4.crc"))
			}
			p, err := NewPlan(context.Background(), st, Options{To: c.to})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Refused, c.want) || len(p.Actions) != 0 {
				t.Errorf("refused %q with %d actions, want %q", p.Refused, len(p.Actions), c.want)
			}
		})
	}
}

// TestTarget: --to-spark takes a release line or a release.
func TestTarget(t *testing.T) {
	for in, want := range map[string]string{"3.5": "3.5", "3.5.7": "3.5", "4.2.0": "4.2", "4.1": "4.1"} {
		if got, err := Target(in); err != nil || got != want {
			t.Errorf("Target(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "3.4", "5.0", "master", "4"} {
		if _, err := Target(in); err == nil {
			t.Errorf("Target(%q) accepted", in)
		}
	}
}

// TestMigrateGoldens checks ckpt against what Spark did in TestSparkLiveMigrate
// (testdata/spark-migrate/<from>/<fixture>/to-<release>/): the plan changes the files Spark
// restarted (plan.json), and where the older release failed on the checkpoint as it was
// (unmigrated.error) the recovery planner predicted that failure, word for word, or the plan
// names the cause the planner does not model (SST format 6).
func TestMigrateGoldens(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/spark-migrate/*/*/to-*")
	if len(dirs) == 0 {
		t.Fatal("no goldens in testdata/spark-migrate: UPDATE_SPARK=1 go test ./internal/sparkoracle -run TestSparkLiveMigrate")
	}
	for _, d := range dirs {
		fixture := filepath.Base(filepath.Dir(d))
		from := filepath.Base(filepath.Dir(filepath.Dir(d)))
		to := strings.TrimPrefix(filepath.Base(d), "to-")
		t.Run(from+"/"+fixture+"/"+to, func(t *testing.T) {
			fxs, _ := filepath.Glob(filepath.Join("../../testdata/spark-state", from[:3]+".*", fixture))
			if len(fxs) != 1 {
				t.Fatalf("no fixture %s of %s", fixture, from)
			}
			dir, st := copyFixture(t, filepath.Base(filepath.Dir(fxs[0]))+"/"+fixture)
			line, err := Target(to)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(context.Background(), st, Options{To: line})
			if err != nil {
				t.Fatal(err)
			}
			var golden struct {
				Nothing bool
				Files   []string
			}
			data, err := os.ReadFile(filepath.Join(d, "plan.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &golden); err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, a := range p.Actions {
				files = append(files, string(a.Op)+" "+a.Path)
			}
			if p.Nothing != golden.Nothing || !slices.Equal(files, golden.Files) {
				t.Errorf("the plan changes\n%s\nSpark restarted after\n%s", strings.Join(files, "\n"), strings.Join(golden.Files, "\n"))
			}
			failed, err := os.ReadFile(filepath.Join(d, "unmigrated.error"))
			if err != nil {
				if p.Before.Outcome != "resume" {
					t.Errorf("Spark %s restarted the checkpoint as it was; ckpt predicted %s", to, p.Before.Verdict())
				}
				return
			}
			if p.Before.Outcome != "fail" {
				t.Fatalf("Spark %s failed: %s\nckpt predicted %s", to, failed, p.Before.Verdict())
			}
			want := strings.ReplaceAll(*p.Before.Error, "file:"+dir, "<checkpoint>")
			if !strings.Contains(string(failed), want) {
				t.Errorf("Spark %s failed with\n%s\nckpt predicted\n%s", to, failed, want)
			}
		})
	}
}

// TestMigrateObjectStore: on a store without Hadoop's checksums (an object store; storage.Mem
// holding the 4.2.0 v2 fixture without its .crc files) the migration writes none, and plans,
// applies, verifies and undoes as on local disk.
func TestMigrateObjectStore(t *testing.T) {
	ctx := context.Background()
	_, local := copyFixture(t, "4.2.0/agg-rocksdb-changelog-v2")
	mem := storage.NewMem()
	for p, data := range journaltest.Snapshot(t, local) {
		if strings.HasSuffix(p, ".crc") {
			continue
		}
		if err := mem.WriteFile(ctx, p, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	before := journaltest.Snapshot(t, mem)
	want := rows(t, mem, 5)
	p, err := NewPlan(ctx, mem, Options{To: "3.5"})
	if err != nil || p.Refused != "" {
		t.Fatalf("%v, refused %q", err, p.Refused)
	}
	for _, a := range p.Actions {
		if strings.HasSuffix(a.Path, ".crc") {
			t.Errorf("%s %s: a checksum on a store without them", a.Op, a.Path)
		}
	}
	j, err := journal.Apply(ctx, mem, p.JournalPlan(), journal.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if j.Verified == nil || j.Verified.NextBatch != 6 {
		t.Errorf("verified: %+v", j.Verified)
	}
	if got := rows(t, mem, 6); !slices.Equal(got, want) {
		t.Errorf("version 6 holds\n%s\nversion 5 held\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := journal.Undo(ctx, mem, journal.Location{Store: mem, Dir: strings.TrimPrefix(j.Location, mem.URI()+"/")}, journal.Options{}); err != nil {
		t.Fatalf("%v (journal %s)", err, j.Location)
	}
	if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, mem)); d != "" {
		t.Errorf("after undo:\n%s", d)
	}
}
