package sparkoracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/state"
	"github.com/ckpt-dev/ckpt/internal/state/statetest"
	"github.com/ckpt-dev/ckpt/internal/stateedit"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// editCase is one `ckpt state edit` Spark judges: a checkpoint Spark wrote, the edit, and
// what the restart of the edited checkpoint must emit, told from the restart of the
// checkpoint as Spark left it (orig) and the state rows the edit dropped.
type editCase struct {
	name, query string
	// src finds the checkpoint for a release and the input directory its file source read
	// (the restart reads the last batch's file again there), and whether batches 0-4 must be
	// written in it too (false: no checkpoint for the release's line).
	src  func(rel string) (ck, input string, generated, ok bool)
	opts stateedit.Options
	// dropped tells a dropped state row (ckpt's JSON of it).
	dropped func(row string) bool
	// check compares the restart's output after the edit with orig's, given the dropped rows'
	// count and sum(x) by output key.
	check func(t *testing.T, orig, edited []map[string]any, gone map[string][2]float64)
}

func fixtureSrc(name string) func(string) (string, string, bool, bool) {
	return func(rel string) (string, string, bool, bool) {
		fxs, _ := filepath.Glob(filepath.Join("../../testdata/spark-state", Line(rel)+".*", name, "checkpoint"))
		if len(fxs) == 0 {
			return "", "", false, false
		}
		// As scripts/spark-state-fixtures.py had it.
		return fxs[0], filepath.Join(os.TempDir(), "h8-input-"+filepath.Base(filepath.Dir(filepath.Dir(fxs[0])))+"-"+name), false, true
	}
}

// aggKey is the output key of the agg query (k, b) and of its state key.
func aggKey(m map[string]any) string { return fmt.Sprint(m["k"], "|", m["b"]) }

// windowKey is the output key of the window query (window start, k).
func windowKey(m map[string]any) string {
	w, _ := m["window"].(map[string]any)
	return fmt.Sprint(w["start"], "|", m["k"])
}

// recounted: every output row of a key whose state was dropped counts from zero, so its count
// and sum(x) are orig's less what the dropped state held; every other row is orig's.
func recounted(key func(map[string]any) string) func(t *testing.T, orig, edited []map[string]any, gone map[string][2]float64) {
	return func(t *testing.T, orig, edited []map[string]any, gone map[string][2]float64) {
		t.Helper()
		norm := func(rows []map[string]any, adjust bool) []string {
			var out []string
			for _, r := range rows {
				n, _ := r["n"].(float64)
				sx, _ := r["sx"].(float64)
				if g, ok := gone[key(r)]; ok && adjust {
					n, sx = n+g[0], sx+g[1]
				}
				out = append(out, fmt.Sprintf("%s n=%v sx=%v", key(r), n, sx))
			}
			slices.Sort(out)
			return out
		}
		o, e := norm(orig, false), norm(edited, true)
		if !slices.Equal(o, e) {
			t.Errorf("the restart after the edit emitted (dropped counts added back)\n%s\nwithout the edit\n%s", strings.Join(e, "\n"), strings.Join(o, "\n"))
		}
		hit := 0
		for _, r := range edited {
			if _, ok := gone[key(r)]; ok {
				hit++
			}
		}
		if hit == 0 {
			t.Errorf("no output row of a dropped key: the case proves nothing")
		}
	}
}

