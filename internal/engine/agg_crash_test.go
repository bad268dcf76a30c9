package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/position"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/state"
)

// The drilled aggregation: per Kafka key, count and sum of the value, in update mode, to a Kafka
// topic (key, and the sum as the value: a row counted twice changes it), over 3 state partitions.
func aggDrillArgs(addr, ck, topic string) []string {
	return []string{"run", "--source", "kafka", "--option", "kafka.bootstrap.servers=" + addr, "--option", "subscribe=in",
		"--option", "startingOffsets=earliest", "--option", "maxOffsetsPerTrigger=10", "--trigger", "availableNow",
		"--checkpoint", ck, "--group-by", "string(key) AS key", "--agg", "count(*) AS n, sum(int(string(value))) AS value",
		"--output-mode", "update", "--conf", "spark.sql.shuffle.partitions=3",
		"--sink", "kafka", "--sink-option", "kafka.bootstrap.servers=" + addr, "--sink-option", "topic=" + topic}
}

// lastValues reads topic to its end offsets (taken first: the run that wrote it has ended) and
// returns the last value of every key.
func lastValues(t *testing.T, addr, topic string) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var end, got int64
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	out := map[string]string{}
	for got < end && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			out[string(r.Key)] = string(r.Value)
			got++
		})
	}
	if got < end {
		t.Fatalf("read %d of the %d records of %s", got, end, topic)
	}
	return out
}

