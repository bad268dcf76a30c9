package doctor_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/deltalog"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

const deltaFixtures = "../../testdata/delta"

// deltaDoctor runs doctor on a Delta fixture's checkpoint with its table as source 0 (and, when
// sink is set, its Delta sink).
func deltaDoctor(t *testing.T, c string, table, sink string) *doctor.Report {
	t.Helper()
	ctx := context.Background()
	open := func(rel string) storage.Store {
		s, err := storage.NewLocal(filepath.Join(deltaFixtures, c, rel))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cp, err := checkpoint.Load(ctx, open("checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	opts := doctor.Options{Location: "/fixture/" + c + "/checkpoint"}
	if table != "" {
		tb, err := deltalog.Read(ctx, open(table), "/fixture/"+c+"/"+table)
		if err != nil {
			t.Fatal(err)
		}
		opts.Delta = []recovery.DeltaTable{{Source: 0, Table: tb}}
	}
	if sink != "" {
		tb, err := deltalog.Read(ctx, open(sink), "/fixture/"+c+"/"+sink)
		if err != nil {
			t.Fatal(err)
		}
		m, err := cp.ReadMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if opts.DeltaSink, err = tb.Txn(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
		opts.SinkLocation = "/fixture/" + c + "/" + sink
	}
	rep, err := doctor.Run(ctx, cp, opts)
	if err != nil {
		t.Fatal(err)
	}
	// testdata/delta/*.golden.json feed TestCodeCoverage (the Delta codes need Spark's
	// fixtures, not a scenario); -update rewrites them.
	got := render1(rep)
	name := filepath.Join("testdata", "delta", c+".golden.json")
	if *update {
		_ = os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after review):\n%s", name, got)
	}
	return rep
}

func sparkError(t *testing.T, c string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deltaFixtures, c, "error.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, msg, ok := strings.Cut(strings.TrimSpace(string(data)), "terminated with exception: ")
	if !ok {
		t.Fatalf("%s/error.txt: no exception", c)
	}
	return msg
}

// ckpt's prediction carries the exact text Spark stopped the restart with.
func TestDeltaTableReplaced(t *testing.T) {
	rep := deltaDoctor(t, "replaced", "table", "")
	f := findOne(t, rep, doctor.CodeDeltaTableReplaced)
	if want := sparkError(t, "replaced"); rep.Restart.ErrorText() != want || !strings.HasSuffix(*f.SparkError, want) {
		t.Errorf("Spark said:\n%s\nckpt predicts:\n%s", want, rep.Restart.ErrorText())
	}
	if rep.Restart.Reason != recovery.ReasonDeltaTableReplaced || rep.Restart.FailedFile != "offsets/1" {
		t.Errorf("reason %s, file %s", rep.Restart.Reason, rep.Restart.FailedFile)
	}
}

func TestDeltaVersionsExpired(t *testing.T) {
	rep := deltaDoctor(t, "expired", "table", "")
	f := findOne(t, rep, doctor.CodeDeltaVersionsExpired)
	if want := sparkError(t, "expired"); rep.Restart.ErrorText() != want || !strings.HasSuffix(*f.SparkError, want) {
		t.Errorf("Spark said:\n%s\nckpt predicts:\n%s", want, rep.Restart.ErrorText())
	}
	if f.Delta == nil || f.Delta.NeededVersion != 3 || f.Delta.EarliestCommit != 8 || len(f.Commands) != 1 {
		t.Errorf("finding %+v", f)
	}
}

// The same checkpoints without the table changes: the checkpoint alone restarts fine.
func TestDeltaHealthy(t *testing.T) {
	rep := deltaDoctor(t, "source", "table", "sink")
	if len(rep.Findings) != 0 || rep.Restart.Failed() {
		t.Errorf("findings %+v, outcome %s", rep.Findings, rep.Restart.Outcome)
	}
	if s := rep.Restart.Sink; s == nil || s.Kind != recovery.SinkKindDelta || s.Status != recovery.SinkInSync || s.Latest != 2 {
		t.Errorf("sink verdict %+v", s)
	}
	if d := rep.Restart.Delta; len(d) != 1 || d[0].Status != recovery.DeltaOK || d[0].VersionsBehind != 1 {
		t.Errorf("delta verdict %+v", d)
	}
}

// Spark's restart of the sink fixture skipped the re-run of batch 2 (rerun.json): the planner
// says so from the txn version.
func TestDeltaSinkSkipsRerun(t *testing.T) {
	rep := deltaDoctor(t, "sink", "", "sink")
	s := rep.Restart.Sink
	if s == nil || s.Status != recovery.SinkSkipsRerun || s.Latest != 2 || rep.Restart.RerunBatch == nil || *rep.Restart.RerunBatch != 2 {
		t.Fatalf("sink verdict %+v", s)
	}
	data, err := os.ReadFile(filepath.Join(deltaFixtures, "sink", "rerun.json"))
	if err != nil || !strings.Contains(string(data), `"sinkVersionsBefore": 3, "sinkVersionsAfter": 3`) {
		t.Fatalf("rerun.json: %s %v", data, err)
	}
}

func findOne(t *testing.T, rep *doctor.Report, code string) doctor.Finding {
	t.Helper()
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	if len(out) != 1 || out[0].Severity != doctor.Error {
		t.Fatalf("want one error %s, got %+v", code, rep.Findings)
	}
	return out[0]
}
