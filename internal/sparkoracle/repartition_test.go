package sparkoracle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/repartition"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// repartitionGoldens holds what Spark did with checkpoints ckpt repartitioned:
// <release>/<fixture>/output.jsonl (the restart of the checkpoint as Spark left it),
// to-<N>/output.jsonl (the restart after ckpt's repartition to N), .partitions (each batch's
// shuffle partitions), files.json (the SHA-256 of every file ckpt added: what Spark ran on) and
// state/<op>-<store>.jsonl (Spark's statestore reader of the repartitioned checkpoint, 4.0+).
const repartitionGoldens = "../../testdata/spark-repartition/restart"

// repartitionCases are the fixtures of testdata/spark-state restarted, with their query, and
// the cases whose checkpoint this test has Spark write (generated: batches 0-4 of the query,
// kept as <release>/<case>/checkpoint in the goldens by UPDATE_SPARK=1).
var repartitionCases = []struct {
	fixture, query string
	generated      bool
}{
	{"agg-hdfs", "agg", false}, {"dedup-hdfs", "dedup", false}, {"join-hdfs", "join", false},
	{"window-hdfs", "window", true}, {"fmgws-hdfs", "fmgws", true},
	{"agg-rocksdb", "agg", false},
}

// generatedBatches are the batches a generated case's checkpoint holds.
var generatedBatches = []int{0, 1, 2, 3, 4}

// repartitionTo are the partition counts tried (the fixtures have 2).
var repartitionTo = []int{4, 1}

// restartBatches are the batches of new input the restarts read (the fixtures ran 0-4).
var restartBatches = []int{5, 6, 7}