// stateRows reads the latest state of operator 0 with the reader `ckpt state read` uses: key →
// value row, and the version read.
func stateRows(t *testing.T, ck string) (map[string]string, int64) {
	t.Helper()
	_, r := readState(t, mustLocal(t, ck))
	rows := map[string]string{}
	if err := r.Each(context.Background(), func(row *state.Row) error {
		rows[fmt.Sprint(row.Key().Values...)] = fmt.Sprint(row.Value().Values...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows, r.Version
}

// TestAggregationKillDrills kills a real `ckpt run` process (SIGKILL, --fail-at) running a
// grouped count/sum in update mode at every phase of batch 1: after offsets/1, mid-state-commit
// (partition 0's 2.delta written, partitions 1 and 2's not), mid-sink (half of the batch's
// output acknowledged), before commits/1. Each time the files on disk are what the phase
// leaves, the planner and `ckpt replay` say that batch 1 re-runs against state version 1,
// doctor --deep finds nothing, and a restart of `ckpt run` ends with the last output of every
// key and the state rows of an uninterrupted run: nothing lost, nothing counted twice. Batch 0
// killed mid-state-commit re-runs against the empty version 0 the same way.
func TestAggregationKillDrills(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash drills skipped in -short mode")
	}
	phases := []string{PhaseAfterOffsets, PhaseMidStateCommit, PhaseMidSink, PhaseBeforeCommit}
	topics := []embedkafka.TopicSpec{{Name: "in", Partitions: 2}, {Name: "ref", Partitions: 1}, {Name: "out-batch-0", Partitions: 1}}
	for _, p := range phases {
		topics = append(topics, embedkafka.TopicSpec{Name: "out-" + p, Partitions: 1})
	}
	b := startBroker(t, topics...)
	keys := []string{"k0", "k1", "k2", "k3", "k4"}
	// 15 records per partition, 10 per batch: batches 0, 1 and 2.
	produceKV(t, b.Addr(), "in", 0, keys, 0, 15)
	produceKV(t, b.Addr(), "in", 1, keys, 100, 15)

	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	if out, code := runCkpt(t, aggDrillArgs(b.Addr(), ref, "ref"), 2*time.Minute); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", code, out)
	}
	wantOut := lastValues(t, b.Addr(), "ref")
	wantState, wantVersion := stateRows(t, ref)
	if len(wantOut) != len(keys) || wantVersion != 3 {
		t.Fatalf("uninterrupted run: output %v, state version %d (want 5 keys, version 3)", wantOut, wantVersion)
	}

	for _, phase := range phases {
		t.Run(phase, func(t *testing.T) {
			ck, topic := filepath.Join(dir, phase), "out-"+phase
			args := aggDrillArgs(b.Addr(), ck, topic)
			out, code := runCkpt(t, append(args, "--fail-at", "batch=1,phase="+phase), 2*time.Minute)
			if code != FailExitCode {
				t.Fatalf("--fail-at batch=1,phase=%s: exit %d, want %d (SIGKILL)\n%s", phase, code, FailExitCode, out)
			}
			// What the phase leaves: offsets/1 and no commits/1; state version 2 in no
			// partition, in partition 0 only, or in every partition.
			st := mustLocal(t, ck)
			cp, err := checkpoint.Load(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if l, _ := cp.Offsets.Latest(); l != 1 {
				t.Fatalf("latest offsets %d, want 1", l)
			}
			if c, _ := cp.Commits.Latest(); c != 0 {
				t.Fatalf("latest commit %d, want 0", c)
			}
			var v2 []int
			for p := 0; p < 3; p++ {
				if _, err := st.Stat(context.Background(), fmt.Sprintf("state/0/%d/2.delta", p)); err == nil {
					v2 = append(v2, p)
				}
			}
			want := map[string][]int{PhaseAfterOffsets: nil, PhaseMidStateCommit: {0}, PhaseMidSink: {0, 1, 2}, PhaseBeforeCommit: {0, 1, 2}}[phase]
			if !slices.Equal(v2, want) {
				t.Fatalf("state version 2 written in partitions %v, want %v", v2, want)
			}
			checkCrashedAggCheckpoint(t, ck, ref, v2)

			if out, code := runCkpt(t, args, 2*time.Minute); code != 0 {
				t.Fatalf("restart: exit %d\n%s", code, out)
			}
			if got := lastValues(t, b.Addr(), topic); fmt.Sprint(got) != fmt.Sprint(wantOut) {
				t.Errorf("last output per key after the crash and restart %v, uninterrupted %v", got, wantOut)
			}
			if got, v := stateRows(t, ck); v != wantVersion || fmt.Sprint(got) != fmt.Sprint(wantState) {
				t.Errorf("state version %d %v after the crash and restart, uninterrupted version %d %v", v, got, wantVersion, wantState)
			}
			checkCommittedAggCheckpoint(t, ck)
		})
	}
	// Batch 0 killed mid-state-commit: it re-runs against the empty version 0.
	t.Run("batch-0-"+PhaseMidStateCommit, func(t *testing.T) {
		ck := filepath.Join(dir, "batch-0")
		args := aggDrillArgs(b.Addr(), ck, "out-batch-0")
		if out, code := runCkpt(t, append(args, "--fail-at", "batch=0,phase="+PhaseMidStateCommit), 2*time.Minute); code != FailExitCode {
			t.Fatalf("exit %d, want %d\n%s", code, FailExitCode, out)
		}
		res := replayJSON(t, ck)
		if st := res.State; res.Outcome != recovery.OutcomeResume || st == nil || st.Version != 0 || st.Batch != 0 || !st.Rerun ||
			len(st.Loads) != 0 || len(st.Stores) != 1 || fmt.Sprint(st.Stores[0].Ahead) != "[0]" {
			t.Fatalf("replay: %s, state %+v: want batch 0 re-run against version 0, version 1 in partition 0", res.Verdict(), res.State)
		}
		if codes := doctorCodes(t, ck); fmt.Sprint(codes) != "[uncommitted-batch]" {
			t.Errorf("doctor --deep after the crash: findings %v, want only uncommitted-batch", codes)
		}
		if out, code := runCkpt(t, args, 2*time.Minute); code != 0 {
			t.Fatalf("restart: exit %d\n%s", code, out)
		}
		if got := lastValues(t, b.Addr(), "out-batch-0"); fmt.Sprint(got) != fmt.Sprint(wantOut) {
			t.Errorf("last output per key after the crash and restart %v, uninterrupted %v", got, wantOut)
		}
		if got, v := stateRows(t, ck); v != wantVersion || fmt.Sprint(got) != fmt.Sprint(wantState) {
			t.Errorf("state version %d %v after the crash and restart, uninterrupted version %d %v", v, got, wantVersion, wantState)
		}
		checkCommittedAggCheckpoint(t, ck)
	})
}

// checkCrashedAggCheckpoint: what ckpt's commands say about ck, whose batch 1 was killed with
// state version 2 written in partitions v2, against ref, the uninterrupted run's checkpoint.
func checkCrashedAggCheckpoint(t *testing.T, ck, ref string, v2 []int) {
	t.Helper()
	// replay: batch 1 re-runs against version 1, read from every partition's 1.delta; the
	// version 2 files of the crashed attempt are named and not read.
	res := replayJSON(t, ck)
	st := res.State
	if res.Outcome != recovery.OutcomeResume || res.RerunBatch == nil || *res.RerunBatch != 1 || st == nil ||
		st.Version != 1 || st.Batch != 1 || !st.Rerun || len(st.Stores) != 1 {
		t.Fatalf("replay: %s, re-run %v, state %+v: want batch 1 re-run against state version 1", res.Verdict(), res.RerunBatch, st)
	}
	if s := st.Stores[0]; s.Partitions != 3 || s.BasePartitions != 0 || s.Steps != 3 || fmt.Sprint(s.Ahead) != fmt.Sprint(append([]int{}, v2...)) {
		t.Errorf("replay: store load %+v, want 3 partitions from 1.delta, version 2 in %v", s, v2)
	}
	want := "operator 0 loads version 1 (from 1.delta in 3 partitions), batch 1 re-runs against it"
	if len(v2) > 0 {
		want += fmt.Sprintf("; version 2 files in %s (%d of 3), left by its crashed attempt, are not read: batch 1 writes version 2 again", partitionsText(v2), len(v2))
	}
	if out, code := runCkpt(t, []string{"replay", ck}, time.Minute); code != 0 || !strings.Contains(out, want+"\n") {
		t.Errorf("replay: exit %d, no line %q in\n%s", code, want, out)
	}
	// doctor --deep: the uncommitted batch (a note), nothing else.
	if codes := doctorCodes(t, ck); fmt.Sprint(codes) != "[uncommitted-batch]" {
		t.Errorf("doctor --deep after the crash: findings %v, want only uncommitted-batch", codes)
	}
	// rewind to batch 0 (the latest commit): offsets/1 and the version 2 files move, nothing
	// committed re-runs, so a Kafka sink gets nothing twice.
	rw := rewindJSON(t, ck, 0)
	if rw.Refused != "" || rw.Offsets != 1 || rw.Commits != 0 || rw.StateFiles != len(v2) || len(rw.Warnings) != 0 || rw.RerunTo >= rw.RerunFrom {
		t.Errorf("rewind --to-batch 0: %+v", rw)
	}
	// state read: the committed version 1, as the uninterrupted run's version 1.
	if got, want := stateReadJSON(t, ck, ""), stateReadJSON(t, ref, "1"); got != want || got == "" {
		t.Errorf("state read after the crash:\n%s\nthe uninterrupted run's version 1:\n%s", got, want)
	}
}

// checkCommittedAggCheckpoint: once the restart has committed batches 0-2, doctor --deep finds
// nothing, replay says batch 3 runs against version 3, and a rewind to batch 1 moves the last
// batch's offsets, commit and version 3 files, after which batch 2 re-runs against version 2.
func checkCommittedAggCheckpoint(t *testing.T, ck string) {
	t.Helper()
	if codes := doctorCodes(t, ck); len(codes) != 0 {
		t.Errorf("doctor --deep after the restart: findings %v", codes)
	}
	res := replayJSON(t, ck)
	if st := res.State; res.Outcome != recovery.OutcomeResume || st == nil || st.Version != 3 || st.Batch != 3 || st.Rerun ||
		len(st.Stores) != 1 || len(st.Stores[0].Ahead) != 0 {
		t.Errorf("replay after the restart: %s, state %+v", res.Verdict(), res.State)
	}
	rw := rewindJSON(t, ck, 1)
	if rw.Refused != "" || rw.Offsets != 1 || rw.Commits != 1 || rw.StateFiles != 3 || rw.RerunFrom != 2 || rw.RerunTo != 2 || rw.After == nil ||
		rw.After.NextBatch != 2 || rw.After.RerunBatch != nil {
		t.Errorf("rewind --to-batch 1: %+v", rw)
	}
	for _, a := range rw.Actions {
		if strings.HasPrefix(a.Path, "state/") && !strings.HasSuffix(a.Path, "/3.delta") {
			t.Errorf("rewind --to-batch 1 moves %s", a.Path)
		}
	}
}

func partitionsText(ps []int) string {
	if len(ps) == 1 {
		return fmt.Sprintf("partition %d", ps[0])
	}
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprint(p))
	}
	return "partitions " + strings.Join(s, ", ")
}

