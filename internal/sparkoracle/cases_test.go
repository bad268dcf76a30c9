package sparkoracle

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// oracleCase is one restart that Spark and ckpt both judge.
type oracleCase struct {
	name       string
	mode       string // sync or async
	checkpoint string // "scenario:<name>" or "generated:<seed>:<index>"
	sink       string
	trigger    string
	options    map[string]string
	sinkLatest *int64
	build      *scenario.Builder
}

const (
	genSeed  = 20240601 // the planner property test's seed
	genCount = 200
	// extraRecords is produced past the highest offset any file of the checkpoint records, so
	// that a restart that resumes has a new batch to run.
	extraRecords = 5
)

// scenarioCases are the cases built from the scenario corpus (testdata/scenarios): every
// scenario whose query is a single Kafka source, in sync mode, plus async mode for the async ones.
func scenarioCases() []oracleCase {
	var out []oracleCase
	for _, s := range scenario.All() {
		if s.Large {
			continue
		}
		b := s.Builder()
		if !kafkaOnly(b.Files()) {
			continue
		}
		sink, opts := sinkFor(s.SinkLatest, b.Files())
		c := oracleCase{name: s.Name, mode: "sync", checkpoint: "scenario:" + s.Name, sink: sink,
			trigger: "availableNow", sinkLatest: s.SinkLatest, options: opts, build: b}
		out = append(out, c)
		if slices.Contains(s.Tags, "async") {
			a := c
			a.name, a.mode, a.sink, a.trigger, a.sinkLatest = s.Name+"@async", "async", "kafka", "processingTime=500", nil
			a.options = map[string]string{"sink.asyncProgressTrackingEnabled": "true", "sink.topic": "ckpt-oracle-out"}
			out = append(out, a)
		}
	}
	return out
}

// generatedCases are the planner property test's random checkpoints (same generator shape,
// fixed seed): offsets and commits with gaps, corrupt latest files, a missing metadata file.
func generatedCases(n int) []oracleCase {
	r := rand.New(rand.NewSource(genSeed))
	out := make([]oracleCase, 0, n)
	for i := 0; i < n; i++ {
		rc := scenario.DrawRandom(r)
		name := fmt.Sprintf("gen-%03d", i)
		b := rc.Build(name)
		sink, opts := sinkFor(nil, b.Files())
		out = append(out, oracleCase{name: name, mode: "sync", checkpoint: fmt.Sprintf("generated:%d:%d", genSeed, i),
			sink: sink, trigger: "availableNow", options: opts, build: b})
	}
	return out
}

// filterCases keeps the cases whose name matches CKPT_SPARK_CASE_FILTER (a regexp), if set.
func filterCases(t testing.TB, cs []oracleCase) []oracleCase {
	f := os.Getenv("CKPT_SPARK_CASE_FILTER")
	if f == "" {
		return cs
	}
	re, err := regexp.Compile(f)
	if err != nil {
		t.Fatalf("CKPT_SPARK_CASE_FILTER: %v", err)
	}
	var out []oracleCase
	for _, c := range cs {
		if re.MatchString(c.name) {
			out = append(out, c)
		}
	}
	return out
}

// allCases is every case of the suite; subset "scenarios" leaves out the generated ones.
func allCases(subset string) []oracleCase {
	switch subset {
	case "none":
		return nil
	case "generated":
		return generatedCases(genCount)
	}
	cs := append(scenarioCases(), jacksonCases()...)
	if subset != "scenarios" {
		cs = append(cs, generatedCases(genCount)...)
	}
	return cs
}

var (
	casesOnce sync.Once
	casesBy   map[string]oracleCase
)

func caseByName(name string) (oracleCase, bool) {
	casesOnce.Do(func() {
		casesBy = map[string]oracleCase{}
		for _, c := range allCases("all") {
			casesBy[c.name] = c
		}
	})
	c, ok := casesBy[name]
	return c, ok
}

// sinkFor is the harness sink of a case and its options: the file sink where the case lays out
// a sink log; the file sink too where the commit log runs ahead of the offsets log, so that a
// batch that runs and then fails at its commit (Spark reports no progress for it) leaves its
// sink log entry for the harness to record; else the console sink. An empty file sink output is
// not neutral: a restart whose first batch is a compaction batch of _spark_metadata (9, 19, ...)
// fails reading the earlier batches' entries, so the commits-ahead cases get a compaction
// interval no batch id of theirs reaches.
func sinkFor(sinkLatest *int64, files map[string][]byte) (string, map[string]string) {
	opts := rateLimit(files)
	switch {
	case sinkLatest != nil:
		return "file", opts
	case commitGap(files) > 0:
		opts["spark.sql.streaming.fileSink.log.compactInterval"] = "1000000000"
		return "file", opts
	}
	return "console", opts
}

// rateLimit reads one record per batch when the commit log runs ahead of the offsets log, so
// that the restart runs enough new batches to reach the commits already there (what ckpt
// predicts fails); otherwise none: the restart reads what is left in one batch.
func rateLimit(files map[string][]byte) map[string]string {
	if commitGap(files) > 0 {
		return map[string]string{"maxOffsetsPerTrigger": "1"}
	}
	return nil
}

