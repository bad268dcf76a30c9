package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/replay"
	"github.com/ckpt-dev/ckpt/internal/cmd/root"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// The runbooks in docs/runbooks are sequences of ckpt commands with their real output. This test
// runs the commands on scenario checkpoints and compares the pages; `go test ./cmd/ckpt -run
// TestRunbooks -update` rewrites them after a reviewed change, so they never go stale.
func init() {
	// Another test file of this package may define -update already; share it then.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files (docs/runbooks) instead of comparing")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// runbookNow pins the clock: journal ids are the repair time, so pages stay byte-stable.
var runbookNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type rbStep struct {
	// text is Markdown printed before the command.
	text string
	// cmd is the command line after "ckpt" ("" for prose only). {journal} is replaced by the
	// repair directory of the last repair in the checkpoint named by journalOf.
	cmd string
	// setup prepares files before the command (in the page's working directory).
	setup func(t *testing.T, dir string)
	// stage, when set, runs after setup and may start things the commands talk to (a broker):
	// it fills the scene's placeholders and the values the page shows instead of real ones.
	stage func(sc *rbScene)
}

// rbScene is what a page's stages set up: placeholders for the command lines, and real values
// (a broker's random address) with the stable text the page shows for them.
type rbScene struct {
	T  *testing.T
	WD string
	// Run maps a placeholder name ("bootstrap" for {bootstrap}) to what the command runs with.
	Run map[string]string
	// Show maps a real value to what the page prints instead, in commands and output alike.
	Show map[string]string
}

// expand fills the placeholders of a command line.
func (sc *rbScene) expand(line string) string {
	for k, v := range sc.Run {
		line = strings.ReplaceAll(line, "{"+k+"}", v)
	}
	return line
}

// stable replaces the real values of the scene by what the page shows.
func (sc *rbScene) stable(s string) string {
	values := make([]string, 0, len(sc.Show))
	for value := range sc.Show {
		values = append(values, value)
	}
	// Longest first, so that a value containing another is replaced whole.
	sort.Slice(values, func(i, j int) bool {
		return len(values[i]) > len(values[j]) || len(values[i]) == len(values[j]) && values[i] < values[j]
	})
	for _, value := range values {
		s = strings.ReplaceAll(s, value, sc.Show[value])
	}
	return s
}

type runbook struct {
	file, title, intro string
	steps              []rbStep
	outro              string
}

func scenarioAt(name, dir string) func(t *testing.T, wd string) {
	return func(t *testing.T, wd string) {
		sc, ok := scenario.Get(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		s, err := storage.NewLocal(filepath.Join(wd, dir))
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.WriteTo(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

func sinkAt(dir string, upTo int) func(t *testing.T, wd string) {
	return func(t *testing.T, wd string) {
		d := filepath.Join(wd, dir, "_spark_metadata")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= upTo; i++ {
			line := fmt.Sprintf(`{"path":"file:///data/out/part-%05d.parquet","size":1024,"isDir":false,"modificationTime":1733000000000,"blockReplication":1,"blockSize":33554432,"action":"add"}`, i)
			if err := os.WriteFile(filepath.Join(d, fmt.Sprint(i)), []byte("v1\n"+line), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestRunbooks(t *testing.T) {
	docs, err := filepath.Abs(filepath.Join("..", "..", "docs", "runbooks"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range runbooks {
		t.Run(strings.TrimSuffix(rb.file, ".md"), func(t *testing.T) {
			got := renderRunbook(t, rb)
			path := filepath.Join(docs, rb.file)
			if updating() {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (generate the page with: go test ./cmd/ckpt -run TestRunbooks -update)", err)
			}
			if string(want) != got {
				t.Errorf("%s is stale: the commands print something else now. Review the difference and regenerate with\n"+
					"  go test ./cmd/ckpt -run TestRunbooks -update\n%s", path, firstDiff(string(want), got))
			}
		})
	}
	// The index lists every page.
	var idx strings.Builder
	idx.WriteString("# Runbooks\n\nOne page per incident. Every command on these pages was run by `cmd/ckpt/runbook_test.go` on the\ncheckpoint the page describes, and the output shown is what it printed: the test fails when a\npage no longer matches ckpt, and `go test ./cmd/ckpt -run TestRunbooks -update` regenerates them.\n\n")
	for _, rb := range runbooks {
		fmt.Fprintf(&idx, "- [%s](%s)\n", rb.title, rb.file)
	}
	path := filepath.Join(docs, "README.md")
	if updating() {
		if err := os.WriteFile(path, []byte(idx.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if b, err := os.ReadFile(path); err != nil || string(b) != idx.String() {
		t.Errorf("%s is stale (regenerate with -update)", path)
	}
}

func renderRunbook(t *testing.T, rb runbook) string {
	wd := t.TempDir()
	t.Chdir(wd)
	sc := &rbScene{T: t, WD: wd, Run: map[string]string{}, Show: map[string]string{}}
	var page strings.Builder
	fmt.Fprintf(&page, "<!-- Generated by cmd/ckpt/runbook_test.go from real ckpt runs (the working directory shows as %s);\n     do not edit by hand: go test ./cmd/ckpt -run TestRunbooks -update -->\n\n", runbookDir)
	fmt.Fprintf(&page, "# %s\n\n%s\n", rb.title, strings.TrimSpace(rb.intro))
	for _, st := range rb.steps {
		if st.setup != nil {
			st.setup(t, wd)
		}
		if st.stage != nil {
			st.stage(sc)
		}
		if st.text != "" {
			fmt.Fprintf(&page, "\n%s\n", strings.TrimSpace(st.text))
		}
		if st.cmd == "" {
			continue
		}
		line := sc.expand(strings.ReplaceAll(st.cmd, "{journal}", lastJournal(t, wd)))
		out, code := runCkpt(t, strings.Fields(line))
		line, out = sc.stable(line), sc.stable(out)
		// Spark prints absolute paths; the page shows the temporary working directory as /data.
		for _, d := range []string{realPath(wd), wd} {
			out = strings.ReplaceAll(out, d, runbookDir)
		}
		fmt.Fprintf(&page, "\n```console\n$ ckpt %s\n%s", line, out)
		if !strings.HasSuffix(out, "\n") && out != "" {
			page.WriteString("\n")
		}
		if code != 0 {
			fmt.Fprintf(&page, "[exit status %d]\n", code)
		}
		page.WriteString("```\n")
	}
	if rb.outro != "" {
		fmt.Fprintf(&page, "\n%s\n", strings.TrimSpace(rb.outro))
	}
	return page.String()
}

// runbookDir stands for the working directory the commands ran in.
const runbookDir = "/data"

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// lastJournal is the newest repair directory below the working directory, relative to it.
func lastJournal(t *testing.T, wd string) string {
	matches, _ := filepath.Glob(filepath.Join(wd, "*", "_ckpt", "repairs", "*"))
	if len(matches) == 0 {
		return "(no journal)"
	}
	newest := matches[len(matches)-1]
	rel, err := filepath.Rel(wd, newest)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// runCkpt runs one ckpt command in-process, as root.Execute does, with stdout and stderr
// interleaved as a terminal shows them (but without colour or a terminal's table borders).
func runCkpt(t *testing.T, args []string) (string, int) {
	ios, _, out, _ := iostreams.Test()
	ios.ErrOut = out
	env := &cli.Env{IO: ios, Version: "test", Now: func() time.Time { return runbookNow }, Getenv: func(string) string { return "" }, Rand: zeroReader{}}
	cmd := root.NewCmd(env)
	// replay is registered by its own feature; until then the page still shows its real output.
	if c, _, err := cmd.Find([]string{"replay"}); err != nil || c == cmd {
		cmd.AddCommand(replay.NewCmd(env, nil))
	}
	cmd.SetArgs(args)
	cmd.SetIn(ios.In)
	cmd.SetOut(out)
	cmd.SetErr(out)
	err := cmd.ExecuteContext(context.Background())
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(out, "ckpt: %s\n", msg)
	}
	return out.String(), exitcode.Code(err)
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("first difference at line %d:\n  page: %q\n  now:  %q", i+1, a, b)
		}
	}
	return ""
}

var runbooks = []runbook{
	{
		file:  "query-cannot-restart.md",
		title: "The query cannot restart",
		intro: `
The driver stops at start with one of these, and restarting again does not help:

` + "```" + `
ERROR MicroBatchExecution: The offset log for batch 4 doesn't exist, which is required to restart the query from the latest batch 5 from the offset log. …
java.lang.IllegalStateException: batch 4 doesn't exist
` + "```" + `

` + "```" + `
java.lang.IllegalStateException: Failed to read log file file:/…/offsets/7. Incomplete log file
` + "```" + `

` + "```" + `
org.apache.spark.SparkException: [CONCURRENT_STREAM_LOG_UPDATE] Concurrent update to the log. Multiple streaming jobs detected for 5.
` + "```" + `

Spark never falls back to an older batch on its own, and the usual advice (delete files by hand, or
delete the whole checkpoint) loses progress or data. Leave the query stopped and let ckpt find the
cause, show the repair and what it costs, and keep a copy of every file it touches.

The example below is a checkpoint whose ` + "`offsets/5`" + ` sits after a gap: ` + "`offsets/4`" + ` is missing and batch 5 was
never committed.`,
		steps: []rbStep{
			{setup: scenarioAt("missing-previous-offsets", "ckpt"), text: "## 1. Find out what is wrong\n\n`ckpt doctor` names the problem, quotes what Spark prints, and gives the command that fixes it (exit status 3: problems found).", cmd: "doctor ckpt"},
			{text: "## 2. Look at the plan\n\n`ckpt repair` without `--execute` changes nothing. It lists every way out with the restart the recovery planner predicts for it, and recommends the one that keeps every record and replays the least. Here deleting the uncommitted orphan is enough: the query resumes after the last committed batch and nothing runs twice. Copying `offsets/5` into the gap would skip batch 4's data, so that way is refused.", cmd: "repair ckpt"},
			{text: "## 3. Apply it\n\nOn a terminal `--execute` asks for confirmation; in a script add `--yes`. Before the first change ckpt copies every file it will touch, with its `.crc`, to `<checkpoint>/_ckpt/repairs/<id>/` and writes a journal there (a directory Spark never reads; `--backup-dir` puts it elsewhere). After the last change it re-reads the checkpoint and runs the planner again.", cmd: "repair ckpt --execute --yes"},
			{text: "## 4. Check before restarting", cmd: "replay ckpt"},
			{cmd: "doctor ckpt"},
			{text: "## Going back\n\nThe journal restores the checkpoint byte for byte, for as long as you keep `_ckpt/`. undo refuses to touch a file that changed after the repair (the restarted query wrote it).", cmd: "repair undo {journal} --yes"},
			{setup: scenarioAt("corrupt-latest-offsets-empty", "ckpt2"), text: "## A damaged latest file\n\nAn empty or truncated latest offsets or commit file is an unfinished write (a copy by hand, a full disk, an upload that stopped). Spark reads the newest file and never falls back, so the file goes and the batch is planned again; the commits at or above it go too, so that no commit is left ahead of the offsets.", cmd: "repair ckpt2"},
		},
		outro: `
## If the repair stops half-way

A crash or a storage error in the middle leaves the journal and the repair lock
(` + "`<checkpoint>/_ckpt/lock`" + `) behind. Nothing is lost: every original is in the backup before any change.
Finish with ` + "`ckpt repair resume <journal>`" + ` or go back with ` + "`ckpt repair undo <journal>`" + `; both read the
hashes of the files as they are now, so running either again is harmless. See [repair](../repair.md).`,
	},
	{
		file:  "duplicates-after-restart.md",
		title: "Duplicates after a restart",
		intro: `
After a restart the sink has some records twice. Spark's recovery is at-least-once by design: a
batch whose offsets were written but whose commit was not runs again over exactly the same range,
and only sinks that are idempotent by batch id (the file sink, Delta, a ` + "`foreachBatch`" + ` writer that
checks the id) write it once. ckpt tells you which batch ran again, over which offsets, and whether
your file sink skipped it.

The example is a checkpoint whose batch 7 was planned but not committed.`,
		steps: []rbStep{
			{setup: scenarioAt("rerun-last", "ckpt"), text: "## 1. Which batch runs again, and what it reads\n\n`ckpt replay` predicts the restart: the batch that re-runs, the range per Kafka partition and the number of records.", cmd: "replay ckpt"},
			{setup: sinkAt("out", 6), text: "## 2. Does the file sink write it again?\n\nWith `--sink` (the output directory that holds `_spark_metadata`), replay compares the sink's log with the restart. Here the sink stops at batch 6, so the re-run of batch 7 is its first write: no duplicates. When the sink already has the batch, Spark logs \"Skipping already committed batch\" and writes nothing.", cmd: "replay ckpt --sink out"},
			{text: "## 3. Nothing to repair\n\nA re-run is Spark's normal recovery, not damage: doctor reports it as information, and repair has nothing to do. Duplicates in a sink that is not idempotent are fixed in the sink (deduplicate by batch id or by key).", cmd: "doctor ckpt"},
			{cmd: "repair ckpt"},
			{setup: scenarioAt("async-trap-0-3-7", "trap"), text: "## Duplicates caused by a repair\n\nDeleting offsets by hand makes Spark plan batches again that were already delivered. ckpt's plans say how much each way out replays; here deleting back to the last consecutive pair would run batches 1-7 again (231 records), while the recommended copy replays nothing.", cmd: "repair trap --strategy delete"},
			{cmd: "repair trap"},
		},
	},
	{
		file:  "switch-off-async-progress-tracking.md",
		title: "Switching off async progress tracking",
		intro: `
With ` + "`asyncProgressTrackingEnabled`" + ` Spark writes offsets and commits only every
` + "`asyncProgressTrackingCheckpointIntervalMs`" + `, so both logs have gaps. The async engine restarts from the nearest
earlier offsets file; the normal engine needs ` + "`offsets/L-1`" + ` exactly. Switch async progress tracking off
and the next restart fails with ` + "`batch L-1 doesn't exist`" + `, although the latest batch committed.

The example is the checkpoint of Spark's async test suite: offsets and commits 0, 3 and 7.`,
		steps: []rbStep{
			{setup: scenarioAt("async-trap-0-3-7", "ckpt"), text: "## Before switching off\n\nCheck the checkpoint under the engine that runs it now. doctor warns that the normal engine cannot restart from these gaps.", cmd: "doctor ckpt --mode async"},
			{text: "Spark's documented procedure avoids the problem: run the query once more with `asyncProgressTrackingCheckpointIntervalMs` set to 0 until it has processed at least two micro-batches, so the latest two offsets files are consecutive, then stop it and switch async progress tracking off.\n\n## Already switched off: the query fails\n\ndoctor, now for the normal engine, reports the failure Spark hits.", cmd: "doctor ckpt"},
			{text: "## The ways out\n\nrepair computes the consequence of each with the recovery planner:\n\n- **delete** goes back to the last consecutive pair of offsets files (here only batch 0 is left), so batches 1-7 run again;\n- **copy-previous** writes a copy of `offsets/7` as `offsets/6`: batch 7 is committed, so Spark reads `offsets/6` only to seed the start offsets, which `commits/7` then replaces. Nothing runs again. This follows from Spark's code (MicroBatchExecution), not from its documentation;\n- **spark-procedure** changes no file: it is the procedure above, applied after the fact.\n\nThe recommended way keeps every record and replays the least.", cmd: "repair ckpt"},
			{text: "`--strategy` picks another way; for Spark's procedure repair prints the steps.", cmd: "repair ckpt --strategy spark-procedure"},
			{text: "## Apply the recommended repair", cmd: "repair ckpt --execute --yes"},
			{cmd: "doctor ckpt"},
		},
		outro: `
The gaps further back stay: they matter only for going back to those batches. A file sink cannot be
used with async progress tracking, so with ` + "`--sink`" + ` repair never proposes Spark's procedure, and it
never deletes offsets of a batch the sink has committed.

When the query runs on ckpt's own engine, ` + "`ckpt run`" + ` without async on such a checkpoint stops before
touching anything, names the cause and prints these ways out. ` + "`ckpt run --async-switch-off`" + ` performs
Spark's procedure itself: it starts in async mode with an interval of 0, persists the offsets and commits
of its first two batches, then carries on as the normal engine (see docs/engine.md).`,
	},
	kafkaDataAgedOut(),
}

// zeroReader pins the random bits of repair ids, so that pages stay byte-stable.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