func replayJSON(t *testing.T, ck string) recovery.Result {
	t.Helper()
	out, code := runCkpt(t, []string{"replay", ck, "-o", "json"}, time.Minute)
	var res recovery.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("replay -o json: exit %d, %v\n%s", code, err, out)
	}
	return res
}

// doctorCodes runs doctor --deep and returns the codes of its findings.
func doctorCodes(t *testing.T, ck string) []string {
	t.Helper()
	out, _ := runCkpt(t, []string{"doctor", ck, "--deep", "-o", "json"}, time.Minute)
	var rep struct {
		Findings []struct{ Code string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor -o json: %v\n%s", err, out)
	}
	codes := []string{}
	for _, f := range rep.Findings {
		codes = append(codes, f.Code)
	}
	return codes
}

// rewindJSON plans (does not apply) a rewind to batch n of a query writing to Kafka.
func rewindJSON(t *testing.T, ck string, n int) position.RewindPlan {
	t.Helper()
	out, _ := runCkpt(t, []string{"rewind", ck, "--to-batch", fmt.Sprint(n), "--kafka-sink", "--allow-duplicates", "-o", "json"}, time.Minute)
	var p position.RewindPlan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("rewind -o json: %v\n%s", err, out)
	}
	return p
}

// stateReadJSON runs state read of operator 0 (at version, or the latest committed) as JSON lines.
func stateReadJSON(t *testing.T, ck, version string) string {
	t.Helper()
	args := []string{"state", "read", ck, "--operator", "0", "-o", "json"}
	if version != "" {
		args = append(args, "--version", version)
	}
	out, code := runCkpt(t, args, time.Minute)
	if code != 0 {
		t.Fatalf("state read: exit %d\n%s", code, out)
	}
	return out
}