// kafkaOnly says whether every source line of every offsets file is a Kafka offset (or
// unreadable): the harness's query has one Kafka source.
func kafkaOnly(files map[string][]byte) bool {
	for p, data := range files {
		if !offsetsFile.MatchString(p) {
			continue
		}
		lines := strings.Split(string(data), "\n")
		nonEmpty := 0
		for _, l := range lines[min(2, len(lines)):] {
			if strings.TrimSpace(l) == "" {
				continue
			}
			nonEmpty++
			var v any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				if l == scenario.Void {
					return false
				}
				continue
			}
			m, ok := v.(map[string]any)
			if !ok {
				return false // a Long offset: memory or rate source
			}
			for _, pv := range m {
				if _, ok := pv.(map[string]any); !ok {
					return false // {"logOffset":n}: a file source
				}
			}
		}
		if nonEmpty > 1 {
			return false
		}
	}
	return true
}

var offsetsFile = regexp.MustCompile(`^offsets/[0-9]+$`)

// topicData is what the broker must hold for a case: per topic, the record count of each
// partition (the highest offset any offsets or initial-offsets file records, plus extraRecords).
func topicData(files map[string][]byte) map[string][]int64 {
	out := map[string][]int64{}
	note := func(line string) {
		var m map[string]map[string]int64
		if json.Unmarshal([]byte(line), &m) != nil {
			return
		}
		for topic, parts := range m {
			for ps, off := range parts {
				p, err := strconv.Atoi(ps)
				if err != nil || p < 0 || p > 1000 {
					continue
				}
				cur := out[topic]
				for len(cur) <= p {
					cur = append(cur, 0)
				}
				cur[p] = max(cur[p], off)
				out[topic] = cur
			}
		}
	}
	for p, data := range files {
		switch {
		case offsetsFile.MatchString(p):
			for _, l := range strings.Split(string(data), "\n") {
				note(l)
			}
		case strings.HasPrefix(p, "sources/") && strings.HasSuffix(p, "/0"):
			s := string(data)
			if i := strings.Index(s, "\n"); i >= 0 {
				note(s[i+1:])
			}
		}
	}
	if len(out) == 0 {
		out["events"] = []int64{0, 0, 0}
	}
	extra := extraRecords + commitGap(files)
	for t, parts := range out {
		for i := range parts {
			parts[i] += extra
		}
		out[t] = parts
	}
	return out
}

// commitGap is how many batches the commit log runs ahead of the offsets log (0 when it does
// not): the restart must run that many new batches, one record per partition each at
// maxOffsetsPerTrigger=1, to reach the commits already there.
func commitGap(files map[string][]byte) int64 {
	maxOffsets, maxCommit := int64(-1), int64(-1)
	for p := range files {
		if offsetsFile.MatchString(p) {
			if n, err := strconv.ParseInt(strings.TrimPrefix(p, "offsets/"), 10, 64); err == nil {
				maxOffsets = max(maxOffsets, n)
			}
		}
		if strings.HasPrefix(p, "commits/") {
			if n, err := strconv.ParseInt(strings.TrimPrefix(p, "commits/"), 10, 64); err == nil {
				maxCommit = max(maxCommit, n)
			}
		}
	}
	return max(0, maxCommit-maxOffsets)
}

// subscribeOption is the harness option for a case whose offsets files name no topic.
func subscribeOption(files map[string][]byte, topics map[string][]int64) map[string]string {
	for p := range files {
		if offsetsFile.MatchString(p) && strings.Contains(string(files[p]), `":{"`) {
			return nil
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	return map[string]string{"subscribe": strings.Join(names, ",")}
}

// layout writes the case's checkpoint into dir/checkpoint and, with a sink log, the file sink's
// _spark_metadata into dir/output; it returns both paths.
func (c oracleCase) layout(t testing.TB, dir string) (ck, out string) {
	t.Helper()
	ck, out = writeCheckpoint(t, dir, c.build)
	if c.sinkLatest != nil {
		meta := filepath.Join(out, "_spark_metadata")
		if err := os.MkdirAll(meta, 0o755); err != nil {
			t.Fatal(err)
		}
		for id := int64(0); id <= *c.sinkLatest; id++ {
			name := strconv.FormatInt(id, 10)
			if (id+1)%10 == 0 { // spark.sql.streaming.fileSink.log.compactInterval's default
				name += ".compact"
			}
			if err := os.WriteFile(filepath.Join(meta, name), []byte("v1"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ck, out
}

// writeCheckpoint writes b into dir/checkpoint and makes an empty dir/output; it returns both.
func writeCheckpoint(t testing.TB, dir string, b *scenario.Builder) (ck, out string) {
	t.Helper()
	ck, out = filepath.Join(dir, "checkpoint"), filepath.Join(dir, "output")
	for _, d := range []string{ck, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storage.NewLocal(ck)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteTo(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return ck, out
}