var editCases = []editCase{
	{
		name: "agg-hdfs-where", query: "agg", src: fixtureSrc("agg-hdfs"),
		opts: stateedit.Options{Where: `key.k == "k1" || (key.k == "k3" && key.b == 1)`},
		dropped: func(r string) bool {
			return strings.Contains(r, `"key":{"k":"k1"`) || strings.Contains(r, `"key":{"k":"k3","b":1}`)
		},
		check: recounted(aggKey),
	},
	{
		name: "agg-rocksdb-changelog-where", query: "agg", src: fixtureSrc("agg-rocksdb-changelog"),
		opts:    stateedit.Options{Where: `key.k == "k2"`},
		dropped: func(r string) bool { return strings.Contains(r, `"key":{"k":"k2"`) },
		check:   recounted(aggKey),
	},
	{
		name: "agg-rocksdb-where", query: "agg", src: fixtureSrc("agg-rocksdb"),
		opts:    stateedit.Options{Where: `key.k == "k2"`},
		dropped: func(r string) bool { return strings.Contains(r, `"key":{"k":"k2"`) },
		check:   recounted(aggKey),
	},
	{
		name: "window-hdfs-evict", query: "window",
		src: func(rel string) (string, string, bool, bool) {
			// The checkpoint TestSparkLiveRepartition had Spark write, and its input.
			d := filepath.Join(repartitionGoldens, rel, "window-hdfs", "checkpoint")
			_, err := os.Stat(d)
			return d, filepath.Join(os.TempDir(), "ckpt-repartition-input-"+rel+"-window-hdfs"), true, err == nil
		},
		opts:    stateedit.Options{Evict: true, EvictBefore: time.Date(2024, 1, 11, 0, 0, 0, 0, time.UTC).UnixMilli()},
		dropped: func(r string) bool { return strings.Contains(r, `"end":"2024-01-11T00:00:00.000Z"`) },
		check:   recounted(windowKey),
	},
	{
		name: "join-hdfs-drop", query: "join", src: fixtureSrc("join-hdfs"),
		opts:    stateedit.Options{DropOperator: true, HasOperator: true, Operator: 0},
		dropped: func(string) bool { return true },
		check: func(t *testing.T, orig, edited []map[string]any, _ map[string][2]float64) {
			// With both sides' state gone, only pairs of rows that both came after the edit
			// join: restart batch b's rows have x = b*10+i, or k "new<b>" and x = b.
			isNew := func(k, x any) bool {
				n, _ := x.(float64)
				return n >= 50 || k == "new5" || k == "new6" || k == "new7"
			}
			var want, got []string
			for _, r := range orig {
				if isNew(r["lk"], r["lx"]) && isNew(r["rk"], r["rx"]) {
					want = append(want, fmt.Sprint(r))
				}
			}
			for _, r := range edited {
				got = append(got, fmt.Sprint(r))
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) || len(want) == 0 || len(want) == len(orig) {
				t.Errorf("the join after its state was dropped emitted\n%s\nwant the pairs of new rows only\n%s\n(of %d)", strings.Join(got, "\n"), strings.Join(want, "\n"), len(orig))
			}
		},
	},
}

