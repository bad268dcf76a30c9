package sparkoracle

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
)

// Pinned releases (scripts/spark.sh PINNED): the goldens' directory names.
var pinned = []string{"3.5.7", "4.0.0", "4.1.1", "4.2.0"}

const goldenDir = "../../testdata/spark-oracle"

// releasesFromEnv is CKPT_SPARK_VERSIONS (pinned versions or their lines, space or comma
// separated) resolved to pinned versions; default every pinned release.
func releasesFromEnv(t testing.TB) []string {
	env := strings.FieldsFunc(os.Getenv("CKPT_SPARK_VERSIONS"), func(r rune) bool { return r == ' ' || r == ',' })
	if len(env) == 0 {
		return pinned
	}
	var out []string
	for _, v := range env {
		found := false
		for _, p := range pinned {
			if v == p || Line(p) == v {
				out = append(out, p)
				found = true
			}
		}
		if !found {
			t.Fatalf("CKPT_SPARK_VERSIONS: no pinned release for %q (pinned: %v)", v, pinned)
		}
	}
	return out
}

// ciReleases are the releases a long live test runs on: all of releasesFromEnv, or with
// CKPT_SPARK_LIVE=ci (CI's live stage, which has a time budget) the oldest and the newest of
// them, the two ends of what ckpt writes for.
func ciReleases(t testing.TB) []string {
	rs := releasesFromEnv(t)
	if os.Getenv("CKPT_SPARK_LIVE") == "ci" && len(rs) > 2 {
		return []string{rs[0], rs[len(rs)-1]}
	}
	return rs
}

// ciRelease is ciReleases cut to one release in CI mode (CKPT_SPARK_LIVE=ci): the oldest with
// oldest set, else the newest. The stateful hand-overs after the aggregation's take one each, so
// that CI's live stage keeps within the budget of DEVELOPERS.md while both ends stay covered;
// scripts/spark-suite.sh runs every release.
func ciRelease(t testing.TB, oldest bool) []string {
	rs := ciReleases(t)
	if os.Getenv("CKPT_SPARK_LIVE") != "ci" || len(rs) < 2 {
		return rs
	}
	if oldest {
		return rs[:1]
	}
	return rs[len(rs)-1:]
}

func sparkCache() string {
	if d := os.Getenv("CKPT_SPARK_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ckpt-spark")
}

// TestSparkLive restarts every case with real Spark (spark/restart, one JVM per release) and
// checks Spark's answers against the stored goldens; UPDATE_SPARK=1 rewrites the goldens from
// them instead. CKPT_SPARK_CASES=all adds the generated checkpoints to the scenario cases.
// Without an installed release (scripts/spark.sh install) it is skipped, except in CI.
func TestSparkLive(t *testing.T) {
	subset := os.Getenv("CKPT_SPARK_CASES")
	if subset == "" {
		subset = "scenarios"
	}
	if subset != "scenarios" && subset != "all" && subset != "generated" && subset != "none" {
		t.Fatalf("CKPT_SPARK_CASES=%q: want scenarios, generated, all or none", subset)
	}
	update := os.Getenv("UPDATE_SPARK") == "1"
	for _, rel := range releasesFromEnv(t) {
		t.Run(rel, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(sparkCache(), rel, "jars", ".complete")); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("Spark %s is not installed in %s (CI must run scripts/spark.sh install)", rel, sparkCache())
				}
				t.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
			}
			runRelease(t, rel, filterCases(t, allCases(subset)), update)
		})
	}
}

// harness is one spark/restart JVM fed case by case on stdin (--cases -).
type harness struct {
	t       testing.TB
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	log     string
	cancel  context.CancelFunc
	started time.Time
}

func startHarness(t testing.TB, rel string) *harness {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "spark.log")
	logw, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	cmd := exec.CommandContext(ctx, "../../spark/restart", rel, "--cases", "-")
	cmd.Stderr = logw
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outp)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	h := &harness{t: t, cmd: cmd, in: in, out: sc, log: logFile, cancel: cancel, started: time.Now()}
	t.Cleanup(func() { h.close(); logw.Close() })
	return h
}

// run sends one case and waits for its result.
func (h *harness) run(c map[string]any) Result {
	h.t.Helper()
	line, _ := json.Marshal(c)
	if _, err := h.in.Write(append(line, '\n')); err != nil {
		h.t.Fatalf("harness: %v\n%s", err, tail(h.log, 40))
	}
	if !h.out.Scan() {
		h.t.Fatalf("harness ended without a result for %v: %v\n%s", c["name"], h.out.Err(), tail(h.log, 60))
	}
	var r Result
	if err := json.Unmarshal(h.out.Bytes(), &r); err != nil {
		h.t.Fatalf("harness output is not JSON: %v: %s", err, h.out.Text())
	}
	return r
}

