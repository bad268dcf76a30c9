package sparkoracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The damaged state copies: testdata/spark-state-damage/recipe.json says how each is derived
// from a Spark-written fixture of testdata/spark-state, and <release>/<case>.json holds what a
// real restart of that release did (written only by TestSparkLiveStateDamage with UPDATE_SPARK=1).
const damageDir = "../../testdata/spark-state-damage"

// fixtureInput is the input directory scripts/spark-state-fixtures.py gave the query.
var fixtureInput = regexp.MustCompile(`file:/+tmp/h8-input-[^/"]+/a`)

type damageRecipe struct {
	Cases []damageCase `json:"cases"`
}

type damageCase struct {
	Name    string       `json:"name"`
	Fixture string       `json:"fixture"`
	Damage  []damageStep `json:"damage"`
}

type damageStep struct {
	Op   string          `json:"op"`
	Path string          `json:"path"`
	Size json.RawMessage `json:"size,omitempty"`
	At   json.RawMessage `json:"at,omitempty"`
}

// DamageGolden is one recorded restart of a damaged copy.
type DamageGolden struct {
	Case string `json:"case"`
	// Release is the Spark release that restarted the copy; Fixture the fixture it was derived
	// from ("3.5.8/agg-hdfs": the release that wrote it and the case).
	Release string `json:"release"`
	Fixture string `json:"fixture"`
	Spark   Result `json:"spark"`
}

func loadRecipe(t testing.TB) []damageCase {
	t.Helper()
	var r damageRecipe
	readJSON(t, filepath.Join(damageDir, "recipe.json"), &r)
	if len(r.Cases) == 0 {
		t.Fatal("recipe.json has no case")
	}
	return r.Cases
}

// fixtureFor is the fixture directory of the release line (3.5.7 → testdata/spark-state/3.5.8/NAME),
// "" when that line has no such fixture.
func fixtureFor(t testing.TB, rel, name string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("../../testdata/spark-state", Line(rel)+".*", name))
	if len(dirs) > 1 {
		t.Fatalf("several %s fixtures for Spark %s: %v", name, Line(rel), dirs)
	}
	if len(dirs) == 0 {
		return ""
	}
	return dirs[0]
}

// damagedCopy lays out the fixture's checkpoint in dir/checkpoint with the case's damage.
func damagedCopy(t testing.TB, fixture string, c damageCase, dir string) string {
	t.Helper()
	ck := filepath.Join(dir, "checkpoint")
	copyTree(t, filepath.Join(fixture, "checkpoint"), ck)
	for _, s := range c.Damage {
		files, _ := filepath.Glob(filepath.Join(ck, filepath.FromSlash(s.Path)))
		sort.Strings(files)
		if len(files) == 0 {
			t.Fatalf("%s: %s matches no file of %s", c.Name, s.Path, fixture)
		}
		for _, f := range files {
			if err := damage(f, s); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			// Hadoop's local checksum sidecar described the undamaged bytes.
			side := filepath.Join(filepath.Dir(f), "."+filepath.Base(f)+".crc")
			if err := os.Remove(side); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	return ck
}

func damage(f string, s damageStep) error {
	data, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	pos := func(raw json.RawMessage) (int, error) {
		if string(raw) == `"half"` {
			return len(data) / 2, nil
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, fmt.Errorf("%s: want a number or \"half\", got %s", s.Path, raw)
		}
		if n < 0 {
			n += len(data)
		}
		if n < 0 || n > len(data) {
			return 0, fmt.Errorf("%s: %d is outside the file's %d bytes", f, n, len(data))
		}
		return n, nil
	}
	switch s.Op {
	case "remove":
		return os.Remove(f)
	case "truncate":
		n, err := pos(s.Size)
		if err != nil {
			return err
		}
		return os.WriteFile(f, data[:n], 0o644)
	case "flip":
		n, err := pos(s.At)
		if err != nil {
			return err
		}
		if n >= len(data) {
			return fmt.Errorf("%s: no byte at %d", f, n)
		}
		data[n] ^= 0xff
		return os.WriteFile(f, data, 0o644)
	}
	return fmt.Errorf("unknown op %q", s.Op)
}

// restartInput is the new input of the restart's batch (dir/input/a/5.json): every key the
// fixtures' batches wrote, so that every partition loads its state. The file source's log names
// the fixture's input directory, which the fixture script deleted (/tmp/h8-input-<release>-<case>);
// Spark checks that the logged files lie under the query's path, so the copy's source log is
// moved to the new directory (and Hadoop's checksums of the rewritten files dropped).
func restartInput(t testing.TB, dir, ck string) string {
	t.Helper()
	in := filepath.Join(dir, "input", "a")
	logs, _ := filepath.Glob(filepath.Join(ck, "sources", "*", "*"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil || strings.HasPrefix(filepath.Base(f), ".") {
			continue
		}
		moved := fixtureInput.ReplaceAll(data, []byte("file://"+filepath.ToSlash(in)))
		if bytes.Equal(moved, data) {
			continue
		}
		writeFile(t, f, moved)
		_ = os.Remove(filepath.Join(filepath.Dir(f), "."+filepath.Base(f)+".crc"))
	}
	var b bytes.Buffer
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, `{"k":"k%d","b":%d,"x":%d,"d":%g,"s":"v5-%d","flag":%t,"ts":"2024-01-06T00:00:0%d.123Z","day":"2024-02-0%d","amt":"5.%02d"}`+"\n",
			(i+5)%5, i%2, 50+i, float64(5+i)/4, i, i%3 == 0, i, i+1, i)
	}
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&b, `{"k":"new%d","b":0,"x":%d,"d":0.5}`+"\n", i, i)
	}
	writeFile(t, filepath.Join(in, "5.json"), b.Bytes())
	return in
}