// TestAggregationRandomKills SIGKILLs a `ckpt run` process running the drilled aggregation at
// seeded random moments (wherever they land: the state commit of 3 partitions included), checks
// after each that the planner resumes, then runs it to the end: the last output per key and the
// state rows equal an uninterrupted run's, and doctor --deep finds nothing.
func TestAggregationRandomKills(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash drills skipped in -short mode")
	}
	perPartition, kills := 200, 12
	if raceEnabled {
		perPartition, kills = 80, 6
	}
	b := startBroker(t, embedkafka.TopicSpec{Name: "in", Partitions: 2}, embedkafka.TopicSpec{Name: "ref", Partitions: 1}, embedkafka.TopicSpec{Name: "out", Partitions: 1})
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}
	produceKV(t, b.Addr(), "in", 0, keys, 0, perPartition)
	produceKV(t, b.Addr(), "in", 1, keys, 1000, perPartition)
	dir := t.TempDir()
	ref, ck := filepath.Join(dir, "ref"), filepath.Join(dir, "ck")
	if out, code := runCkpt(t, aggDrillArgs(b.Addr(), ref, "ref"), 5*time.Minute); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s", code, out)
	}
	args := aggDrillArgs(b.Addr(), ck, "out")
	rng := rand.New(rand.NewSource(7))
	landed := 0
	var ahead [3]int // kills that left a re-run batch with version N+1 in no, some, every partition
	for k := 0; k < kills; k++ {
		delay := time.Duration(50+rng.Intn(400)) * time.Millisecond
		if raceEnabled {
			delay *= 3
		}
		if runKilled(t, args, delay) {
			landed++
		}
		res := replayJSON(t, ck)
		if res.Outcome != recovery.OutcomeResume {
			t.Fatalf("after kill %d: %s", k, res.Verdict())
		}
		if st := res.State; st != nil && st.Rerun && len(st.Stores) == 1 {
			ahead[min(len(st.Stores[0].Ahead), 1)+len(st.Stores[0].Ahead)/3]++
		}
	}
	if out, code := runCkpt(t, args, 5*time.Minute); code != 0 {
		t.Fatalf("final run: exit %d\n%s", code, out)
	}
	if got, want := lastValues(t, b.Addr(), "out"), lastValues(t, b.Addr(), "ref"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("last output per key after %d kills %v, uninterrupted %v", landed, got, want)
	}
	got, gv := stateRows(t, ck)
	want, wv := stateRows(t, ref)
	if gv != wv || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("state version %d %v after %d kills, uninterrupted version %d %v", gv, got, landed, wv, want)
	}
	if codes := doctorCodes(t, ck); len(codes) != 0 {
		t.Errorf("doctor --deep: %v", codes)
	}
	t.Logf("%d records, %d SIGKILLs landed, state version %d; re-runs with version N+1 in no partition %d, some %d, all %d",
		2*perPartition, landed, gv, ahead[0], ahead[1], ahead[2])
}
