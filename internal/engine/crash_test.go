package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// ckptBin is the ckpt binary built once by TestMain for the subprocess tests.
var ckptBin string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "ckpt-engine-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		ckptBin = filepath.Join(dir, "ckpt")
		args := []string{"build", "-o", ckptBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "github.com/ckpt-dev/ckpt/cmd/ckpt")...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			// A build failure fails the package: the crash matrix is not optional.
			fmt.Fprintln(os.Stderr, "building ckpt:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// crashScenario is one sink of the crash matrix.
type crashScenario struct {
	name string
	sink []string // ckpt run flags for the sink
	// exactly: 0 lost and 0 duplicated; otherwise duplicates only inside predicted re-runs.
	exactly bool
	// output returns how often each input record ("in/p/i") reached the sink.
	output    func(t *testing.T) map[string]int
	sinkStore func(t *testing.T) storage.Store
}

// The crash matrix: SIGKILL at 20 seeded random moments and --fail-at at every phase, restart
// each time, then check loss and duplicates per sink and the checkpoint's conformance.
func TestCrashMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash matrix skipped in -short mode")
	}
	perPartition, kills := 1000, 20
	if raceEnabled {
		perPartition, kills = 150, 8
	}
	const parts = 3
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: parts},
		embedkafka.TopicSpec{Name: "eo", Partitions: 2}, embedkafka.TopicSpec{Name: "alo", Partitions: 2})
	// The input arrives in rounds, one before each run, so that every run has batches to do.
	rounds := kills + 4
	chunk := perPartition / rounds
	perPartition = chunk * rounds
	produced := 0
	produceRound := func() {
		for p := int32(0); p < parts; p++ {
			produce(t, b.Addr(), "in", p, produced, chunk)
		}
		produced += chunk
	}
	total := parts * perPartition

	fileOut := t.TempDir()
	scenarios := []*crashScenario{
		{name: "file", exactly: true,
			sink:   []string{"--sink", "json", "--sink-option", "path=" + fileOut, "--select", "CAST(value AS STRING) AS value", "--select", "offset"},
			output: func(t *testing.T) map[string]int { return readFileSink(t, fileOut) },
			sinkStore: func(t *testing.T) storage.Store {
				s, err := storage.NewLocal(fileOut)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}},
		{name: "kafka-exactly-once", exactly: true,
			sink:   []string{"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + b.Addr(), "--sink-option", "topic=eo", "--sink-option", "exactlyOnce=true", "--select", "value"},
			output: func(t *testing.T) map[string]int { return readTopic(t, b.Addr(), "eo", true) }},
		{name: "kafka-at-least-once",
			sink:   []string{"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + b.Addr(), "--sink-option", "topic=alo", "--select", "value"},
			output: func(t *testing.T) map[string]int { return readTopic(t, b.Addr(), "alo", false) }},
	}
	// The scenarios run one after the other, each over the same input, produced round by round
	// during the first.
	for i, sc := range scenarios {
		first := i == 0
		round := func() {
			if first {
				produceRound()
			}
		}
		t.Run(sc.name, func(t *testing.T) {
			ckpt := t.TempDir()
			base := []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + b.Addr(), "--option", "subscribe=in",
				"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=20", "--trigger", "availableNow", "--checkpoint", ckpt}
			base = append(base, sc.sink...)
			rng := rand.New(rand.NewSource(int64(42 + i)))
			var allowed []recovery.PartitionRange // at-least-once: where duplicates may be
			predict := func() {
				cp, err := checkpoint.Load(context.Background(), mustLocal(t, ckpt))
				if err != nil {
					t.Fatal(err)
				}
				plan, err := recovery.Plan(context.Background(), cp, recovery.Options{Mode: recovery.ModeSync, SparkVersion: SparkVersion})
				if err != nil {
					t.Fatal(err)
				}
				if plan.Failed() {
					t.Fatalf("after a crash the planner predicts failure: %s", plan.Verdict())
				}
				allowed = append(allowed, plan.Kafka...)
			}
			nextBatch := func() int64 {
				cp, err := checkpoint.Load(context.Background(), mustLocal(t, ckpt))
				if err != nil {
					t.Fatal(err)
				}
				if l, ok := cp.Offsets.Latest(); ok {
					return l + 1
				}
				return 0
			}
			killed, failed := 0, 0
			// Random SIGKILLs.
			for k := 0; k < kills; k++ {
				delay := time.Duration(5+rng.Intn(60)) * time.Millisecond
				if raceEnabled {
					delay *= 4
				}
				round()
				if runKilled(t, base, delay) {
					killed++
				}
				predict()
			}
			// --fail-at at every phase, each on the batch after the next.
			for _, phase := range []string{PhaseAfterOffsets, PhaseMidSink, PhaseBeforeCommit} {
				round()
				n := nextBatch() + 1
				out, code := runCkpt(t, append(base, "--fail-at", fmt.Sprintf("batch=%d,phase=%s", n, phase)), 60*time.Second)
				if code == FailExitCode {
					failed++
				} else if code != 0 {
					t.Fatalf("--fail-at %s: exit %d\n%s", phase, code, out)
				}
				predict()
			}
			// Run to the end.
			round()
			if out, code := runCkpt(t, base, 120*time.Second); code != 0 {
				t.Fatalf("final run: exit %d\n%s", code, out)
			}
			got := sc.output(t)
			lost, dups, badDups := 0, 0, 0
			for p := 0; p < parts; p++ {
				for i := 0; i < perPartition; i++ {
					v := fmt.Sprintf("in/%d/%d", p, i)
					c := got[v]
					delete(got, v)
					switch {
					case c == 0:
						lost++
					case c > 1:
						dups += c - 1
						if sc.exactly || c-1 > coveredBy(allowed, "in", int32(p), int64(i)) {
							badDups++
						}
					}
				}
			}
			t.Logf("%s: %d records, %d SIGKILLs landed, %d --fail-at exits, %d re-run ranges predicted; lost %d, duplicated %d (outside prediction: %d)",
				sc.name, total, killed, failed, len(allowed), lost, dups, badDups)
			if lost > 0 || badDups > 0 || len(got) > 0 {
				t.Errorf("lost %d, unexpected duplicates %d, unknown records %d", lost, badDups, len(got))
			}
			var ss storage.Store
			if sc.sinkStore != nil {
				ss = sc.sinkStore(t)
			}
			checkConformance(t, mustLocal(t, ckpt), ss)
		})
	}
}

