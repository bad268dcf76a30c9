package doctor_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/doctor"
	"github.com/ckpt-dev/ckpt/internal/journal"
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
	got := findingsOf(t, m, doctor.CodeRepairLock)
	if len(got) != 1 || got[0].Severity != doctor.Warning || bytes.ContainsRune([]byte(got[0].Message), 0x1b) {
		t.Fatalf("findings = %+v, want one escaped %s warning", got, doctor.CodeRepairLock)
	}
	checkLockGolden(t, m, "repair-lock", got)
}

// findingsOf runs doctor on the checkpoint in m and returns its findings of code.
func findingsOf(t *testing.T, m storage.Store, code string) []doctor.Finding {
	t.Helper()
	ctx := context.Background()
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
		if f.Code == code {
			got = append(got, f)
		}
	}
	return got
}

// checkLockGolden compares findings with testdata/lock/<name>.golden.json (the store's name,
// which differs between runs, as mem://ck).
func checkLockGolden(t *testing.T, m storage.Store, name string, got []doctor.Finding) {
	t.Helper()
	var g golden
	g.Findings = got
	var b bytes.Buffer
	if err := render.JSON(&b, g); err != nil {
		t.Fatal(err)
	}
	out := bytes.ReplaceAll(b.Bytes(), []byte(m.URI()), []byte("mem://ck"))
	p := filepath.Join("testdata", "lock", name+".golden.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(p); err != nil || !bytes.Equal(want, out) {
		t.Errorf("%s differs (run with -update after review): %v\n%s", p, err, out)
	}
}

// doctor reports the staging runs a killed `ckpt state repartition --execute` left (issue 21),
// with the command that removes them, and not a run whose ckpt still runs (this process).
func TestLeftoverStagingFinding(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	sc, _ := scenario.Get("commits-ahead")
	if err := sc.WriteTo(ctx, m); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"20290101T000000Z-deadbeef", "x\x1b[2J", "live"} {
		if err := m.WriteFile(ctx, journal.StagedPath(run, "state/0/0/6.snapshot"), []byte("staged")); err != nil {
			t.Fatal(err)
		}
	}
	release, err := journal.ClaimStaging(ctx, m, "live", "state repartition", "ckpt test")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	got := findingsOf(t, m, doctor.CodeLeftoverStaging)
	if len(got) != 1 || got[0].Severity != doctor.Info || bytes.ContainsRune([]byte(got[0].Message), 0x1b) ||
		bytes.Contains([]byte(got[0].Message), []byte("live")) || len(got[0].Commands) != 1 {
		t.Fatalf("findings = %+v, want one escaped %s, without the live run", got, doctor.CodeLeftoverStaging)
	}
	checkLockGolden(t, m, "leftover-staging", got)
}