// TestSparkLiveStateDamage restarts the damaged copies with real Spark (spark/StateDamage.java,
// one JVM per release) and compares with the goldens; UPDATE_SPARK=1 writes them.
// CKPT_SPARK_STATE_DAMAGE: "small" (default: the first case of the recipe that the release's
// fixtures have), "all", or "0" (none).
func TestSparkLiveStateDamage(t *testing.T) {
	set := os.Getenv("CKPT_SPARK_STATE_DAMAGE")
	if set == "0" {
		t.Skip("CKPT_SPARK_STATE_DAMAGE=0")
	}
	update := os.Getenv("UPDATE_SPARK") == "1"
	cases := loadRecipe(t)
	for _, rel := range releasesFromEnv(t) {
		t.Run(rel, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(sparkCache(), rel, "jars", ".complete")); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("Spark %s is not installed in %s", rel, sparkCache())
				}
				t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
			}
			var reqs []map[string]any
			var golds []DamageGolden
			paths := map[string]map[string]string{}
			for _, c := range cases {
				fx := fixtureFor(t, rel, c.Fixture)
				if fx == "" {
					continue
				}
				dir := filepath.Join(t.TempDir(), c.Name)
				ck := damagedCopy(t, fx, c, dir)
				in := restartInput(t, dir, ck)
				var conf struct {
					Query string            `json:"query"`
					Conf  map[string]string `json:"conf"`
				}
				readJSON(t, filepath.Join(fx, "conf.json"), &conf)
				reqs = append(reqs, map[string]any{"name": c.Name, "checkpoint": ck, "input": in,
					"query": conf.Query, "conf": conf.Conf, "timeoutMs": 180000})
				golds = append(golds, DamageGolden{Case: c.Name, Release: rel, Fixture: filepath.Base(filepath.Dir(fx)) + "/" + c.Fixture})
				paths[c.Name] = map[string]string{ck: "<checkpoint>", in: "<input>"}
				if set != "all" && !update {
					break
				}
			}
			results := runStateDamage(t, rel, reqs)
			for i, g := range golds {
				g.Spark = normalizeDamage(t, results[i], paths[g.Case])
				path := filepath.Join(damageDir, rel, g.Case+".json")
				if update {
					writeJSON(t, path, g)
					continue
				}
				var old DamageGolden
				readJSON(t, path, &old)
				if diff := sparkDiff(old.Spark, g.Spark); diff != "" {
					t.Errorf("%s on Spark %s: Spark no longer does what the golden says (%s)", g.Case, rel, diff)
				}
			}
		})
	}
}

