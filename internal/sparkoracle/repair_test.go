package sparkoracle

// Repairs checked by Spark: every repair ckpt offers on the scenario corpus (every strategy),
// `ckpt offsets reset --sink` and `ckpt rewind --sink`, each applied to a checkpoint whose records
// sit in an embedded broker, then restarted by real Spark into the file sink (spark-procedure:
// carried out by Spark with async progress tracking into the Kafka sink). The output is read back
// through _spark_metadata and every input record is counted: what Spark read, where it started,
// and which records come out twice or never must be what ckpt predicted (docs/spark-oracle.md,
// "Repairs checked by Spark").

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/repair"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// fullRepairRelease runs every repair case; the other releases run the cases marked small (the
// live step's time budget). CKPT_SPARK_REPAIRS=all runs every case on every release, =small only
// the small set everywhere (scripts/test.sh, CI), =0 none.
const fullRepairRelease = "3.5.7"

const repairDivergencesFile = goldenDir + "/repair-divergences.json"

// afterChange records are produced to every partition after ckpt's change, before the restart.
const afterChange = 3

// repairCase is one change ckpt makes to a checkpoint, followed by a Spark restart.
type repairCase struct {
	name string // "repair/<scenario>/<strategy>", "offsets/<target>", "rewind/<target>"
	kind string // repair, procedure (repair's spark-procedure), offsets or rewind
	// build lays out the checkpoint before the change.
	build *scenario.Builder
	// args follow `ckpt <command> CHECKPOINT` (--execute, --yes and the broker are added).
	args []string
	// output lays out a file sink output holding every committed batch (a _spark_metadata entry
	// and a JSON file of its records each): the change (unless noSink) and the replay get --sink,
	// and Spark's spark.read reads the output back after the restart. Without it the
	// output starts empty and the committed records count as delivered by a sink that is not
	// idempotent (what a repair plan's replayed records mean).
	output bool
	// small cases also run on the releases other than fullRepairRelease.
	small bool
	// noSink leaves out --sink although the query has a file sink output (what ckpt cannot
	// see): the case that shows why offsets reset needs it.
	noSink bool
}

// asyncCrash is the async crash that copy-committed answers: offsets 0, 3, 7, 12, commits 0, 3,
// 7 (async progress tracking checkpoints every few batches; the query died in batch 12).
func asyncCrash() *scenario.Builder {
	b := scenario.NewBuilder("async-crash-0-3-7-12")
	stdKafka(b, []int64{0, 3, 7, 12}, []int64{0, 3, 7})
	return b
}

// committedBase is the checkpoint offsets and rewind move: batches 0-5 committed.
func committedBase() *scenario.Builder {
	b := scenario.NewBuilder("committed-0-5")
	stdKafka(b, []int64{0, 1, 2, 3, 4, 5}, []int64{0, 1, 2, 3, 4, 5})
	return b
}

// stdKafka is the scenario corpus's usual layout: metadata, a Kafka source "events" with 3
// partitions starting at 0, offsets and commits for the given ids.
func stdKafka(b *scenario.Builder, offsets, commits []int64) {
	b.Metadata()
	b.KafkaInitial(0, scenario.KafkaOffsets("events", 0, 0, 0))
	for _, id := range offsets {
		b.Offsets(id, scenario.Kafka("events", id, 3))
	}
	for _, id := range commits {
		b.Commit(id)
	}
}

// smallRepairs are the cases every release runs (and all that scripts/test.sh runs live).
var smallRepairs = []string{
	"repair/async-crash-0-3-7-12/copy-committed", "repair/async-crash-0-3-7-12/spark-procedure",
	"repair/missing-previous-offsets/delete", "offsets/shift-by--7", "rewind/to-batch-2",
}

// repairCases lists every case: for each Kafka-only scenario that ckpt repair changes (and the
// async crash), every strategy with file changes; then the offsets and rewind targets.
func repairCases(t testing.TB) []repairCase {
	t.Helper()
	type layout struct {
		name string
		b    *scenario.Builder
	}
	var layouts []layout
	for _, s := range scenario.All() {
		if s.Large || s.SinkLatest != nil || !kafkaOnly(s.Builder().Files()) || !committedKafkaLine(s.Builder().Files()) {
			continue
		}
		layouts = append(layouts, layout{s.Name, s.Builder()})
	}
	layouts = append(layouts, layout{"async-crash-0-3-7-12", asyncCrash()})
	var out []repairCase
	for _, l := range layouts {
		if procedureOffered(t, l.b) {
			out = append(out, repairCase{name: "repair/" + l.name + "/spark-procedure", kind: "procedure", build: l.b,
				args: []string{"--strategy", string(repair.StrategySparkProcedure)}})
		}
		for _, st := range repairStrategies(t, l.b) {
			args := []string{}
			name := "single"
			if st != "" {
				args = append(args, "--strategy", string(st))
				name = string(st)
			}
			out = append(out, repairCase{name: "repair/" + l.name + "/" + name, kind: "repair", build: l.b, args: args})
		}
	}
	for _, o := range []struct {
		name string
		args []string
	}{
		{"to-earliest", []string{"--to-earliest"}},
		{"to-offset-20", []string{"--to-offset", "20"}},
		{"shift-by--7", []string{"--shift-by", "-7"}},
		{"to-latest", []string{"--to-latest"}},
		{"to-offset-30-partition-1", []string{"--to-offset", "30", "--topic", "events:1"}},
	} {
		out = append(out, repairCase{name: "offsets/" + o.name, kind: "offsets", build: committedBase(), args: o.args, output: true})
	}
	out = append(out, repairCase{name: "offsets/shift-by--7-without-sink", kind: "offsets", build: committedBase(),
		args: []string{"--shift-by", "-7"}, output: true, noSink: true})
	for _, n := range []int64{0, 2} {
		out = append(out, repairCase{name: fmt.Sprintf("rewind/to-batch-%d", n), kind: "rewind", build: committedBase(),
			args: []string{"--to-batch", strconv.FormatInt(n, 10)}, output: true})
	}
	for i := range out {
		out[i].small = slices.Contains(smallRepairs, out[i].name)
	}
	return out
}