func (h *harness) close() {
	if h.in != nil {
		h.in.Close()
		h.in = nil
		done := make(chan struct{})
		go func() { _ = h.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			h.cancel()
			<-done
		}
		h.cancel()
		if ps := h.cmd.ProcessState; ps != nil {
			// CPU time says what the run costs on an idle machine; wall time depends on the load.
			h.t.Logf("Spark JVM: %s wall, %s CPU", time.Since(h.started).Round(time.Second), (ps.UserTime() + ps.SystemTime()).Round(time.Second))
		}
	}
}

func runRelease(t *testing.T, rel string, cases []oracleCase, update bool) {
	h := startHarness(t, rel)
	start := time.Now()
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), c.name)
		ck, out := c.layout(t, dir)
		topics := topicData(c.build.Files())
		b := startBroker(t, topics, c.mode == "async")
		opts := map[string]string{}
		for k, v := range c.options {
			opts[k] = v
		}
		for k, v := range subscribeOption(c.build.Files(), topics) {
			opts[k] = v
		}
		r := h.run(map[string]any{"name": c.name, "checkpoint": ck, "output": out, "bootstrap": b.Addr(),
			"sink": c.sink, "trigger": c.trigger, "options": opts, "timeoutMs": 120000})
		b.Close()
		r = normalizeResult(t, r, map[string]string{ck: "<checkpoint>", out: "<output>"})
		g := Golden{Case: c.name, Release: rel, Mode: c.mode, Checkpoint: c.checkpoint, Sink: c.sink,
			Trigger: c.trigger, Options: c.options, SinkLatest: c.sinkLatest, Spark: r}
		path := filepath.Join(goldenDir, rel, c.name+".json")
		if update {
			writeJSON(t, path, g)
			continue
		}
		var old Golden
		readJSON(t, path, &old)
		if diff := sparkDiff(old.Spark, r); diff != "" {
			t.Errorf("%s on Spark %s: Spark no longer does what the golden says (%s); rerun with UPDATE_SPARK=1 if expected", c.name, rel, diff)
		}
	}
	t.Logf("Spark %s: %d cases in one JVM in %s", rel, len(cases), time.Since(start).Round(time.Second))
	if os.Getenv("CKPT_SPARK_HANDOVER") != "0" {
		start = time.Now()
		t.Run("hand-over", func(t *testing.T) { handOver(t, h, rel) })
		t.Run("hand-over-kafka", func(t *testing.T) { handOverKafka(t, h, rel, update) })
		t.Run("hand-over-async", func(t *testing.T) { handOverAsync(t, h, rel) })
		t.Run("written", func(t *testing.T) { writeCheckpoints(t, h, rel, update) })
		t.Logf("Spark %s: hand-over and written checkpoints in %s", rel, time.Since(start).Round(time.Second))
	}
	if os.Getenv("CKPT_SPARK_REPAIRS") != "0" {
		t.Run("repairs", func(t *testing.T) { runRepairs(t, h, rel, update) })
	}
}

// sparkDiff compares what matters of two observations: outcome, error, error class, batches.
func sparkDiff(a, b Result) string {
	switch {
	case a.Outcome != b.Outcome:
		return fmt.Sprintf("outcome %s, now %s", a.Outcome, b.Outcome)
	case deref(a.Error) != deref(b.Error):
		return fmt.Sprintf("error %q, now %q", deref(a.Error), deref(b.Error))
	case deref(a.ErrorClass) != deref(b.ErrorClass):
		return fmt.Sprintf("errorClass %q, now %q", deref(a.ErrorClass), deref(b.ErrorClass))
	}
	ab, _ := json.Marshal(a.Batches)
	bb, _ := json.Marshal(b.Batches)
	var av, bv any
	_ = json.Unmarshal(ab, &av)
	_ = json.Unmarshal(bb, &bv)
	if !reflect.DeepEqual(av, bv) {
		return fmt.Sprintf("batches %s, now %s", ab, bb)
	}
	return ""
}

func normalizeResult(t testing.TB, r Result, paths map[string]string) Result {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out Result
	if err := json.Unmarshal([]byte(Normalize(string(b), paths)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// startBroker starts an embedded broker holding topics (count records per partition) and, for
// the async cases, the Kafka sink's output topic.
func startBroker(t testing.TB, topics map[string][]int64, withOut bool) *embedkafka.Broker {
	t.Helper()
	var specs []embedkafka.TopicSpec
	for name, parts := range topics {
		specs = append(specs, embedkafka.TopicSpec{Name: name, Partitions: int32(len(parts))})
	}
	if withOut {
		specs = append(specs, embedkafka.TopicSpec{Name: "ckpt-oracle-out", Partitions: 1})
	}
	b, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: specs})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for name, parts := range topics {
		for p, n := range parts {
			for i := int64(0); i < n; i++ {
				recs = append(recs, &kgo.Record{Topic: name, Partition: int32(p), Value: []byte(fmt.Sprintf("%s-%d-%d", name, p, i))})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Close()
		t.Fatalf("produce: %v", err)
	}
	return b
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (goldens are written by UPDATE_SPARK=1 go test ./internal/sparkoracle -run TestSparkLive)", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	ls := strings.Split(string(b), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