// TestSparkLiveEdit: on every release, checkpoints Spark wrote, edited by ckpt (keys dropped
// by --where on the HDFS-backed provider and on RocksDB with and without changelog
// checkpointing, a window evicted by a watermark, a join's whole state dropped), are read by
// Spark's statestore reader (4.0+), which sees exactly the rows ckpt's reader saw before the
// edit less the dropped ones, and restarted by Spark over three more input files: the run
// succeeds and emits what the restart without the edit emits, except that every dropped key
// counts again from zero (a dropped join emits only pairs of new rows).
// CKPT_SPARK_EDIT=ci is CI's live case (agg-hdfs-where on the newest release);
// CKPT_SPARK_EDIT=name,… limits the cases. UPDATE_SPARK=1 keeps Spark's answers in
// testdata/spark-edit (editGoldens), which TestEditGoldens (internal/stateedit) compares ckpt
// with in every CI run.
func TestSparkLiveEdit(t *testing.T) {
	update := os.Getenv("UPDATE_SPARK") == "1"
	only := os.Getenv("CKPT_SPARK_EDIT")
	releases := releasesFromEnv(t)
	if only == "ci" {
		only, releases = "agg-hdfs-where", releases[len(releases)-1:]
		if update {
			t.Fatal("CKPT_SPARK_EDIT=ci runs a part of the cases: it cannot write the goldens")
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
			type run struct {
				c          editCase
				dir        string
				before     []string // ckpt's reading of the checkpoint as Spark left it
				gone       map[string][2]float64
				afterReads []string // (op, store) of Spark's reads after the edit
			}
			var runs []*run
			var reads, reqs []string
			for _, c := range editCases {
				if only != "" && !slices.Contains(strings.Split(only, ","), c.name) {
					continue
				}
				src, written, generated, ok := c.src(rel)
				if !ok {
					continue
				}
				r := &run{c: c, dir: filepath.Join(work, c.name), gone: map[string][2]float64{}}
				// The copies' file source logs are moved to an input directory of this test's
				// own, so that the live tests of other packages or helpers, which restart the
				// same checkpoints over the same shared directory, cannot pull it away.
				input := filepath.Join(r.dir, "input")
				if generated {
					writeRestartInput(t, input, c.query, generatedBatches)
				}
				writeRestartInput(t, input, c.query, restartBatches)
				orderInput(t, input)
				orig, edited := filepath.Join(r.dir, "orig"), filepath.Join(r.dir, "edited")
				copyTree(t, src, orig)
				copyTree(t, src, edited)
				relocateInput(t, orig, written, input)
				relocateInput(t, edited, written, input)
				r.before = editRows(t, orig, c.dropped, r.gone, c.query)
				p, err := stateedit.NewPlan(context.Background(), openDir(t, edited), c.opts)
				if err != nil {
					t.Fatal(err)
				}
				if p.Refused != "" {
					t.Fatalf("%s: refused: %s", c.name, p.Refused)
				}
				st := openDir(t, edited)
				files := map[string]string{}
				for _, a := range p.Actions {
					if err := st.WriteFile(context.Background(), a.Path, a.Data); err != nil {
						t.Fatal(err)
					}
					files[a.Path] = string(a.After)
				}
				rsrc, _ := filepath.Rel("../..", src)
				writeJSON(t, filepath.Join(r.dir, "edit.json"), editGolden{Checkpoint: filepath.ToSlash(rsrc), Where: c.opts.Where,
					DropOperator: c.opts.DropOperator, Evict: c.opts.Evict, EvictBefore: c.opts.EvictBefore, Operator: c.opts.Operator,
					HasOperator: c.opts.HasOperator, Files: files})
				if !strings.HasPrefix(rel, "3.") {
					for _, s := range stores(t, edited) {
						out := filepath.Join(r.dir, "state", s[0]+"-"+s[1]+".jsonl")
						_ = os.MkdirAll(filepath.Dir(out), 0o755)
						reads = append(reads, strings.Join([]string{edited, s[0], s[1], out}, "\t"))
						r.afterReads = append(r.afterReads, out)
					}
				}
				for _, ck := range []string{orig, edited} {
					reqs = append(reqs, strings.Join([]string{c.query, ck, input, ck + ".out.jsonl"}, "\t"))
				}
				runs = append(runs, r)
			}
			if len(runs) == 0 {
				t.Skipf("no edit case for Spark %s", rel)
			}
			// Spark's reader first: the restarts write new versions.
			if len(reads) > 0 {
				runStateRead(t, rel, reads)
			}
			runJava(t, rel, "RepartitionRestart", reqs)
			for _, r := range runs {
				t.Run(r.c.name, func(t *testing.T) {
					var sparkAfter []string
					for _, f := range r.afterReads {
						data, msg := readOrError(f)
						if msg != "" {
							t.Fatalf("Spark's reader failed on the edited checkpoint: %s", msg)
						}
						op := strings.SplitN(filepath.Base(f), "-", 2)[0]
						store := strings.TrimSuffix(strings.SplitN(filepath.Base(f), "-", 2)[1], ".jsonl")
						for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
							if l == "" {
								continue
							}
							n, err := statetest.Normalize([]byte(l))
							if err != nil {
								t.Fatal(err)
							}
							sparkAfter = append(sparkAfter, op+" "+store+" "+n)
						}
					}
					if len(r.afterReads) > 0 {
						var want []string
						for _, b := range r.before {
							if !r.c.dropped(b) {
								want = append(want, b)
							}
						}
						slices.Sort(sparkAfter)
						if !slices.Equal(sparkAfter, want) || len(want) == len(r.before) {
							t.Errorf("Spark's reader of the edited checkpoint\n%s\nwant the rows before less the dropped (%d of %d)\n%s",
								strings.Join(sparkAfter, "\n"), len(r.before)-len(want), len(r.before), strings.Join(want, "\n"))
						}
					}
					var outs [2][]map[string]any
					for i, ck := range []string{"orig", "edited"} {
						out := filepath.Join(r.dir, ck+".out.jsonl")
						data, msg := readOrError(out)
						if msg != "" {
							t.Fatalf("the restart of the %s checkpoint failed: %s", ck, msg)
						}
						outs[i] = jsonLines(t, data)
					}
					if len(outs[0]) == 0 {
						t.Fatal("the restart of Spark's own checkpoint emitted nothing")
					}
					r.c.check(t, outs[0], outs[1], r.gone)
					golden := filepath.Join(editGoldens, rel, r.c.name)
					if !update {
						compareTrees(t, golden, r.dir)
						return
					}
					if !t.Failed() {
						_ = os.RemoveAll(golden)
						if err := os.MkdirAll(golden, 0o755); err != nil {
							t.Fatal(err)
						}
						for _, f := range []string{"edit.json", "orig.out.jsonl", "edited.out.jsonl"} {
							copyTree(t, filepath.Join(r.dir, f), filepath.Join(golden, f))
						}
						if len(r.afterReads) > 0 {
							copyTree(t, filepath.Join(r.dir, "state"), filepath.Join(golden, "state"))
						}
					}
				})
			}
		})
	}
}