// repairStrategies are the strategies ckpt repair offers for the checkpoint that change files
// ("" for a single repair), in the plan's order; none when there is nothing to repair.
// spark-procedure changes no file: it is Spark's own procedure, not a change of ckpt's.
func repairStrategies(t testing.TB, b *scenario.Builder) []repair.Strategy {
	t.Helper()
	m := storage.NewMem()
	if err := b.WriteTo(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	p, err := repair.NewPlan(context.Background(), m, repair.Options{Planner: recovery.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Choices) == 0 {
		if len(p.Actions) > 0 && p.Refused == "" {
			return []repair.Strategy{""}
		}
		return nil
	}
	var out []repair.Strategy
	for _, c := range p.Choices {
		if c.Feasible && len(c.Actions) > 0 {
			out = append(out, c.Strategy)
		}
	}
	return out
}

// procedureOffered says whether ckpt repair offers spark-procedure (feasible) for the checkpoint.
func procedureOffered(t testing.TB, b *scenario.Builder) bool {
	t.Helper()
	m := storage.NewMem()
	if err := b.WriteTo(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	p, err := repair.NewPlan(context.Background(), m, repair.Options{Planner: recovery.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(p.Choices, func(c repair.Choice) bool {
		return c.Strategy == repair.StrategySparkProcedure && c.Feasible
	})
}

// casesFor picks the cases of a release: all on fullRepairRelease (or CKPT_SPARK_REPAIRS=all),
// the small set elsewhere; CKPT_SPARK_REPAIR_FILTER=REGEXP keeps the matching names.
func casesFor(t testing.TB, rel string) []repairCase {
	mode := os.Getenv("CKPT_SPARK_REPAIRS")
	all := mode == "all" || rel == fullRepairRelease && mode != "small"
	re := regexp.MustCompile("")
	if f := os.Getenv("CKPT_SPARK_REPAIR_FILTER"); f != "" {
		var err error
		if re, err = regexp.Compile(f); err != nil {
			t.Fatalf("CKPT_SPARK_REPAIR_FILTER: %v", err)
		}
	}
	var out []repairCase
	for _, c := range repairCases(t) {
		if (all || c.small) && re.MatchString(c.name) {
			out = append(out, c)
		}
	}
	return out
}

// runs is a record count per offset of one partition, run-length encoded: [from, to, count]
// covers offsets from..to-1.
type runs [][3]int64

// RepairGolden is what Spark did after one change: its restart and the records in the output.
type RepairGolden struct {
	Case    string `json:"case"`
	Release string `json:"release"`
	// Command is the ckpt command that made the change (paths normalised).
	Command []string `json:"command"`
	Spark   Result   `json:"spark"`
	// Records counts every input record ("topic-partition" → runs over [0, end of the topic))
	// in the output after the restart, read through _spark_metadata, plus one for each record
	// that an empty output counts as delivered before the change (repairCase.output false).
	Records map[string]runs `json:"records"`
	// Read is spark.read of the output after the restart (a second restart with no new data and
	// countOutput), for the cases with a file sink output from batch 0; spark.read fails when
	// _spark_metadata misses a batch.
	Read *ReadBack `json:"read,omitempty"`
	// Then is spark-procedure's last step: the sync restart after the async one.
	Then *Result `json:"then,omitempty"`
}

// ReadBack is what spark.read found in the output: rows and distinct records, or its error.
type ReadBack struct {
	Outcome  string `json:"outcome"`
	Error    string `json:"error,omitempty"`
	Rows     int64  `json:"rows"`
	Distinct int64  `json:"distinct"`
}

// repairGoldenFile is testdata/spark-oracle/repairs-<release>.json.
type repairGoldenFile struct {
	Release string         `json:"release"`
	Cases   []RepairGolden `json:"cases"`
}

// ckptView is what ckpt says about a case: the change's own figures and the replay after it.
type ckptView struct {
	command    []string
	prediction Prediction
	// reread are the records delivered before the change that the restart reads again, and lost
	// those it never reads (the plan's figures).
	reread, lost int64
	// start is where ckpt says the restart reads from (the re-run's start, or the end of the
	// batch before the next one), per "topic-partition"; delivered is where the output stood
	// after the change; end is the end of each partition on the broker.
	start, delivered, end map[string]int64
	// origDelivered is where the output stood before the change.
	origDelivered map[string]int64
}

// prepared is one case laid out, changed by ckpt, with its broker running.
type prepared struct {
	ck, out   string
	bootstrap string
	view      ckptView
	close     func()
}

// prepare lays out the case in dir, fills a broker, runs the ckpt command (with --execute, but
// for spark-procedure, which changes no file) and replays the result.
func prepare(t testing.TB, rc repairCase, rel, dir string) *prepared {
	t.Helper()
	files := rc.build.Files()
	ck, out := writeCheckpoint(t, dir, rc.build)
	topics := topicData(files)
	b := startBroker(t, topics, rc.kind == "procedure")
	var once sync.Once
	closeBroker := func() { once.Do(b.Close) }
	t.Cleanup(closeBroker) // also when a step below fails the test
	p := &prepared{ck: ck, out: out, bootstrap: b.Addr(), close: closeBroker}
	v := &p.view
	v.end = map[string]int64{}
	for topic, parts := range topics {
		for i, n := range parts {
			v.end[fmt.Sprintf("%s-%d", topic, i)] = n
		}
	}
	// Delivered before the change: the newest batch with offsets and a commit (repair's replay cost).
	delivered := int64(-1)
	for path := range files {
		if !offsetsFile.MatchString(path) {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimPrefix(path, "offsets/"), 10, 64)
		if _, c := files[fmt.Sprintf("commits/%d", id)]; err == nil && c && id > delivered {
			delivered = id
		}
	}
	origDelivered := initialPositions(files)
	if delivered >= 0 {
		origDelivered = batchEnd(t, files, delivered)
	}
	if rc.output {
		writeSinkOutput(t, files, out, delivered)
	}

	norm := map[string]string{ck: "<checkpoint>", out: "<output>", b.Addr(): "<broker>"}
	var args []string
	switch rc.kind {
	case "repair", "procedure":
		args = append([]string{"repair", ck}, rc.args...)
	case "offsets":
		args = append([]string{"offsets", "reset", ck}, rc.args...)
		args = append(args, "--bootstrap-server", b.Addr())
	case "rewind":
		args = append([]string{"rewind", ck}, rc.args...)
	}
	if rc.output && !rc.noSink {
		args = append(args, "--sink", out)
	}
	args = append(args, "--spark-version", Line(rel))
	if rc.kind != "procedure" { // spark-procedure changes no file: its steps are Spark's runs
		args = append(args, "--execute", "--yes")
	}
	args = append(args, "--active-window", "0", "-o", "json")
	for _, a := range args {
		v.command = append(v.command, Normalize(a, norm))
	}
	code, stdout, stderr := ckpt(t, args...)
	if code != 0 {
		t.Fatalf("ckpt %s: exit %d\n%s\n%s", strings.Join(v.command, " "), code, stdout, stderr)
	}
	var doc struct {
		Replay struct {
			ReplayedRecords *int64 `json:"replayedRecords"`
			LostRecords     *int64 `json:"lostRecords"`
		} `json:"replay"`
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int    `json:"partition"`
			Skipped   *int64 `json:"skipped"`
			Reread    *int64 `json:"reread"`
		} `json:"partitions"`
		RerunRecords *int64 `json:"rerunRecords"`
		Executed     bool   `json:"executed"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("ckpt %s -o json: %v\n%s", rc.kind, err, stdout)
	}
	// Every case but spark-procedure exists because the command changes files: one that now
	// changes nothing would hand Spark a checkpoint the golden never saw.
	if rc.kind != "procedure" && !doc.Executed {
		t.Fatalf("ckpt %s changed nothing (executed false): the case's Spark golden is of a changed checkpoint\n%s", strings.Join(v.command, " "), stdout)
	}
	switch rc.kind {
	case "repair", "procedure":
		v.reread, v.lost = deref64(doc.Replay.ReplayedRecords), deref64(doc.Replay.LostRecords)
	case "offsets":
		for _, pt := range doc.Partitions {
			v.reread += deref64(pt.Reread)
			v.lost += deref64(pt.Skipped)
		}
	case "rewind":
		v.reread = deref64(doc.RerunRecords)
	}

	// ckpt's prediction of the restart on the changed checkpoint.
	rargs := []string{"replay", ck, "--spark-version", Line(rel), "-o", "json", "--allow-empty"}
	if rc.kind == "procedure" {
		rargs = append(rargs, "--mode", "async") // step 1 of the procedure
	}
	if rc.output {
		rargs = append(rargs, "--sink", out)
	}
	code, stdout, stderr = ckpt(t, rargs...)
	if code != 0 && code != 3 {
		t.Fatalf("ckpt replay after %s: exit %d: %s", rc.name, code, stderr)
	}
	if err := json.Unmarshal([]byte(Normalize(stdout, norm)), &v.prediction); err != nil {
		t.Fatalf("ckpt replay -o json: %v: %s", err, stdout)
	}

	// New records after the change: every restart has a batch to run, also one moved to the
	// end of the log (--to-latest).
	for _, topic := range sortedTopics(v.end) {
		next := make([]int, len(topics[topic]))
		for i := range next {
			next[i] = int(v.end[fmt.Sprintf("%s-%d", topic, i)])
		}
		produce(t, b.Addr(), topic, next, afterChange)
		for i, n := range next {
			v.end[fmt.Sprintf("%s-%d", topic, i)] = int64(n)
		}
	}

	changed := readTree(t, ck)
	v.start = restartStart(t, changed, v.prediction)
	for tp := range v.end {
		if _, ok := v.start[tp]; !ok {
			v.start[tp] = 0 // no position: startingOffsets earliest
		}
	}
	// Where the output stands after the change: the delivered batch, or for a file sink
	// output the newest batch whose _spark_metadata entry the change left.
	v.delivered = origDelivered
	if rc.output {
		// What a reader of the output sees after the change (rewind --sink hides the entries
		// above N; offsets reset --sink adds an empty one): records from 0 up to here.
		v.delivered = map[string]int64{}
		for tp, c := range readOutput(t, out) {
			for o := range c {
				v.delivered[tp] = max(v.delivered[tp], o+1)
			}
		}
	}
	v.origDelivered = origDelivered
	return p
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// readTree reads every file under dir into the layout of scenario.Builder.Files.
func readTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kafkaLine flattens a Kafka offsets line {"t":{"0":n}} into "t-0" → n; nil when not one.
func kafkaLine(line string) map[string]int64 {
	var m map[string]map[string]int64
	if json.Unmarshal([]byte(line), &m) != nil || m == nil {
		return nil
	}
	out := map[string]int64{}
	for topic, parts := range m {
		for p, o := range parts {
			out[topic+"-"+p] = o
		}
	}
	return out
}

// committedKafkaLine says whether the newest batch with offsets and a commit has a Kafka line
// the harness can read (what was delivered before the change); a damaged one has none.
func committedKafkaLine(files map[string][]byte) bool {
	delivered := int64(-1)
	for path := range files {
		id, err := strconv.ParseInt(strings.TrimPrefix(path, "offsets/"), 10, 64)
		if _, c := files[fmt.Sprintf("commits/%d", id)]; offsetsFile.MatchString(path) && err == nil && c && id > delivered {
			delivered = id
		}
	}
	if delivered < 0 {
		return true
	}
	lines := strings.Split(string(files[fmt.Sprintf("offsets/%d", delivered)]), "\n")
	return kafkaLine(lines[len(lines)-1]) != nil
}

// batchEnd is the end of batch id: the Kafka line of offsets/id.
func batchEnd(t testing.TB, files map[string][]byte, id int64) map[string]int64 {
	t.Helper()
	lines := strings.Split(string(files[fmt.Sprintf("offsets/%d", id)]), "\n")
	if m := kafkaLine(lines[len(lines)-1]); m != nil {
		return m
	}
	t.Fatalf("offsets/%d has no Kafka line", id)
	return nil
}

// initialPositions is sources/0/0's offsets (where a query without batches starts).
func initialPositions(files map[string][]byte) map[string]int64 {
	s := string(files["sources/0/0"])
	if i := strings.Index(s, "\n"); i >= 0 {
		if m := kafkaLine(s[i+1:]); m != nil {
			return m
		}
	}
	return map[string]int64{}
}

// restartStart is where ckpt says the restart reads from: the predicted re-run's start, else
// the end of the batch before the next one in the changed checkpoint, else the initial offsets.
func restartStart(t testing.TB, files map[string][]byte, p Prediction) map[string]int64 {
	t.Helper()
	if p.RerunRange != nil && len(p.RerunRange.Start) > 0 {
		if m := kafkaLine(string(p.RerunRange.Start[0])); m != nil {
			return m
		}
		return initialPositions(files)
	}
	if prev := p.NextBatch - 1; prev >= 0 {
		if _, ok := files[fmt.Sprintf("offsets/%d", prev)]; ok {
			return batchEnd(t, files, prev)
		}
	}
	return initialPositions(files)
}

// writeSinkOutput lays out the file sink output of batches 0..upTo as Spark writes it: per
// batch one JSON file of its records (the harness's columns) and a _spark_metadata entry.
func writeSinkOutput(t testing.TB, files map[string][]byte, out string, upTo int64) {
	t.Helper()
	meta := filepath.Join(out, "_spark_metadata")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	prev := initialPositions(files)
	for id := int64(0); id <= upTo; id++ {
		end := batchEnd(t, files, id)
		var sb strings.Builder
		for _, tp := range sortedKeys(end) {
			topic, part := splitTP(tp)
			for o := prev[tp]; o < end[tp]; o++ {
				fmt.Fprintf(&sb, `{"value":"%s-%d-%d","topic":"%s","partition":%d,"offset":%d}`+"\n", topic, part, o, topic, part, o)
			}
		}
		data := filepath.Join(out, fmt.Sprintf("part-00000-batch-%d-c000.json", id))
		if err := os.WriteFile(data, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		entry, _ := json.Marshal(map[string]any{"path": "file://" + data, "size": sb.Len(), "isDir": false,
			"modificationTime": time.Now().UnixMilli(), "blockReplication": 1, "blockSize": 33554432, "action": "add"})
		if err := os.WriteFile(filepath.Join(meta, strconv.FormatInt(id, 10)), append([]byte("v1\n"), entry...), 0o644); err != nil {
			t.Fatal(err)
		}
		prev = end
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func splitTP(tp string) (string, int) {
	i := strings.LastIndex(tp, "-")
	p, _ := strconv.Atoi(tp[i+1:])
	return tp[:i], p
}

var sinkBatchName = regexp.MustCompile(`^([0-9]+)(\.compact)?$`)

// readOutput counts the records of the file sink output as a reader of it sees them: the data
// files that _spark_metadata lists (from the latest compaction on, as Spark's allFiles), each
// JSON line one record; a record whose value is not the one the broker holds at its offset fails.
func readOutput(t testing.TB, out string) map[string]map[int64]int64 {
	t.Helper()
	dir := filepath.Join(out, "_spark_metadata")
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	type logFile struct {
		id      int64
		name    string
		compact bool
	}
	var logs []logFile
	for _, e := range es {
		if m := sinkBatchName.FindStringSubmatch(e.Name()); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			logs = append(logs, logFile{id, e.Name(), m[2] != ""})
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].id < logs[j].id })
	for i := len(logs) - 1; i > 0; i-- {
		if logs[i].compact {
			logs = logs[i:]
			break
		}
	}
	live := map[string]bool{}
	var order []string
	for _, l := range logs {
		data, err := os.ReadFile(filepath.Join(dir, l.name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for _, line := range lines[1:] {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var e struct{ Path, Action string }
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("_spark_metadata/%s: %v", l.name, err)
			}
			if e.Action == "delete" {
				delete(live, e.Path)
				continue
			}
			if !live[e.Path] {
				order = append(order, e.Path)
			}
			live[e.Path] = true
		}
	}
	counts := map[string]map[int64]int64{}
	for _, p := range order {
		if !live[p] {
			continue
		}
		f, err := os.Open(strings.TrimPrefix(p, "file:"))
		if err != nil {
			t.Fatalf("a data file the sink log lists: %v", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r struct {
				Value     string `json:"value"`
				Topic     string `json:"topic"`
				Partition int    `json:"partition"`
				Offset    int64  `json:"offset"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if want := fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Offset); r.Value != want {
				t.Fatalf("%s: record %q at %s-%d offset %d, the broker holds %q there", p, r.Value, r.Topic, r.Partition, r.Offset, want)
			}
			tp := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
			if counts[tp] == nil {
				counts[tp] = map[int64]int64{}
			}
			counts[tp][r.Offset]++
		}
		f.Close()
	}
	return counts
}

// encodeRuns turns per-offset counts over [0, end) into runs.
func encodeRuns(count func(o int64) int64, end int64) runs {
	out := runs{}
	for o := int64(0); o < end; o++ {
		c := count(o)
		if n := len(out); n > 0 && out[n-1][2] == c && out[n-1][1] == o {
			out[n-1][1] = o + 1
			continue
		}
		out = append(out, [3]int64{o, o + 1, c})
	}
	return out
}

// observedRecords are the output's counts over every input record, with one more for each
// record below delivered when the output started empty (delivered by an earlier sink).
func observedRecords(counts map[string]map[int64]int64, end, delivered map[string]int64, virtual bool) map[string]runs {
	out := map[string]runs{}
	for tp, e := range end {
		c := counts[tp]
		out[tp] = encodeRuns(func(o int64) int64 {
			n := c[o]
			if virtual && o < delivered[tp] {
				n++
			}
			return n
		}, e)
	}
	return out
}

// expectedRecords are the counts ckpt predicts: once for what the output held after the
// change (below delivered), once more for what the restart reads (from start to the end).
func (v ckptView) expectedRecords() map[string]runs {
	out := map[string]runs{}
	for tp, e := range v.end {
		out[tp] = encodeRuns(func(o int64) int64 {
			var n int64
			if o < v.delivered[tp] {
				n++
			}
			if o >= v.start[tp] {
				n++
			}
			return n
		}, e)
	}
	return out
}

// checkRepair lists where Spark's restart after the change differs from ckpt's view: the
// restart (Compare), where its first batch starts, the count of every record, and the change's
// own figures of records read again and never read.
func checkRepair(g RepairGolden, v ckptView) []Divergence {
	var out []Divergence
	add := func(field, spark, ckpt string) {
		out = append(out, Divergence{Case: g.Case, Release: g.Release, Field: field, Spark: spark, Ckpt: ckpt})
	}
	out = append(out, Compare(Golden{Case: g.Case, Release: g.Release, Spark: g.Spark}, v.prediction)...)
	if g.Spark.Outcome != "ok" || v.prediction.Outcome != "resume" {
		return out // no output to count
	}
	if g.Then != nil && g.Then.Outcome != "ok" {
		add("then", g.Then.Outcome+": "+deref(g.Then.Error), "the sync restart after the procedure resumes")
	}
	if len(g.Spark.Batches) == 0 || len(g.Spark.Batches[0].Sources) == 0 {
		add("batches", "none", "a batch from "+fmtPositions(v.start))
		return out
	}
	// Batch 0 reports no start: it reads from the initial offsets, 0 on every partition here.
	sparkStart := kafkaLine(string(g.Spark.Batches[0].Sources[0].StartOffset))
	if sparkStart == nil {
		sparkStart = map[string]int64{}
		for tp := range v.end {
			sparkStart[tp] = 0
		}
	}
	if !sameMap(sparkStart, v.start) {
		add("start", fmtPositions(sparkStart), fmtPositions(v.start))
	}
	want := v.expectedRecords()
	for _, tp := range sortedKeys(v.end) {
		if !slices.Equal(g.Records[tp], want[tp]) {
			add("records["+tp+"]", fmtRuns(g.Records[tp]), fmtRuns(want[tp]))
		}
	}
	// Spark reads on from its start to the end of every partition, nothing skipped.
	var rows, span int64
	for _, b := range g.Spark.Batches {
		for _, s := range b.Sources {
			rows += s.Rows()
		}
	}
	for tp, e := range v.end {
		span += e - sparkStart[tp]
	}
	if rows != span {
		add("rows", strconv.FormatInt(rows, 10), strconv.FormatInt(span, 10))
	}
	// The change's own figures: records the output had before it that the restart reads again
	// (from Spark's start), and records never read (no count in the output).
	var reread, lost int64
	for tp, d := range v.origDelivered {
		reread += max(0, d-sparkStart[tp])
	}
	for _, rs := range g.Records {
		for _, r := range rs {
			if r[2] == 0 {
				lost += r[1] - r[0]
			}
		}
	}
	if g.Read != nil {
		var rows, distinct int64
		for _, rs := range g.Records {
			for _, r := range rs {
				rows += (r[1] - r[0]) * r[2]
				if r[2] > 0 {
					distinct += r[1] - r[0]
				}
			}
		}
		switch {
		case g.Read.Outcome != "ok":
			add("spark.read", g.Read.Outcome+": "+g.Read.Error, "the output reads back")
		case g.Read.Rows != rows || g.Read.Distinct != distinct:
			add("spark.read", fmt.Sprintf("%d rows, %d distinct", g.Read.Rows, g.Read.Distinct), fmt.Sprintf("%d rows, %d distinct", rows, distinct))
		}
	}
	if reread != v.reread {
		add("reread", strconv.FormatInt(reread, 10), strconv.FormatInt(v.reread, 10))
	}
	if lost != v.lost {
		add("lost", strconv.FormatInt(lost, 10), strconv.FormatInt(v.lost, 10))
	}
	return out
}

func sameMap(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func fmtPositions(m map[string]int64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func fmtRuns(rs runs) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("[%d,%d)x%d", r[0], r[1], r[2]))
	}
	return strings.Join(parts, " ")
}

// runRepairs runs the release's repair cases in the release's JVM (TestSparkLive, after the
// hand-over): each case is prepared, restarted by Spark, its output counted and checked against
// ckpt's view; UPDATE_SPARK=1 stores Spark's answers in repairs-<release>.json, otherwise they
// must equal the stored ones.
func runRepairs(t *testing.T, h *harness, rel string, update bool) {
	cases := casesFor(t, rel)
	start := time.Now()
	path := repairGoldenPath(rel)
	var stored repairGoldenFile
	if !update {
		readJSON(t, path, &stored)
	} else if _, err := os.Stat(path); err == nil {
		readJSON(t, path, &stored)
	}
	storedBy := map[string]RepairGolden{}
	for _, g := range stored.Cases {
		storedBy[g.Case] = g
	}
	known := knownRepairDivergences(t)
	for _, rc := range cases {
		p := prepare(t, rc, rel, filepath.Join(t.TempDir(), "case"))
		// earliest: a restart without initial offsets in the checkpoint starts at the beginning,
		// where ckpt's view puts it (a partition without a position starts at 0).
		opts := map[string]string{"subscribe": strings.Join(sortedTopics(p.view.end), ","), "startingOffsets": "earliest"}
		if !rc.output {
			// The output starts empty: a first batch that is a compaction batch (9, 19, …) would
			// look for the sink log entries of batches that never wrote to it.
			opts["spark.sql.streaming.fileSink.log.compactInterval"] = "1000000"
		}
		norm := map[string]string{p.ck: "<checkpoint>", p.out: "<output>", p.bootstrap: "<broker>"}
		if rc.kind == "procedure" {
			runProcedure(t, h, rc, rel, p, opts, norm, storedBy, update, known)
			continue
		}
		r := h.run(map[string]any{"name": rc.name, "checkpoint": p.ck, "output": p.out, "bootstrap": p.bootstrap,
			"sink": "file", "trigger": "availableNow", "options": opts, "timeoutMs": 120000})
		var read *ReadBack
		if rc.output && r.Outcome == "ok" {
			// spark.read of the output (through _spark_metadata), after a restart with no new data.
			rr := h.run(map[string]any{"name": rc.name + "/read", "checkpoint": p.ck, "output": p.out, "bootstrap": p.bootstrap,
				"sink": "file", "trigger": "availableNow", "options": opts, "timeoutMs": 120000, "countOutput": true})
			read = &ReadBack{Outcome: rr.Outcome, Error: Normalize(deref(rr.Error), norm)}
			if rr.Output != nil {
				read.Rows, read.Distinct = rr.Output.Rows, rr.Output.Distinct
			}
		}
		p.close()
		counts := readOutput(t, p.out)
		r = normalizeResult(t, r, norm)
		g := RepairGolden{Case: rc.name, Release: rel, Command: p.view.command, Spark: r,
			Records: observedRecords(counts, p.view.end, p.view.origDelivered, !rc.output), Read: read}
		settle(t, g, p.view, storedBy, update, known)
	}
	if update {
		out := repairGoldenFile{Release: rel}
		live := map[string]bool{}
		for _, c := range repairCases(t) {
			live[c.name] = true
		}
		for _, k := range sortedKeys(storedBy) {
			if live[k] { // a case ckpt no longer offers leaves the file
				out.Cases = append(out.Cases, storedBy[k])
			}
		}
		writeJSON(t, path, out)
	}
	t.Logf("Spark %s: %d repair cases in %s", rel, len(cases), time.Since(start).Round(time.Second))
}

func repairGoldenPath(rel string) string { return filepath.Join(goldenDir, "repairs-"+rel+".json") }

func sortedTopics(end map[string]int64) []string {
	set := map[string]bool{}
	for tp := range end {
		topic, _ := splitTP(tp)
		set[topic] = true
	}
	return sortedKeys(set)
}

func sameRecords(a, b map[string]runs) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func knownRepairDivergences(t testing.TB) map[string]Divergence {
	t.Helper()
	var known []Divergence
	if b, err := os.ReadFile(repairDivergencesFile); err == nil {
		if err := json.Unmarshal(b, &known); err != nil {
			t.Fatalf("%s: %v", repairDivergencesFile, err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	by := map[string]Divergence{}
	for _, d := range known {
		by[d.Key()] = d
	}
	return by
}

// TestRepairGoldens (no Spark) redoes every change of repairs-<release>.json on a fresh layout
// and broker and checks ckpt's view of it against what Spark did: a change to repair, offsets,
// rewind or the planner that contradicts Spark fails here. The disagreements must be exactly
// repair-divergences.json (UPDATE_DIVERGENCES=1 rewrites it). Every case of a release's matrix
// must have a golden.
func TestRepairGoldens(t *testing.T) {
	all := repairCases(t)
	byName := map[string]repairCase{}
	for _, c := range all {
		byName[c.name] = c
	}
	var observed []Divergence
	for _, rel := range pinned {
		var f repairGoldenFile
		readJSON(t, repairGoldenPath(rel), &f)
		have := map[string]bool{}
		for _, g := range f.Cases {
			have[g.Case] = true
			rc, ok := byName[g.Case]
			if !ok {
				t.Errorf("%s: golden of %s, which is no longer a case (does ckpt still offer it?)", repairGoldenPath(rel), g.Case)
				continue
			}
			p := prepare(t, rc, rel, filepath.Join(t.TempDir(), "case"))
			p.close()
			if !slices.Equal(p.view.command, g.Command) {
				t.Errorf("%s on %s: the command is now %q, Spark ran after %q", g.Case, rel, p.view.command, g.Command)
			}
			observed = append(observed, checkRepair(g, p.view)...)
		}
		for _, c := range all {
			if (rel == fullRepairRelease || c.small) && !have[c.name] {
				t.Errorf("%s has no Spark golden on %s: UPDATE_SPARK=1 CKPT_SPARK_CASES=none go test ./internal/sparkoracle -run TestSparkLive", c.name, rel)
			}
		}
	}
	SortDivergences(observed)
	known := knownRepairDivergences(t)
	if os.Getenv("UPDATE_DIVERGENCES") == "1" {
		for i, d := range observed {
			if k, ok := known[d.Key()]; ok {
				observed[i].Reason = k.Reason
			} else {
				observed[i].Reason = "not yet explained"
			}
		}
		if observed == nil {
			observed = []Divergence{}
		}
		writeJSON(t, repairDivergencesFile, observed)
		return
	}
	seen := map[string]bool{}
	for _, d := range observed {
		seen[d.Key()] = true
		if _, ok := known[d.Key()]; !ok {
			t.Errorf("new divergence: %s", d.Line())
		}
	}
	for k, d := range known {
		if !seen[k] {
			t.Errorf("divergence no longer observed (remove it from %s, or UPDATE_DIVERGENCES=1): %s", repairDivergencesFile, d.Line())
		}
	}
}

// settle checks one observation against ckpt's view and, unless updating, against its golden.
func settle(t *testing.T, g RepairGolden, v ckptView, storedBy map[string]RepairGolden, update bool, known map[string]Divergence) {
	t.Helper()
	for _, d := range checkRepair(g, v) {
		if _, ok := known[d.Key()]; !ok {
			t.Errorf("Spark %s disagrees with ckpt after %s: %s", g.Release, strings.Join(v.command, " "), d.Line())
		}
	}
	if update {
		storedBy[g.Case] = g
		return
	}
	old, ok := storedBy[g.Case]
	if !ok {
		t.Errorf("%s on Spark %s: no golden in %s (UPDATE_SPARK=1 writes it)", g.Case, g.Release, repairGoldenPath(g.Release))
		return
	}
	if diff := sparkDiff(old.Spark, g.Spark); diff != "" {
		t.Errorf("%s on Spark %s: Spark no longer does what the golden says (%s)", g.Case, g.Release, diff)
	}
	if (old.Then == nil) != (g.Then == nil) || old.Then != nil && sparkDiff(*old.Then, *g.Then) != "" {
		t.Errorf("%s on Spark %s: the restart after the procedure changed: golden %+v, now %+v", g.Case, g.Release, old.Then, g.Then)
	}
	if !sameRecords(old.Records, g.Records) {
		t.Errorf("%s on Spark %s: the output's records changed: golden %v, now %v", g.Case, g.Release, old.Records, g.Records)
	}
}

// runProcedure carries out spark-procedure with Spark: a restart with async progress tracking
// (checkpoint interval 0) into the Kafka sink, which must run as `ckpt replay --mode async`
// predicts and at least two micro-batches; then the sync restart the procedure promises, which
// must not fail. The records are counted in the sink's topic (values name their input record).
func runProcedure(t *testing.T, h *harness, rc repairCase, rel string, p *prepared, opts map[string]string, norm map[string]string,
	storedBy map[string]RepairGolden, update bool, known map[string]Divergence) {
	async := map[string]string{"sink.asyncProgressTrackingEnabled": "true", "sink.asyncProgressTrackingCheckpointIntervalMs": "0",
		"sink.topic": "ckpt-oracle-out"}
	for k, v := range opts {
		async[k] = v
	}
	r := h.run(map[string]any{"name": rc.name, "checkpoint": p.ck, "output": p.out, "bootstrap": p.bootstrap,
		"sink": "kafka", "trigger": "processingTime=500", "options": async, "timeoutMs": 120000})
	var then *Result
	if r.Outcome == "ok" {
		sync := map[string]string{"sink.topic": "ckpt-oracle-out"}
		for k, v := range opts {
			sync[k] = v
		}
		tr := h.run(map[string]any{"name": rc.name + "/sync", "checkpoint": p.ck, "output": p.out, "bootstrap": p.bootstrap,
			"sink": "kafka", "trigger": "availableNow", "options": sync, "timeoutMs": 120000})
		tr = normalizeResult(t, tr, norm)
		then = &tr
	}
	counts := consumeRecords(t, p.bootstrap, "ckpt-oracle-out")
	p.close()
	r = normalizeResult(t, r, norm)
	g := RepairGolden{Case: rc.name, Release: rel, Command: p.view.command, Spark: r, Then: then,
		Records: observedRecords(counts, p.view.end, p.view.origDelivered, true)}
	settle(t, g, p.view, storedBy, update, known)
}

// consumeRecords reads every record of topic and counts the input records their values name
// ("<topic>-<partition>-<offset>").
func consumeRecords(t testing.TB, addr, topic string) map[string]map[int64]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	counts := map[string]map[int64]int64{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			v := string(r.Value)
			i := strings.LastIndex(v, "-")
			o, err := strconv.ParseInt(v[i+1:], 10, 64)
			if err != nil {
				t.Fatalf("%s: record value %q names no input record", topic, v)
			}
			tp := v[:i]
			if counts[tp] == nil {
				counts[tp] = map[int64]int64{}
			}
			counts[tp][o]++
		})
		if n == 0 {
			return counts
		}
	}
}
