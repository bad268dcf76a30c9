package doctor_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func sinkFileFindings(t *testing.T, out string, deep bool) []doctor.Finding {
	t.Helper()
	sink, err := storage.NewLocal(out)
	if err != nil {
		t.Fatal(err)
	}
	rep := diagnoseDir(t, conformanceDir(t, "checkpoint-version-2.1.0"), doctor.Options{Sink: sink, SinkLocation: "/data/out", Deep: deep})
	var fs []doctor.Finding
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Code, "sink-file-") || f.Code == doctor.CodeSinkLogBatchMissing {
			fs = append(fs, f)
		}
	}
	return fs
}

func writeData(t *testing.T, out, name string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(out, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, name), bytes.Repeat([]byte("x"), size), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With --deep and --sink, doctor compares the sink's live files with its output (the check of
// `ckpt sink verify`), under the same codes.
func TestSinkFiles(t *testing.T) {
	out := t.TempDir()
	writeSinkLog(t, out, "0", "file:"+out+"/part-0", "file:"+out+"/part-1", "file:"+out+"/part-2")
	writeData(t, out, "part-0", 10)
	writeData(t, out, "part-2", 7)
	writeData(t, out, "part-9", 3)
	writeData(t, out, "_SUCCESS", 0)
	if fs := sinkFileFindings(t, out, false); len(fs) != 0 {
		t.Fatalf("without --deep: %+v", fs)
	}
	fs := sinkFileFindings(t, out, true)
	got := map[string]string{}
	for _, f := range fs {
		got[f.Code] = f.Path + " " + string(f.Severity)
	}
	want := map[string]string{
		doctor.CodeSinkFileMissing:      "sink:part-1 error",
		doctor.CodeSinkFileSizeMismatch: "sink:part-2 error",
		doctor.CodeSinkFileExtra:        "sink:part-9 info",
	}
	if len(got) != len(want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}

	// A compaction file readers need is gone.
	out2 := t.TempDir()
	writeSinkLog(t, out2, "0", "file:"+out2+"/part-0")
	writeSinkLog(t, out2, "1.compact", "file:"+out2+"/part-0", "file:"+out2+"/part-1")
	writeSinkLog(t, out2, "2", "file:"+out2+"/part-2")
	writeSinkLog(t, out2, "4", "file:"+out2+"/part-4")
	writeData(t, out2, "part-4", 10)
	for _, n := range []string{"part-0", "part-1", "part-2", "part-3"} {
		writeData(t, out2, n, 10)
	}
	fs2 := sinkFileFindings(t, out2, true)
	var missing *doctor.Finding
	for i := range fs2 {
		if fs2[i].Code == doctor.CodeSinkLogBatchMissing {
			missing = &fs2[i]
		}
	}
	if missing == nil || missing.Path != "sink:_spark_metadata/3.compact" || missing.Commands[0] != "ckpt sink repair /data/out" {
		t.Fatalf("findings %+v", fs2)
	}
	fs = append(fs, *missing)

	for i := range fs {
		fs[i].Message = strings.ReplaceAll(strings.ReplaceAll(fs[i].Message, out2, "/data/out"), out, "/data/out")
	}
	var g golden
	g.Findings = fs
	var b bytes.Buffer
	if err := render.JSON(&b, g); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", "sink", "sink-files.golden.json")
	if *update {
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(p); err != nil || !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s differs (run with -update after review): %v\n%s", p, err, b.Bytes())
	}
}