// editGoldens holds Spark's answers on checkpoints ckpt edited: <release>/<case>/edit.json
// (the checkpoint, relative to the repository, the edit, and the SHA-256 of every file ckpt
// added: what Spark ran on), state/<op>-<store>.jsonl (Spark's statestore reader of the edited
// checkpoint, 4.0+), orig.out.jsonl and edited.out.jsonl (the restarts without and with it).
const editGoldens = "../../testdata/spark-edit"

// editGolden is edit.json.
type editGolden struct {
	Checkpoint   string            `json:"checkpoint"`
	Where        string            `json:"where,omitempty"`
	DropOperator bool              `json:"dropOperator,omitempty"`
	Evict        bool              `json:"evict,omitempty"`
	EvictBefore  int64             `json:"evictBeforeMs,omitempty"`
	Operator     int64             `json:"operator,omitempty"`
	HasOperator  bool              `json:"hasOperator,omitempty"`
	Files        map[string]string `json:"files"`
}

// orderInput gives the input files of batch b the modification time of an hour ago plus b
// seconds: the file source takes files oldest first (maxFilesPerTrigger 1), and files written
// within the same millisecond would otherwise come in any order, and so would the batches.
func orderInput(t *testing.T, input string) {
	t.Helper()
	base := time.Now().Add(-time.Hour)
	files, _ := filepath.Glob(filepath.Join(input, "*", "*.json"))
	for _, f := range files {
		var b int
		if _, err := fmt.Sscanf(filepath.Base(f), "%d.json", &b); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(b) * time.Second)
		if err := os.Chtimes(f, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// relocateInput points the file source logs of the checkpoint ck (sources/) at input instead of
// written, and removes their Hadoop checksums, which no longer match (Spark reads a file without
// one unchecked). Only the copy's source logs change: the state, which ckpt edits, does not.
func relocateInput(t *testing.T, ck, written, input string) {
	t.Helper()
	err := filepath.Walk(filepath.Join(ck, "sources"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".crc") {
			return os.Remove(p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, bytes.ReplaceAll(data, []byte("file://"+written+"/"), []byte("file://"+input+"/")), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func openDir(t *testing.T, dir string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// editRows reads every store of the checkpoint with ckpt's reader ("op store row" lines,
// normalised and sorted as Spark's are) and sums the count and sum(x) of the rows dropped
// would drop, by the output key of query.
func editRows(t *testing.T, dir string, dropped func(string) bool, gone map[string][2]float64, query string) []string {
	t.Helper()
	ctx := context.Background()
	s := openDir(t, dir)
	cp, err := checkpoint.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	l, err := state.Scan(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, op := range l.Operators {
		for _, st := range op.Stores {
			r, err := state.NewReader(ctx, cp, l, state.ReadOptions{Operator: op.ID, Store: st.Name, Partition: -1})
			if err != nil {
				t.Fatal(err)
			}
			err = r.Each(ctx, func(row *state.Row) error {
				line := string(row.AppendJSON(nil))
				n, err := statetest.Normalize([]byte(line))
				if err != nil {
					return err
				}
				out = append(out, fmt.Sprint(op.ID)+" "+st.Name+" "+n)
				if !dropped(line) || query == "join" {
					return nil
				}
				var m struct {
					Key   map[string]any `json:"key"`
					Value json.RawMessage
				}
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					return err
				}
				k := aggKey(m.Key)
				if query == "window" {
					k = windowKey(m.Key)
				}
				v := row.Value()
				c, _ := v.Values[0].(int64)
				sx, _ := v.Values[1].(int64)
				g := gone[k]
				gone[k] = [2]float64{g[0] + float64(c), g[1] + float64(sx)}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(out)
	return out
}

func jsonLines(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