var (
	// What differs between two runs of one case, in a failed task's report: the stage and task
	// ids (they count the JVM's jobs), the executor's host, RocksDB's local working directory
	// and file numbers.
	stageRe   = regexp.MustCompile(`stage [0-9]+\.[0-9]+`)
	tidRe     = regexp.MustCompile(`\(TID [0-9]+\) \([^ ()]+ executor driver\)`)
	workdirRe = regexp.MustCompile(`[^ ]*/workingDir-<uuid>`)
	rocksNoRe = regexp.MustCompile(`(/|MANIFEST-)[0-9]{6}(\.sst)?`)
)

// normalizeDamage is normalizeResult, plus what differs between runs of a failed task, and every
// message cut before its stack trace (the goldens keep what Spark says, not where).
func normalizeDamage(t testing.TB, r Result, paths map[string]string) Result {
	r = normalizeResult(t, r, paths)
	clean := cleanRun
	for i := range r.Causes {
		r.Causes[i] = clean(r.Causes[i])
	}
	for i := range r.Chain {
		r.Chain[i].Message = clean(r.Chain[i].Message)
	}
	r.TopMessage = clean(r.TopMessage)
	if r.Error != nil {
		e := clean(*r.Error)
		r.Error = &e
	}
	return r
}

// cleanRun cuts a message before its stack trace and writes what differs between runs as
// placeholders.
func cleanRun(s string) string {
	// The stack trace, and 4.x's description of the query (its plan's expression ids and
	// object hashes count the JVM's queries).
	for _, cut := range []string{"\n\tat ", "\n=== Streaming Query ==="} {
		if i := strings.Index(s, cut); i >= 0 {
			s = s[:i]
		}
	}
	s = stageRe.ReplaceAllString(s, "stage <stage>")
	s = tidRe.ReplaceAllString(s, "(TID <tid>) (<host> executor driver)")
	s = workdirRe.ReplaceAllString(s, "<workdir>")
	return rocksNoRe.ReplaceAllString(s, "${1}<n>${2}")
}

// runStateDamage compiles spark/StateDamage.java (with Restart.java, whose describe it uses)
// for rel and runs the cases in one JVM, one result per case in order.
func runStateDamage(t *testing.T, rel string, reqs []map[string]any) []Result {
	t.Helper()
	jars := filepath.Join(sparkCache(), rel, "jars", "*")
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-nowarn", "-d", classes, "-cp", jars, "../../spark/Restart.java", "../../spark/StateDamage.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	args := []string{"-Xmx1g", "-XX:+UseSerialGC", "-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true"}
	for _, p := range strings.Fields("java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util java.util.concurrent java.util.concurrent.atomic sun.nio.ch sun.nio.cs sun.security.action sun.util.calendar") {
		args = append(args, "--add-opens=java.base/"+p+"=ALL-UNNAMED")
	}
	args = append(args, "-cp", classes+string(os.PathListSeparator)+jars, "StateDamage")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", args...)
	var in bytes.Buffer
	for _, r := range reqs {
		line, _ := json.Marshal(r)
		in.Write(append(line, '\n'))
	}
	cmd.Stdin = &in
	logFile := filepath.Join(t.TempDir(), "spark.log")
	logw, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logw.Close()
	cmd.Stderr = logw
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("StateDamage: %v\n%s", err, tail(logFile, 60))
	}
	var res []Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r struct {
			Result
			Batches []int64 `json:"batches"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("StateDamage output is not JSON: %v: %s", err, sc.Text())
		}
		for _, id := range r.Batches {
			r.Result.Batches = append(r.Result.Batches, Batch{ID: id})
		}
		res = append(res, r.Result)
	}
	if len(res) != len(reqs) {
		t.Fatalf("StateDamage answered %d of %d cases\n%s", len(res), len(reqs), tail(logFile, 60))
	}
	if ps := cmd.ProcessState; ps != nil {
		t.Logf("Spark %s: %d damaged copies in one JVM: %s wall, %s CPU", rel, len(reqs), time.Since(start).Round(time.Second), (ps.UserTime() + ps.SystemTime()).Round(time.Second))
	}
	return res
}
