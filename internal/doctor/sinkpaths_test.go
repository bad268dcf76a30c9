package doctor_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// writeSinkLog writes _spark_metadata/<name> below out with add entries for paths.
func writeSinkLog(t *testing.T, out, name string, paths ...string) {
	t.Helper()
	b := []byte("v1")
	for _, p := range paths {
		b = append(b, '\n')
		b = logformat.AppendSinkFileStatusJSON(b, logformat.SinkFileStatus{Path: p, Size: 10, ModificationTime: 1, BlockReplication: 1, BlockSize: 1, Action: "add"})
	}
	dir := filepath.Join(out, "_spark_metadata")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func outsideFindings(t *testing.T, sinkDir string) []doctor.Finding {
	t.Helper()
	sink, err := storage.NewLocal(sinkDir)
	if err != nil {
		t.Fatal(err)
	}
	rep := diagnoseDir(t, conformanceDir(t, "checkpoint-version-2.1.0"), doctor.Options{Sink: sink, SinkLocation: sinkDir})
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeSinkEntryOutside {
			out = append(out, f)
		}
	}
	return out
}

// Sink log entries that point outside the output directory (a ".." path, another absolute
// location) are an error finding; entries below it, in Spark's "file:" form or plain, are not.
func TestSinkEntryOutside(t *testing.T) {
	out := t.TempDir()
	writeSinkLog(t, out, "0", "file:"+out+"/part-00000.parquet", out+"/day=1/part-00001.parquet")
	if fs := outsideFindings(t, out); len(fs) != 0 {
		t.Fatalf("a clean log has findings: %+v", fs)
	}
	writeSinkLog(t, out, "1", "file:"+out+"/part-00002.parquet", "file:"+out+"/../other/part-0.parquet",
		"file:/etc/passwd", "s3a://bucket/elsewhere/part-0.parquet")
	fs := outsideFindings(t, out)
	if len(fs) != 1 {
		t.Fatalf("findings = %+v, want one %s", fs, doctor.CodeSinkEntryOutside)
	}
	f := fs[0]
	for _, want := range []string{"3 files outside its output directory " + out, `"file:` + out + `/../other/part-0.parquet"`, `"file:/etc/passwd"`, `"s3a://bucket/elsewhere/part-0.parquet"`} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message lacks %s: %s", want, f.Message)
		}
	}
	if f.Severity != doctor.Error || f.Path != "sink:_spark_metadata/1" {
		t.Errorf("finding = %+v", f)
	}
	// The golden (with the temporary directory renamed) is what TestCodeCoverage counts.
	f.Message = strings.ReplaceAll(f.Message, out, "/data/out")
	var g golden
	g.Findings = []doctor.Finding{f}
	var b bytes.Buffer
	if err := render.JSON(&b, g); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", "sink", "sink-entry-outside.golden.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(p); err != nil || !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s differs (run with -update after review): %v\n%s", p, err, b.Bytes())
	}
}

// A sink copied elsewhere: its entries name the directory it was written in, so that directory
// (the one most entries share) stands for the output directory.
func TestSinkEntryOutsideMoved(t *testing.T) {
	out := t.TempDir()
	writeSinkLog(t, out, "0", "s3a://bucket/out/part-0.parquet", "s3a://bucket/out/d=1/part-1.parquet", "s3a://bucket/out/part-2.parquet")
	if fs := outsideFindings(t, out); len(fs) != 0 {
		t.Fatalf("a moved clean log has findings: %+v", fs)
	}
	writeSinkLog(t, out, "1", "s3a://bucket/other/part-3.parquet")
	fs := outsideFindings(t, out)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "1 file outside its output directory s3://bucket/out") {
		t.Fatalf("findings = %+v", fs)
	}
}
