package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func openLocal(ctx context.Context, uri string) (storage.Store, error) {
	return storage.Open(ctx, uri, storage.Options{})
}

func copyFixture(t *testing.T, fx string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ck")
	if err := os.CopyFS(dir, os.DirFS("../../../testdata/spark-state/"+fx+"/checkpoint")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs `ckpt migrate` with args through cobra and returns its -o json document.
func run(t *testing.T, args ...string) (map[string]any, string, error) {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	cmd := NewCmd(&cli.Env{IO: ios, Version: "test", Now: time.Now}, nil)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	doc := map[string]any{}
	s := out.String()
	if i := strings.LastIndex(s, "}"); i >= 0 && strings.HasPrefix(strings.TrimSpace(s), "{") {
		if jerr := json.Unmarshal([]byte(s[:i+1]), &doc); jerr != nil {
			t.Fatalf("%v\n%s", jerr, s)
		}
	}
	return doc, s, err
}

// TestMigrateExecuteAndUndo: the dry run changes nothing and shows the plan; --execute refuses
// a query that looks alive, then applies the plan (verified: batch 6 next on Spark 3.5), and
// `ckpt repair undo` of its journal restores every byte.
func TestMigrateExecuteAndUndo(t *testing.T) {
	dir := copyFixture(t, "4.2.0/agg-rocksdb-changelog-v2")
	st, _ := openLocal(context.Background(), dir)
	before := journaltest.Snapshot(t, st)
	_, text, err := run(t, dir, "--to-spark", "3.5.7")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"commits/4 is v2", "UnsupportedLogVersion", "write state/0/0/6.zip", "move state/0/1/5_6ff0e389-7cc8-4a23-96b2-29ccf20b8635.changelog into the backup", "resumes at batch 6"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q:\n%s", want, text)
		}
	}
	if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, st)); d != "" {
		t.Fatalf("the dry run changed the checkpoint:\n%s", d)
	}
	if _, _, err := run(t, dir, "--to-spark", "3.5", "--execute", "--yes", "-o", "json"); err == nil || !strings.Contains(err.Error(), "alive") {
		t.Fatalf("executed on a live-looking query: %v", err)
	}
	doc, text, err := run(t, dir, "--to-spark", "3.5", "--execute", "--yes", "--force", "-o", "json")
	if err != nil || doc["executed"] != true {
		t.Fatalf("%v\n%s", err, text)
	}
	if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, st)); !strings.Contains(d, "extra commits/5") || !strings.Contains(d, "missing state/0/0/5_4cea6b3e") {
		t.Errorf("after --execute:\n%s", d)
	}
	// Again: nothing to do.
	_, text, err = run(t, dir, "--to-spark", "3.5")
	if err != nil || !strings.Contains(text, "Nothing to rewrite") {
		t.Errorf("again: %v\n%s", err, text)
	}
	loc := doc["journal"].(string)
	if _, err := journal.Undo(context.Background(), st, journal.Location{Store: st, Dir: strings.TrimPrefix(loc, dir+"/")}, journal.Options{}); err != nil {
		t.Fatal(err)
	}
	if d := journaltest.DiffSnapshots(before, journaltest.Snapshot(t, st)); d != "" {
		t.Errorf("after undo:\n%s", d)
	}
}

// TestMigrateRefusedExitsOne: a refusal prints the reason and is an error (exit 1), not a
// usage error.
func TestMigrateRefusedExitsOne(t *testing.T) {
	dir := copyFixture(t, "4.2.0/tws")
	_, text, err := run(t, dir, "--to-spark", "3.5")
	var ue *exitcode.Error
	if err == nil || (errors.As(err, &ue) && ue.Code == exitcode.Usage) {
		t.Fatalf("refusal: %v", err)
	}
	if !strings.Contains(text, "Spark 3.5 has no transformWithState") {
		t.Errorf("the refusal does not say why:\n%s", text)
	}
}

// TestMigrateUsage: the flag mistakes are usage errors (exit 2) before anything is read.
func TestMigrateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"ck"},
		{"ck", "--to-spark", "3.4"},
		{"ck", "--to-spark", "4.2", "--mode", "fast"},
		{"ck", "--to-spark", "3.5", "--yes"},
	} {
		_, _, err := run(t, args...)
		var ue *exitcode.Error
		if err == nil || !errors.As(err, &ue) || ue.Code != exitcode.Usage {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