// TestSparkLiveRepartition: on every release, the HDFS-backed fixtures and the RocksDB
// aggregation repartitioned by ckpt to 4 and to 1 partitions restart on Spark over three more
// input files and emit exactly what the restart of the checkpoint as Spark left it emits,
// with the new partition count in every batch; Spark's statestore reader (4.0+) reads the
// fixture's rows from the repartitioned checkpoint. UPDATE_SPARK=1 writes Spark's answers as
// the goldens that TestRepartitionGoldens (internal/repartition) compares ckpt with in every
// CI run; otherwise they are compared with the goldens. CKPT_SPARK_REPARTITION=agg-hdfs,… limits the fixtures;
// CKPT_SPARK_REPARTITION=ci is CI's one live case (agg-hdfs to 4, the newest release).
func TestSparkLiveRepartition(t *testing.T) {
	update := os.Getenv("UPDATE_SPARK") == "1"
	only := os.Getenv("CKPT_SPARK_REPARTITION")
	releases := releasesFromEnv(t)
	tos := repartitionTo
	if only == "ci" {
		// CI's one live case: agg-hdfs to 4 partitions on the newest release (two JVMs).
		only, releases, tos = "agg-hdfs", releases[len(releases)-1:], repartitionTo[:1]
		if update {
			t.Fatal("CKPT_SPARK_REPARTITION=ci runs a part of the cases: it cannot write the goldens")
		}
	}
	for _, rel := range releases {
		t.Run(rel, func(t *testing.T) {
			jars := filepath.Join(sparkCache(), rel, "jars")
			if _, err := os.Stat(filepath.Join(jars, ".complete")); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("Spark %s is not installed in %s", rel, sparkCache())
				}
				t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
			}
			work := t.TempDir()
			var reqs, reads []string
			type run struct{ fixture, dir, out string }
			var runs []run
			for _, c := range repartitionCases {
				if only != "" && !slices.Contains(strings.Split(only, ","), c.fixture) {
					continue
				}
				var src, input string
				if c.generated {
					// The file source's restart reads the last batch's files again below the
					// query's path: the input is where it was when the checkpoint was written.
					input = filepath.Join(os.TempDir(), "ckpt-repartition-input-"+rel+"-"+c.fixture)
					src = filepath.Join(repartitionGoldens, rel, c.fixture)
					if update {
						src = filepath.Join(work, c.fixture)
						_ = os.RemoveAll(input)
						writeRestartInput(t, input, c.query, generatedBatches)
						out := filepath.Join(work, c.fixture+"-generate.jsonl")
						runJava(t, rel, "RepartitionRestart", []string{strings.Join([]string{c.query, filepath.Join(src, "checkpoint"), input, out}, "\t")})
						if e, err := os.ReadFile(out + ".error"); err == nil {
							t.Fatalf("%s: Spark %s could not write the checkpoint: %s", c.fixture, rel, e)
						}
					}
				} else {
					fxs, _ := filepath.Glob(filepath.Join("../../testdata/spark-state", Line(rel)+".*", c.fixture))
					if len(fxs) == 0 {
						continue
					}
					src = fxs[0]
					// As scripts/spark-state-fixtures.py had it.
					input = filepath.Join(os.TempDir(), "h8-input-"+filepath.Base(filepath.Dir(fxs[0]))+"-"+c.fixture)
				}
				if _, err := os.Stat(filepath.Join(src, "checkpoint")); err != nil {
					t.Fatalf("%s: no checkpoint (%v): UPDATE_SPARK=1 writes it", c.fixture, err)
				}
				if err := os.RemoveAll(input); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.RemoveAll(input) })
				if c.generated {
					writeRestartInput(t, input, c.query, generatedBatches)
				}
				writeRestartInput(t, input, c.query, restartBatches)
				for _, n := range append([]int{0}, tos...) {
					name := "orig"
					if n > 0 {
						name = fmt.Sprintf("to-%d", n)
					}
					ck := filepath.Join(work, c.fixture, name, "checkpoint")
					copyTree(t, filepath.Join(src, "checkpoint"), ck)
					if n > 0 {
						files := applyRepartition(t, ck, n)
						writeJSON(t, filepath.Join(work, c.fixture, name, "files.json"), files)
						if !strings.HasPrefix(rel, "3.") {
							for _, st := range stores(t, ck) {
								out := filepath.Join(work, c.fixture, name, "state", st[0]+"-"+st[1]+".jsonl")
								_ = os.MkdirAll(filepath.Dir(out), 0o755)
								reads = append(reads, strings.Join([]string{ck, st[0], st[1], out}, "\t"))
							}
						}
					}
					out := filepath.Join(work, c.fixture, name, "output.jsonl")
					reqs = append(reqs, strings.Join([]string{c.query, ck, input, out}, "\t"))
					runs = append(runs, run{c.fixture, name, out})
				}
			}
			if len(runs) == 0 {
				t.Fatalf("no fixture of %v for Spark %s", repartitionCases, Line(rel))
			}
			// Spark's reader first: the restarts write new versions.
			if len(reads) > 0 {
				runStateRead(t, rel, reads)
			}
			runJava(t, rel, "RepartitionRestart", reqs)
			normalizeErrors(t, work)
			for _, r := range runs {
				if e, err := os.ReadFile(r.out + ".error"); err == nil {
					t.Errorf("%s %s: the restart failed on Spark %s: %s", r.fixture, r.dir, rel, e)
				}
			}
			for _, c := range repartitionCases {
				base := filepath.Join(work, c.fixture)
				if _, err := os.Stat(base); err != nil {
					continue
				}
				want, _ := os.ReadFile(filepath.Join(base, "orig", "output.jsonl"))
				if len(bytes.TrimSpace(want)) == 0 {
					t.Errorf("%s: the restart of Spark's own checkpoint emitted nothing", c.fixture)
				}
				for _, n := range tos {
					dir := filepath.Join(base, fmt.Sprintf("to-%d", n))
					got, _ := os.ReadFile(filepath.Join(dir, "output.jsonl"))
					if !bytes.Equal(got, want) {
						t.Errorf("%s to %d partitions: Spark's restart emitted\n%s\nwithout the repartition\n%s", c.fixture, n, got, want)
					}
					parts, _ := os.ReadFile(filepath.Join(dir, "output.jsonl.partitions"))
					lines := strings.Fields(strings.ReplaceAll(string(parts), "\t", " "))
					if len(lines) == 0 {
						t.Errorf("%s to %d: no batch ran", c.fixture, n)
					}
					for i := 1; i < len(lines); i += 2 {
						if lines[i] != fmt.Sprint(n) {
							t.Errorf("%s to %d: batch %s ran with %s shuffle partitions", c.fixture, n, lines[i-1], lines[i])
						}
					}
				}
				golden := filepath.Join(repartitionGoldens, rel, c.fixture)
				if update {
					_ = os.RemoveAll(golden)
					copyTree(t, base, golden)
					for _, d := range []string{"orig", "to-4", "to-1"} {
						_ = os.RemoveAll(filepath.Join(golden, d, "checkpoint"))
					}
					continue
				}
				compareTrees(t, golden, base)
			}
		})
	}
}