// coveredBy counts the predicted re-run ranges that contain offset o.
func coveredBy(rs []recovery.PartitionRange, topic string, p int32, o int64) int {
	n := 0
	for _, r := range rs {
		if r.Topic != topic || r.Partition != p {
			continue
		}
		start := int64(0)
		if r.Start != nil {
			start = *r.Start
		}
		if r.End != nil && o >= start && o < *r.End {
			n++
		}
	}
	return n
}

func mustLocal(t *testing.T, dir string) storage.Store {
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runCkpt runs the ckpt binary to its end and returns its output and exit code.
func runCkpt(t *testing.T, args []string, timeout time.Duration) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ckptBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return out.String(), 128 + int(ws.Signal()) // as a shell reports it: SIGKILL is 137
		}
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// runKilled starts ckpt and SIGKILLs it after delay; false when it ended first.
func runKilled(t *testing.T, args []string, delay time.Duration) bool {
	cmd := exec.Command(ckptBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ckpt ended before the kill: %v\n%s", err, out.String())
		}
		return false
	case <-time.After(delay):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return true
	}
}

// readFileSink counts the "value" of every row in the files the sink log lists.
func readFileSink(t *testing.T, dir string) map[string]int {
	ctx := context.Background()
	st := mustLocal(t, dir)
	sum, err := sinklog.Summarize(ctx, st, SinkMetadataDir)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.HasLatest {
		t.Fatal("empty sink log")
	}
	interval, _ := sinklog.CompactInterval(sum.Compacts, sinklog.DefaultCompactInterval)
	fs := &FileSink{store: st}
	counts := map[string]int{}
	valid, _ := sinklog.ValidBatches(sum.Latest, interval)
	for id := valid.First; id <= valid.Last; id++ {
		entries, err := fs.readBatch(ctx, id, sum.Compacts)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(strings.TrimPrefix(e.Path, "file:"))
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				var row struct{ Value string }
				if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
					t.Fatal(err)
				}
				counts[row.Value]++
			}
		}
	}
	return counts
}

// readTopic counts the values in topic (read_committed or not) up to its end.
func readTopic(t *testing.T, addr, topic string, committed bool) map[string]int {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Every topic read here holds records. A new client on a loaded machine can take seconds
	// before its first fetch returns data, so quiet polls count only once data has arrived;
	// the deadline bounds a topic that stays empty.
	counts := map[string]int{}
	idle := 0
	deadline := time.Now().Add(90 * time.Second)
	for idle < 3 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { counts[string(r.Value)]++; n++ })
		switch {
		case n > 0:
			idle = 0
		case len(counts) > 0:
			idle++
		}
	}
	return counts
}

var _ = logformat.SinkFileStatus{}
