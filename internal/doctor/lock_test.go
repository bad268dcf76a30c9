package doctor_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// doctor reports a ckpt repair lock it finds (issue 26: a lock left by a killed ckpt blocked
// every change, and doctor said nothing), with its fields escaped.
func TestRepairLockFinding(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	sc, _ := scenario.Get("commits-ahead")
	if err := sc.WriteTo(ctx, m); err != nil {
		t.Fatal(err)
	}
	lock := `{"id":"20290101T000000Z-deadbeef","journal":"/data/ck/_ckpt/repairs/20290101T000000Z-deadbeef","op":"repair","host":"h\u001b[2J","pid":42,"acquired":"2029-01-01T00:00:00Z"}`
	if err := m.WriteFile(ctx, "_ckpt/lock", []byte(lock)); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Load(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Run(ctx, cp, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []doctor.Finding
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeRepairLock {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Severity != doctor.Warning || bytes.ContainsRune([]byte(got[0].Message), 0x1b) {
		t.Fatalf("findings = %+v, want one escaped %s warning", got, doctor.CodeRepairLock)
	}
	var g golden
	g.Findings = got
	var b bytes.Buffer
	if err := render.JSON(&b, g); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", "lock", "repair-lock.golden.json")
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