// normalizeErrors replaces the test's directory in Spark's error files with <work>, so that
// they compare with the goldens.
func normalizeErrors(t *testing.T, work string) {
	t.Helper()
	errs, _ := filepath.Glob(filepath.Join(work, "*", "*", "*.error"))
	more, _ := filepath.Glob(filepath.Join(work, "*", "*", "state", "*.error"))
	for _, e := range append(errs, more...) {
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e, bytes.ReplaceAll(data, []byte(work), []byte("<work>")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compareTrees checks that every golden file has the same bytes in dir.
func compareTrees(t *testing.T, golden, dir string) {
	t.Helper()
	n := 0
	err := filepath.Walk(golden, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(golden, p)
		if _, err := os.Stat(filepath.Join(dir, strings.Split(rel, string(filepath.Separator))[0])); err != nil {
			return nil // a run this test did not make (CKPT_SPARK_REPARTITION=ci)
		}
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: Spark no longer answers as the golden says (rerun with UPDATE_SPARK=1 if expected):\n%s\ngolden:\n%s", rel, got, want)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Errorf("no goldens in %s (%v): UPDATE_SPARK=1 go test ./internal/sparkoracle -run TestSparkLiveRepartition", golden, err)
	}
}

// applyRepartition plans ckpt's repartition of ck to n partitions and writes the planned files
// (the journal is internal/cmd/state's test); it returns each file's SHA-256.
func applyRepartition(t *testing.T, ck string, n int) map[string]string {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, ck, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stage := storage.NewMem()
	p, err := repartition.NewPlan(ctx, st, repartition.Options{Partitions: n, Stage: stage, StageRun: "oracle"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Refused != "" {
		t.Fatalf("%s: refused: %s", ck, p.Refused)
	}
	out := map[string]string{}
	for _, a := range p.Actions {
		data := a.Data
		if a.Op == journal.OpCopy {
			if data, err = stage.ReadFile(ctx, a.From); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.WriteFile(ctx, a.Path, data); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		out[a.Path] = hex.EncodeToString(sum[:])
	}
	return out
}

// writeRestartInput writes the input files of batches as scripts/spark-state-fixtures.py
// writes a batch's (rows()), under dir/a (and dir/b for the join).
func writeRestartInput(t *testing.T, dir, query string, batches []int) {
	t.Helper()
	sides := map[string]string{"a": ""}
	if query == "join" {
		sides = map[string]string{"a": "a", "b": "b"}
	}
	for side, suffix := range sides {
		d := filepath.Join(dir, side)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, batch := range batches {
			var buf bytes.Buffer
			for i := range 6 {
				row := map[string]any{
					"k": fmt.Sprintf("k%d", (i+batch)%5), "b": i % 2, "x": batch*10 + i, "d": float64(batch+i) / 4,
					"s": fmt.Sprintf("v%d-%d%s", batch, i, suffix), "flag": i%3 == 0,
					"ts": fmt.Sprintf("2024-01-0%dT00:00:0%d.123Z", batch+1, i), "day": fmt.Sprintf("2024-02-0%d", i+1),
					"amt": fmt.Sprintf("%d.%02d", batch, i),
				}
				line, _ := json.Marshal(row)
				buf.Write(append(line, '\n'))
			}
			line, _ := json.Marshal(map[string]any{"k": fmt.Sprintf("new%d", batch), "b": 0, "x": batch, "d": 0.5,
				"s": nil, "flag": nil, "ts": nil, "day": nil, "amt": nil})
			buf.Write(append(line, '\n'))
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%d.json", batch)), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// javaCommand compiles spark/<class>.java against release rel's jars and returns the java
// command that runs it with heap (-Xmx) and the module openings Spark needs on Java 17.
func javaCommand(t testing.TB, rel, class, heap string) *exec.Cmd {
	t.Helper()
	jars := filepath.Join(sparkCache(), rel, "jars", "*")
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-nowarn", "-d", classes, "-cp", jars, "../../spark/"+class+".java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	args := []string{"-Xmx" + heap, "-XX:+UseSerialGC", "-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true"}
	for _, p := range strings.Fields("java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util java.util.concurrent java.util.concurrent.atomic sun.nio.ch sun.nio.cs sun.security.action sun.util.calendar") {
		args = append(args, "--add-opens=java.base/"+p+"=ALL-UNNAMED")
	}
	args = append(args, "-cp", classes+string(os.PathListSeparator)+jars, class)
	return exec.Command("java", args...)
}

// runJava compiles spark/<class>.java for rel and runs every request in one JVM, with the
// module openings of spark/restart (Spark's launcher's JavaModuleOptions on Java 17).
func runJava(t *testing.T, rel, class string, reqs []string) {
	t.Helper()
	cmd := javaCommand(t, rel, class, "1g")
	cmd.Stdin = strings.NewReader(strings.Join(reqs, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", class, err, lastBytes(stderr.String(), 4000))
	}
	if done := strings.Count(string(out), "done\t"); done != len(reqs) {
		t.Fatalf("%s answered %d of %d requests\n%s", class, done, len(reqs), lastBytes(stderr.String(), 4000))
	}
}
