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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/scenario"
)

// The queries BenchmarkAggThroughputVsSpark can run (CKPT_BENCH_QUERY), in the SQL both
// engines parse: the same text goes to `ckpt run --group-by/--agg` and to Spark's
// groupBy(expr...).agg(expr...).
var aggBenchQueries = map[string][2][]string{
	// A grouped count over the record keys (CKPT_BENCH_KEYS of them).
	"grouped": {{"CAST(key AS STRING) AS k"}, {"count(*) AS n"}},
	// The windowed count of issue 22: per 1-minute window of the record timestamp and key.
	"windowed": {{"window(timestamp, '1 minute') AS w", "CAST(key AS STRING) AS k"}, {"count(*) AS n"}},
}

// BenchmarkAggThroughputVsSpark is the throughput of a streaming aggregation over Kafka by
// `ckpt run` against Spark local[2] running the same query on the same input on the same
// machine. It runs CKPT_BENCH_PAIRS (3) pairs, ckpt then Spark, each on a fresh checkpoint, reading the
// whole topic with Trigger.AvailableNow in batches of maxOffsetsPerTrigger, the noop sink,
// Spark's default 200 shuffle (state) partitions on both. Spark runs in one JVM started before
// the pairs (its start-up is reported, not counted) after one untimed warm-up query; ckpt is
// the built binary, one process per run (its start-up counted). The ratio is Spark's query
// time over ckpt's (above 1: ckpt is faster); the CPU ratio compares the two processes' CPU
// time (the broker runs in this process, counted on neither side).
//
// Environment: CKPT_BENCH_QUERY grouped (default) or windowed, or CKPT_BENCH_GROUP_BY and
// CKPT_BENCH_AGG (';'-separated SQL); CKPT_BENCH_PAIRS (3; run with -benchtime 1x, as the
// set-up takes minutes and the benchmark framework would repeat it); CKPT_BENCH_RECORDS (2000000), CKPT_BENCH_KEYS (5000),
// CKPT_BENCH_PARTITIONS (4), CKPT_BENCH_MAX_OFFSETS (500000), CKPT_BENCH_SHUFFLE (200),
// CKPT_BENCH_SPARK (a release; default the newest of CKPT_SPARK_VERSIONS), CKPT_BENCH_BIN
// (a ckpt binary; default: built from this tree), CKPT_BENCH_WATERMARK (COLUMN=DELAY, e.g.
// "timestamp=10 seconds": `ckpt run --watermark` and Spark's withWatermark; default none).
//
//	go test -run '^$' -bench AggThroughputVsSpark -benchtime 1x -timeout 60m -v ./internal/sparkoracle/
func BenchmarkAggThroughputVsSpark(b *testing.B) {
	rels := releasesFromEnv(b)
	rel := envOr("CKPT_BENCH_SPARK", rels[len(rels)-1])
	if _, err := os.Stat(filepath.Join(sparkCache(), rel, "jars", ".complete")); err != nil {
		b.Skipf("Spark %s not installed: scripts/spark.sh install %s", rel, Line(rel))
	}
	q := aggBenchQueries[envOr("CKPT_BENCH_QUERY", "grouped")]
	if q[0] == nil {
		b.Fatalf("CKPT_BENCH_QUERY=%s: want grouped or windowed", os.Getenv("CKPT_BENCH_QUERY"))
	}
	groupBy, agg := q[0], q[1]
	if s := os.Getenv("CKPT_BENCH_GROUP_BY"); s != "" {
		groupBy = strings.Split(s, ";")
	}
	if s := os.Getenv("CKPT_BENCH_AGG"); s != "" {
		agg = strings.Split(s, ";")
	}
	records, keys, parts := envInt(b, "CKPT_BENCH_RECORDS", 2_000_000), envInt(b, "CKPT_BENCH_KEYS", 5000), envInt(b, "CKPT_BENCH_PARTITIONS", 4)
	pairs := envInt(b, "CKPT_BENCH_PAIRS", 3)
	maxOffsets, shuffle := envInt(b, "CKPT_BENCH_MAX_OFFSETS", 500_000), envInt(b, "CKPT_BENCH_SHUFFLE", 200)
	var watermark []string
	if s := os.Getenv("CKPT_BENCH_WATERMARK"); s != "" {
		col, delay, ok := strings.Cut(s, "=")
		if !ok {
			b.Fatalf("CKPT_BENCH_WATERMARK=%s: want COLUMN=DELAY", s)
		}
		watermark = []string{col, delay}
	}
	dir := b.TempDir()

	bin := os.Getenv("CKPT_BENCH_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "ckpt")
		if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ckpt").CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	br, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "in", Partitions: int32(parts)}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	t0 := time.Now()
	produceBench(b, br.Addr(), records, keys)
	b.Logf("query: group by %q, agg %q, watermark %q; %d records, %d keys, %d partitions, maxOffsetsPerTrigger %d, %d shuffle partitions; produced in %v",
		groupBy, agg, watermark, records, keys, parts, maxOffsets, shuffle, time.Since(t0).Round(time.Millisecond))

	spark := startAggBench(b, rel)
	defer spark.close()
	b.Logf("Spark %s JVM start-up (not counted): %v", rel, spark.startup.Round(time.Millisecond))

	run := 0
	ckptRun := func() aggSide {
		run++
		ck, progress := filepath.Join(dir, fmt.Sprintf("ckpt-%d", run)), filepath.Join(dir, fmt.Sprintf("ckpt-%d.jsonl", run))
		args := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + br.Addr(), "--option", "subscribe=in",
			"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=" + strconv.Itoa(maxOffsets),
			"--sink", "noop", "--checkpoint", ck, "--trigger", "availableNow", "--progress-log", progress,
			"--spark-version", Line(rel), "--conf", "spark.sql.shuffle.partitions=" + strconv.Itoa(shuffle), "--output-mode", "update"}
		for _, g := range groupBy {
			args = append(args, "--group-by", g)
		}
		for _, a := range agg {
			args = append(args, "--agg", a)
		}
		if watermark != nil {
			args = append(args, "--watermark", watermark[0]+"="+watermark[1])
		}
		cmd := exec.Command(bin, args...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		if err != nil {
			b.Fatalf("ckpt run: %v\n%s", err, lastBytes(string(out), 4000))
		}
		s := aggSide{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
		s.rows, s.batches = progressRows(b, progress)
		os.RemoveAll(ck)
		return s
	}
	sparkRun := func() aggSide {
		run++
		req := map[string]any{"result": filepath.Join(dir, fmt.Sprintf("spark-%d.json", run)), "checkpoint": filepath.Join(dir, fmt.Sprintf("spark-%d", run)),
			"bootstrap": br.Addr(), "topic": "in", "groupBy": groupBy, "agg": agg, "outputMode": "update", "sink": "noop", "timeoutMs": 3_600_000,
			"maxOffsetsPerTrigger": strconv.Itoa(maxOffsets), "shufflePartitions": strconv.Itoa(shuffle)}
		if watermark != nil {
			req["watermark"] = watermark
		}
		s := spark.run(b, req)
		os.RemoveAll(req["checkpoint"].(string))
		return s
	}
	check := func(name string, s aggSide) {
		if s.rows != int64(records) {
			b.Fatalf("%s read %d rows in %d batches, want %d", name, s.rows, s.batches, records)
		}
	}
	// Warm-up, untimed: Spark's JIT and the binary's pages.
	check("ckpt", ckptRun())
	check("Spark", sparkRun())

	var ckptWall, sparkWall, ckptCPU, sparkCPU time.Duration
	var ratios, cpuRatios []float64
	b.ResetTimer()
	for i := 0; i < pairs; i++ {
		l0 := loadAvg()
		c := ckptRun()
		l1 := loadAvg()
		s := sparkRun()
		l2 := loadAvg()
		check("ckpt", c)
		check("Spark", s)
		ckptWall, sparkWall, ckptCPU, sparkCPU = ckptWall+c.wall, sparkWall+s.wall, ckptCPU+c.cpu, sparkCPU+s.cpu
		ratios, cpuRatios = append(ratios, s.wall.Seconds()/c.wall.Seconds()), append(cpuRatios, s.cpu.Seconds()/c.cpu.Seconds())
		b.Logf("pair %d: ckpt %v (cpu %v, %d batches, %.0f rec/s), Spark %v (cpu %v, triggers %v, %d batches, %.0f rec/s): ratio %.2f, cpu ratio %.2f; load %s | %s | %s",
			i+1, c.wall.Round(time.Millisecond), c.cpu.Round(time.Millisecond), c.batches, float64(records)/c.wall.Seconds(),
			s.wall.Round(time.Millisecond), s.cpu.Round(time.Millisecond), s.trigger, s.batches, float64(records)/s.wall.Seconds(),
			ratios[i], cpuRatios[i], l0, l1, l2)
	}
	b.StopTimer()
	n := float64(pairs) * float64(records)
	b.ReportMetric(n/ckptWall.Seconds(), "ckpt-rec/s")
	b.ReportMetric(n/sparkWall.Seconds(), "spark-rec/s")
	b.ReportMetric(sparkWall.Seconds()/ckptWall.Seconds(), "x-spark")
	b.ReportMetric(sparkCPU.Seconds()/ckptCPU.Seconds(), "x-spark-cpu")
	b.ReportMetric(slices.Min(ratios), "min-ratio")
}

// aggSide is one run of the query: its wall and CPU time, the rows it read and its batches.
type aggSide struct {
	wall, cpu, trigger time.Duration
	rows               int64
	batches            int
}

// produceBench writes records records to topic "in": keys u0..u<keys-1> in turn (partitioned
// by key hash) and ckpt broker's generated JSON values, their timestamps spread evenly over
// ten minutes (ten 1-minute windows).
func produceBench(b *testing.B, addr string, records, keys int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	span := 10 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	errs := make(chan error, 1)
	for i := 0; i < records; i++ {
		ts := base.Add(time.Duration(int64(span) * int64(i) / int64(records)))
		k, v := embedkafka.Record(int64(i), keys, ts)
		cl.Produce(ctx, &kgo.Record{Key: k, Value: v, Timestamp: ts}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// progressRows sums the input rows of ckpt run's progress log and counts its batches.
func progressRows(b *testing.B, path string) (int64, int) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	batches := 0
	dec := json.NewDecoder(strings.NewReader(string(data)))
	for {
		var ev struct {
			NumInputRows int64 `json:"numInputRows"`
		}
		if err := dec.Decode(&ev); err == io.EOF {
			return rows, batches
		} else if err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		if ev.NumInputRows > 0 {
			rows += ev.NumInputRows
			batches++
		}
	}
}

// aggBenchJVM is spark/AggRun.java running (master local[2]), answering one request at a time.
type aggBenchJVM struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	startup time.Duration
}

func startAggBench(b *testing.B, rel string) *aggBenchJVM {
	cmd := javaCommand(b, rel, "AggRun", envOr("CKPT_SPARK_HEAP", "2g"))
	cmd.Args = append(cmd.Args, "local[2]")
	cmd.Stderr = io.Discard
	if testing.Verbose() && os.Getenv("CKPT_BENCH_SPARK_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	j := &aggBenchJVM{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if !j.out.Scan() || j.out.Text() != "ready" {
		j.close()
		b.Fatalf("AggRun did not start (set CKPT_BENCH_SPARK_LOG=1 with -v for its log)")
	}
	j.startup = time.Since(start)
	return j
}

func (j *aggBenchJVM) run(b *testing.B, req map[string]any) aggSide {
	line, _ := json.Marshal(req)
	if _, err := j.in.Write(append(line, '\n')); err != nil {
		b.Fatal(err)
	}
	if !j.out.Scan() || !strings.HasPrefix(j.out.Text(), "done\t") {
		b.Fatalf("AggRun ended without answering")
	}
	data, err := os.ReadFile(req["result"].(string))
	if err != nil {
		b.Fatal(err)
	}
	var r struct {
		Outcome, Error string
		QueryMs, CPUMs float64
		TriggerMs      int64
		InputRows      int64
		Batches        []int64
	}
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatal(err)
	}
	if r.Outcome != "ok" {
		b.Fatalf("Spark: %s", r.Error)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return aggSide{wall: ms(r.QueryMs), cpu: ms(r.CPUMs), trigger: time.Duration(r.TriggerMs) * time.Millisecond, rows: r.InputRows, batches: len(r.Batches)}
}

func (j *aggBenchJVM) close() {
	j.in.Close()
	done := make(chan struct{})
	go func() { j.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		j.cmd.Process.Kill()
		<-done
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(b *testing.B, name string, def int) int {
	n, err := scenario.EnvInt(name, def)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// loadAvg is the 1-minute load average, for the log.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
